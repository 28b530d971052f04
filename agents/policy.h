// The networks: a GraphSAGE encoder, the GO policy (Zhou et al., NeurIPS 2020,
// §3: GraphSAGE -> segment-recurrent attention -> FiLM -> per-head outputs) and
// a plain PPO policy (GraphSAGE -> per-node MLP heads), plus the masked
// per-node categorical distribution both use.
//
// Shapes: B observations of one graph with N nodes, H = hidden width.
// node_state (B, N, S), globals (B, G); a head's logits (B, N, choices).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "agents/config.h"

namespace goenv::agents {

// What a masked choice's logit becomes: finite, so that p * log p stays 0, and
// far enough below any real logit that exp() underflows to exactly 0.
inline constexpr float kMaskedLogit = -1e9f;

// The static part of a graph's observation, as tensors on the policy's device.
struct GraphTensors {
  std::int64_t num_nodes = 0, num_edges = 0;
  torch::Tensor node_features;       // (N, F) float
  torch::Tensor source, destination;  // (E,) int64
  torch::Tensor inverse_in_degree;   // (1, N, 1): 1 / max(1, in-degree)
  torch::Tensor inverse_out_degree;  // (1, N, 1)
  torch::Tensor order;               // (N,) int64: node ids in topological order
  torch::Tensor position;            // (N,) int64: each node's index in `order`
  // Placement decision units: a colocation group is one unit (its nodes must
  // share a device), every other node its own. Undefined when every unit is one node.
  std::int64_t num_units = 0;        // U
  torch::Tensor unit;                // (N,) int64: each node's unit
  torch::Tensor unit_size;           // (1, U, 1) float: nodes per unit
  // The cluster: D devices and their static features (D, Fd) float
  // (envs/observation.h device_feature_names); undefined when not known.
  std::int64_t num_devices = 0;
  torch::Tensor device_features;
};

// Sets the cluster part of `graph`: `features` (num_devices, Fd) row-major.
void set_devices(GraphTensors& graph, int num_devices, const float* features, int feature_dim,
                 const torch::Device& device);

// Kahn's algorithm, ties by node id. InvalidArgument on an out-of-range edge or a cycle.
std::vector<std::int64_t> topological_order(int num_nodes, int num_edges, const std::int64_t* edge_index);
// `colocation` (N,) group ids, negative = none, may be null (no groups).
GraphTensors graph_tensors(int num_nodes, int node_feature_dim, const float* node_features, int num_edges,
                           const std::int64_t* edge_index, const torch::Device& device,
                           const std::int32_t* colocation = nullptr);

struct PolicyOutput {
  std::vector<torch::Tensor> logits;  // per head (B, N, choices), unmasked
  torch::Tensor value;                // (B,)
};

class PolicyImpl : public torch::nn::Module {
 public:
  virtual PolicyOutput forward(const GraphTensors& graph, const torch::Tensor& node_state,
                               const torch::Tensor& globals) = 0;
};
using Policy = std::shared_ptr<PolicyImpl>;

// GraphSAGE (Hamilton et al., 2017) with mean aggregation over predecessors
// and successors separately: h' = LayerNorm(h + ReLU(W [h ; mean_pred(h) ; mean_succ(h)])).
class GraphSageImpl : public torch::nn::Module {
 public:
  GraphSageImpl(int input_dim, int hidden, int layers);
  torch::Tensor forward(const GraphTensors& graph, const torch::Tensor& x);  // (B, N, in) -> (B, N, H)

 private:
  torch::nn::Linear input_{nullptr};
  std::vector<torch::nn::Linear> combine_;
  std::vector<torch::nn::LayerNorm> norm_;
};
TORCH_MODULE(GraphSage);

// One Transformer-XL-style layer over segments: each segment's queries attend
// over [memory ; segment], memory being the previous segment's input to this
// layer, detached (Dai et al., 2019), then a feed-forward block.
class SegmentAttentionImpl : public torch::nn::Module {
 public:
  SegmentAttentionImpl(int hidden, int heads);
  // segments, memory (M, L, H), M = B x S segments of L nodes each; the last segment
  // holds `last_real` real nodes (the rest is padding). A segment attends to the
  // previous segment's nodes (its memory; the first has none) and its own real nodes.
  torch::Tensor forward(const torch::Tensor& segments, const torch::Tensor& memory, std::int64_t num_segments,
                        std::int64_t last_real);

