// The model every room of the agent works on: the policy network on its
// device, built for one PolicySpec, with its optimizer, its flat weights, the
// two random generators (sampling: actions; shuffling: PPO minibatches) and the
// training progress; plus the masked forward pass and the observation batches
// the rooms share.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agents/agent.h"
#include "agents/config.h"
#include "agents/policy.h"
#include "agents/weights.h"
#include "envs/env.h"

namespace goenv::agents {

// One observation's dynamic arrays (node_state (N, S), action_mask (N, A), globals (G,)), not owned.
struct ObservationView {
  const float* node_state = nullptr;
  const std::int8_t* action_mask = nullptr;
  const float* globals = nullptr;
};
// Checks the observation's sizes against the graph's dims (Model::dims_of).
ObservationView view_of(const DynamicObservation& observation, const ObservationDims& dims, int num_nodes);
// Equal values (not bits) in every array of two observations of one graph.
bool same_observation(const ObservationView& a, const ObservationView& b, const ObservationDims& dims, int num_nodes);

// Observations of one graph on the device: node_state (B, N, S), mask (B, N, A) bool, globals (B, G).
struct Batch {
  torch::Tensor node_state, mask, globals;
  Batch select(const torch::Tensor& index) const {
    return {node_state.index_select(0, index), mask.index_select(0, index), globals.index_select(0, index)};
  }
};
// Copies the observations into one batch.
Batch stack(const std::vector<ObservationView>& observations, const ObservationDims& dims, int num_nodes,
            const torch::Device& device);
// A batch over B row-major observations laid out one after another (no copy on the CPU but the mask's).
Batch batch_of(std::int64_t batch, std::int64_t num_nodes, const float* node_state, std::int64_t state_dim,
               const std::int8_t* action_mask, std::int64_t mask_width, const float* globals, std::int64_t global_dim,
               const torch::Device& device);

// Sets torch's intra-op threads for one call, then restores the process-wide
// setting (other torch users keep theirs); 0 leaves torch's setting. A count
// comes from a checkpoint's config, so it is capped by the machine's hardware
// threads: a file never starts more threads than there are cores.
class ThreadScope {
 public:
  explicit ThreadScope(int threads);
  ~ThreadScope();
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int previous_ = 0;
};

// Identifies an env's graph and decisions (its id, heads, static observation
// and colocation groups): the key of the graph's kept teacher.
std::uint64_t env_key(const Env& env);

// A teacher kept by the agent (agents/imitation.h), with its decisions as
// targets per decision unit: per head (1, D) int64 on the device (D =
// placement units or nodes). Targets are empty until the graph's tensors exist
// (after a checkpoint is loaded).
struct TeacherEntry {
  Teacher teacher;
  std::vector<torch::Tensor> targets;
  // False for a teacher read from a checkpoint until imitation::verify_teacher
  // has re-simulated it on its graph: a file's runtime is never taken as a result.
  bool verified = true;
};

struct Model {
  explicit Model(AgentConfig config);

  AgentConfig config;
  bool ready = false;  // the policy is built
  PolicySpec spec;
  torch::Device device = torch::kCPU;
  Policy policy;
  std::unique_ptr<torch::optim::Adam> optimizer;
  FlatWeights weights;
  torch::Generator sampling, shuffling;
  std::int64_t updates = 0, steps_trained = 0;  // over the agent's life
  std::int64_t schedule_origin = 0;  // steps_trained when the last imitation ended: the schedules start there
  std::map<std::uint64_t, TeacherEntry> teachers;  // by env_key(); kept by imitation

  // The graph's kept teacher with its targets, or null.
  const TeacherEntry* teacher_of(std::uint64_t key) const;

  // Builds the policy (and its optimizer and flat weights) for `spec`.
  void build(const PolicySpec& spec);
  std::int64_t num_parameters() const;
  void check_spec(const PolicySpec& seen, const std::string& what) const;
  // Refuses node-mode envs and envs of another spec; builds the policy on first use.
  void check_env(const Env& env);

  // An env's static observation, decision units and cluster as tensors on the device.
  GraphTensors tensors_of(const Env& env) const;
  // The widths of a graph's observation arrays (the device count matters with device_head "pairs").
  ObservationDims dims_of(const GraphTensors& graph) const { return spec.dims(static_cast<int>(graph.num_devices)); }
  // Masked logits per head and values for a batch; placement logits are per
  // decision unit (colocation groups as one), see unit_logits.
  std::pair<std::vector<torch::Tensor>, torch::Tensor> run(const GraphTensors& graph, const Batch& batch);
  // Logits of zeros masked as run() masks the policy's: every allowed choice equally likely,
  // with no forward pass (the "uniform" proposals of policy-guided search).
  std::vector<torch::Tensor> uniform_logits(const GraphTensors& graph, const Batch& batch) const;
  // Per head (B, N, C) logits masked by the batch's action mask (placement: per decision unit).
  std::vector<torch::Tensor> masked(const GraphTensors& graph, std::vector<torch::Tensor> logits,
                                    const Batch& batch) const;
  // A head's actions as per-node values on the CPU (placement: units expanded).
  torch::Tensor env_actions(const GraphTensors& graph, std::size_t head, const torch::Tensor& actions) const;
  // The same for one decision ((1, U) or (U,) values), written into `out` (N values) by a loop:
  // a search simulates a decision per call and reuses the buffer.
  void env_actions_into(const GraphTensors& graph, std::size_t head, const torch::Tensor& actions,
                        std::vector<std::int64_t>& out) const;
  // Greedy or sampled per-node actions of the first observation's logits, per head.
  std::vector<std::vector<std::int64_t>> decide(const GraphTensors& graph, const std::vector<torch::Tensor>& logits,
                                                bool deterministic);
};

}  // namespace goenv::agents