 private:
  int heads_;
  torch::nn::Linear query_{nullptr}, key_value_{nullptr}, output_{nullptr}, feed_forward1_{nullptr},
      feed_forward2_{nullptr};
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
};
TORCH_MODULE(SegmentAttention);

// (1, N, H): sinusoidal encodings of positions 0..N-1 relative to N (no parameters).
torch::Tensor positional_encoding(std::int64_t n, std::int64_t h, const torch::TensorOptions& options);

// The placement head of device_head "pairs": a logit per (node, device) pair,
// so one set of weights serves any cluster (GiPH, Placeto and DOPPLER score
// candidate devices, not device ids). A device is its static features plus the
// mean embedding and the share of the nodes placed on it now; a pair adds
// whether the node is on that device and which share of its predecessors and
// successors are. logit = <q(node), k(device)> / sqrt(H) + pair terms: no
// (N, D, H) tensor, and relabelling the devices permutes the logits.
class PairHeadImpl : public torch::nn::Module {
 public:
  PairHeadImpl(int hidden, int device_feature_dim);
  // nodes (B, N, H), current (B, N, D) one-hot devices -> logits (B, N, D).
  torch::Tensor forward(const GraphTensors& graph, const torch::Tensor& nodes, const torch::Tensor& current);

 private:
  int hidden_;
  torch::nn::Linear device_in_{nullptr}, device_mix_{nullptr}, query_{nullptr}, key_{nullptr}, stay_{nullptr},
      pair_{nullptr};
};
TORCH_MODULE(PairHead);

class GoPolicyImpl : public PolicyImpl {
 public:
  GoPolicyImpl(const AgentConfig& config, const PolicySpec& spec);
  PolicyOutput forward(const GraphTensors& graph, const torch::Tensor& node_state, const torch::Tensor& globals) override;

 private:
  int hidden_, segment_length_;
  bool pairs_ = false;  // device_head "pairs": node_state starts with D one-hot device columns
  GraphSage encoder_{nullptr};
  torch::nn::Linear condition_{nullptr}, film_{nullptr}, value1_{nullptr}, value2_{nullptr};
  std::vector<SegmentAttention> attention_;
  std::vector<torch::nn::Linear> heads_;  // per head; null for the placement head of "pairs"
  PairHead pair_head_{nullptr};
};

class PpoPolicyImpl : public PolicyImpl {
 public:
  PpoPolicyImpl(const AgentConfig& config, const PolicySpec& spec);
  PolicyOutput forward(const GraphTensors& graph, const torch::Tensor& node_state, const torch::Tensor& globals) override;

 private:
  GraphSage encoder_{nullptr};
  std::vector<torch::nn::Sequential> heads_;
  torch::nn::Sequential value_{nullptr};
};

// Seeds torch's global generator with config.seed and builds the config's policy.
Policy make_policy(const AgentConfig& config, const PolicySpec& spec);
// The number of values in make_policy(config, spec)'s parameters, computed without building
// it: a checkpoint's tensors are checked against it before any memory is committed.
std::uint64_t policy_parameters(const AgentConfig& config, const PolicySpec& spec);

// Masked distribution over whole-graph actions. `mask` (B, N, choices) bool or
// int8, nonzero = allowed.
torch::Tensor mask_logits(const torch::Tensor& logits, const torch::Tensor& mask);
// Placement logits per decision unit (B, U, choices): the mean of its nodes'
// logits, masked where any of its nodes forbids the choice. Sampling units, not
// nodes, makes every placement honour colocation (GO places colocated ops as
// one, like TensorFlow's placer). Plain mask_logits when the graph has no groups.
torch::Tensor unit_logits(const GraphTensors& graph, const torch::Tensor& logits, const torch::Tensor& mask);
// Per-unit actions (B, U) -> per-node actions (B, N); unchanged without groups.
torch::Tensor node_actions(const GraphTensors& graph, const torch::Tensor& unit_actions);
// (B, N) int64 per head: argmax when deterministic, else Gumbel-max sampling
// with noise drawn on the CPU from `generator` (same draws on any device).
torch::Tensor sample_actions(const torch::Tensor& masked_logits, bool deterministic, torch::Generator& generator);
// Sum over nodes and heads of log p(action), in float64 (sums over 10^5 nodes): (B,).
torch::Tensor log_prob(const std::vector<torch::Tensor>& masked_logits, const std::vector<torch::Tensor>& actions);
// Sum over nodes and heads of the per-node entropy: (B,).
torch::Tensor entropy(const std::vector<torch::Tensor>& masked_logits);

}  // namespace goenv::agents
