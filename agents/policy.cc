#include "agents/policy.h"

#include <algorithm>
#include <deque>
#include <string>
#include <unordered_map>

#include "core/error.h"
#include "envs/observation.h"

namespace goenv::agents {

namespace nn = torch::nn;
using torch::indexing::Slice;

std::vector<std::int64_t> topological_order(int num_nodes, int num_edges, const std::int64_t* edge_index) {
  std::vector<std::int32_t> in_degree(num_nodes, 0), offsets(num_nodes + 1, 0), successors(num_edges);
  const std::int64_t* source = edge_index;
  const std::int64_t* destination = edge_index + num_edges;
  for (int e = 0; e < num_edges; ++e) {
    GOENV_CHECK(source[e] >= 0 && source[e] < num_nodes && destination[e] >= 0 && destination[e] < num_nodes,
                InvalidArgument,
                "edge_index[:, " << e << "] = (" << source[e] << ", " << destination[e] << ") is outside [0, "
                                 << num_nodes << ")");
    ++offsets[source[e] + 1];
    ++in_degree[destination[e]];
  }
  for (int v = 0; v < num_nodes; ++v) offsets[v + 1] += offsets[v];
  std::vector<std::int32_t> fill(offsets.begin(), offsets.end() - 1);
  for (int e = 0; e < num_edges; ++e) successors[fill[source[e]]++] = static_cast<std::int32_t>(destination[e]);
  std::vector<std::int64_t> order;
  order.reserve(num_nodes);
  std::deque<std::int32_t> ready;
  for (int v = 0; v < num_nodes; ++v)
    if (in_degree[v] == 0) ready.push_back(v);
  while (!ready.empty()) {
    const std::int32_t v = ready.front();
    ready.pop_front();
    order.push_back(v);
    for (int i = offsets[v]; i < offsets[v + 1]; ++i)
      if (--in_degree[successors[i]] == 0) ready.push_back(successors[i]);
  }
  GOENV_CHECK(static_cast<int>(order.size()) == num_nodes, InvalidArgument,
              "edge_index has a cycle: only " << order.size() << " of " << num_nodes << " nodes can be ordered");
  return order;
}

GraphTensors graph_tensors(int num_nodes, int node_feature_dim, const float* node_features, int num_edges,
                           const std::int64_t* edge_index, const torch::Device& device,
                           const std::int32_t* colocation) {
  GOENV_CHECK(num_nodes > 0, InvalidArgument, "the graph has no nodes");
  std::vector<std::int64_t> order = topological_order(num_nodes, num_edges, edge_index);
  std::vector<std::int64_t> position(num_nodes);
  for (int i = 0; i < num_nodes; ++i) position[order[i]] = i;
  std::vector<float> inverse_in(num_nodes, 0.f), inverse_out(num_nodes, 0.f);
  for (int e = 0; e < num_edges; ++e) {
    inverse_out[edge_index[e]] += 1.f;
    inverse_in[edge_index[num_edges + e]] += 1.f;
  }
  for (int v = 0; v < num_nodes; ++v) {
    inverse_in[v] = 1.f / std::max(1.f, inverse_in[v]);
    inverse_out[v] = 1.f / std::max(1.f, inverse_out[v]);
  }
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  GraphTensors g;
  g.num_nodes = num_nodes;
  g.num_edges = num_edges;
  g.node_features =
      torch::from_blob(const_cast<float*>(node_features), {num_nodes, node_feature_dim}, f32).to(device, false, true);
  auto edges = torch::from_blob(const_cast<std::int64_t*>(edge_index), {2, num_edges}, i64).to(device, false, true);
  g.source = edges[0].contiguous();
  g.destination = edges[1].contiguous();
  g.inverse_in_degree = torch::from_blob(inverse_in.data(), {1, num_nodes, 1}, f32).to(device, false, true);
  g.inverse_out_degree = torch::from_blob(inverse_out.data(), {1, num_nodes, 1}, f32).to(device, false, true);
  g.order = torch::from_blob(order.data(), {num_nodes}, i64).to(device, false, true);
  g.position = torch::from_blob(position.data(), {num_nodes}, i64).to(device, false, true);
  g.num_units = num_nodes;
  if (colocation != nullptr) {
    std::vector<std::int64_t> unit(num_nodes);
    std::unordered_map<std::int32_t, std::int64_t> unit_of_group;
    std::int64_t units = 0;
    for (int v = 0; v < num_nodes; ++v) {
      if (colocation[v] < 0) {
        unit[v] = units++;
        continue;
      }
      const auto [it, fresh] = unit_of_group.try_emplace(colocation[v], units);
      units += fresh ? 1 : 0;
      unit[v] = it->second;
    }
    if (units < num_nodes) {
      std::vector<float> size(units, 0.f);
      for (auto u : unit) size[u] += 1.f;
      g.num_units = units;
      g.unit = torch::from_blob(unit.data(), {num_nodes}, i64).to(device, false, true);
      g.unit_size = torch::from_blob(size.data(), {1, units, 1}, f32).to(device, false, true);
    }
  }
  return g;
}

namespace {

// Mean over the `from` ends of the edges arriving at each node: (B, N, H).
torch::Tensor mean_over_edges(const torch::Tensor& h, const torch::Tensor& from, const torch::Tensor& to,
                              const torch::Tensor& inverse_degree) {
  return torch::zeros_like(h).index_add(1, to, h.index_select(1, from)) * inverse_degree;
}

// Output layers start small, so the first policy is close to uniform.
void shrink(nn::Linear& layer, double scale) {
  torch::NoGradGuard no_grad;
  layer->weight.mul_(scale);
  layer->bias.zero_();
}

// Parameter counts, each beside the constructor it mirrors (policy_parameters sums them; a
// test checks the sum against every built policy's).
std::uint64_t linear(std::uint64_t in, std::uint64_t out, bool bias = true) { return in * out + (bias ? out : 0); }
std::uint64_t layer_norm(std::uint64_t width) { return 2 * width; }

std::uint64_t graph_sage_parameters(std::uint64_t input_dim, std::uint64_t hidden, std::uint64_t layers) {
  return linear(input_dim, hidden) + layers * (linear(3 * hidden, hidden) + layer_norm(hidden));
}

}  // namespace

GraphSageImpl::GraphSageImpl(int input_dim, int hidden, int layers) {
  input_ = register_module("input", nn::Linear(input_dim, hidden));
  for (int l = 0; l < layers; ++l) {
    combine_.push_back(register_module("combine" + std::to_string(l), nn::Linear(3 * hidden, hidden)));
    norm_.push_back(register_module("norm" + std::to_string(l), nn::LayerNorm(nn::LayerNormOptions({hidden}))));
  }
}

torch::Tensor GraphSageImpl::forward(const GraphTensors& g, const torch::Tensor& x) {
  torch::Tensor h = torch::relu(input_(x));
  for (std::size_t l = 0; l < combine_.size(); ++l) {
    const torch::Tensor predecessors = mean_over_edges(h, g.source, g.destination, g.inverse_in_degree);
    const torch::Tensor successors = mean_over_edges(h, g.destination, g.source, g.inverse_out_degree);
    h = norm_[l](h + torch::relu(combine_[l](torch::cat({h, predecessors, successors}, -1))));
  }
  return h;
}

SegmentAttentionImpl::SegmentAttentionImpl(int hidden, int heads) : heads_(heads) {
  query_ = register_module("query", nn::Linear(hidden, hidden));
  key_value_ = register_module("key_value", nn::Linear(hidden, 2 * hidden));
  output_ = register_module("output", nn::Linear(hidden, hidden));
  feed_forward1_ = register_module("feed_forward1", nn::Linear(hidden, 2 * hidden));
  feed_forward2_ = register_module("feed_forward2", nn::Linear(2 * hidden, hidden));
  norm1_ = register_module("norm1", nn::LayerNorm(nn::LayerNormOptions({hidden})));
  norm2_ = register_module("norm2", nn::LayerNorm(nn::LayerNormOptions({hidden})));
}

torch::Tensor SegmentAttentionImpl::forward(const torch::Tensor& segments, const torch::Tensor& memory,
                                            std::int64_t num_segments, std::int64_t last_real) {
  const std::int64_t m = segments.size(0), length = segments.size(1), hidden = segments.size(2);
  const std::int64_t head_dim = hidden / heads_, b = m / num_segments, s = num_segments;
  const torch::Tensor context = torch::cat({memory, segments}, 1);  // (M, 2L, H)
  const torch::Tensor q = query_(segments).view({b, s, length, heads_, head_dim}).transpose(2, 3);
  const torch::Tensor kv = key_value_(context).view({b, s, 2 * length, 2, heads_, head_dim});
  const torch::Tensor k = kv.select(3, 0).transpose(2, 3);  // (B, S, heads, 2L, head_dim)
  const torch::Tensor v = kv.select(3, 1).transpose(2, 3);
  // Keys that are never attended to are left out instead of masked (the same
  // result without computing them): the first segment's (empty) memory and the
  // last segment's padding; a quarter of the work on a graph of two segments.
  auto attend = [&](std::int64_t first, std::int64_t count, std::int64_t key_from, std::int64_t key_to) {
    const auto part = [&](const torch::Tensor& t, std::int64_t from, std::int64_t to) {
      return t.narrow(1, first, count).narrow(3, from, to - from).reshape({b * count, heads_, to - from, head_dim});
    };
    return at::scaled_dot_product_attention(part(q, 0, length), part(k, key_from, key_to), part(v, key_from, key_to))
        .view({b, count, heads_, length, head_dim});
  };
  const std::int64_t last_keys = length + last_real;  // the last segment's: its memory, its real nodes
  std::vector<torch::Tensor> parts{attend(0, 1, length, s == 1 ? last_keys : 2 * length)};  // no memory
  if (s > 2) parts.push_back(attend(1, s - 2, 0, 2 * length));
  if (s > 1) parts.push_back(attend(s - 1, 1, 0, last_keys));
  const torch::Tensor attended =
      (parts.size() == 1 ? parts[0] : torch::cat(parts, 1)).transpose(2, 3).reshape({m, length, hidden});
  torch::Tensor z = norm1_(segments + output_(attended));
  return norm2_(z + feed_forward2_(torch::relu(feed_forward1_(z))));
}

void set_devices(GraphTensors& g, int num_devices, const float* features, int feature_dim,
                 const torch::Device& device) {
  g.num_devices = num_devices;
  g.device_features = torch::from_blob(const_cast<float*>(features), {num_devices, feature_dim},
                                       torch::TensorOptions().dtype(torch::kFloat32))
                          .to(device, false, true);
}

namespace {

std::uint64_t segment_attention_parameters(std::uint64_t h) {
  return linear(h, h) + linear(h, 2 * h) + linear(h, h) + linear(h, 2 * h) + linear(2 * h, h) + 2 * layer_norm(h);
}

std::uint64_t pair_head_parameters(std::uint64_t h, std::uint64_t device_feature_dim) {
  return linear(device_feature_dim, h) + linear(2 * h + 1, h) + 2 * linear(h, h) + linear(h, 1) + linear(3, 1, false);
}

}  // namespace

PairHeadImpl::PairHeadImpl(int hidden, int device_feature_dim) : hidden_(hidden) {
  device_in_ = register_module("device_in", nn::Linear(device_feature_dim, hidden));
  device_mix_ = register_module("device_mix", nn::Linear(2 * hidden + 1, hidden));
  query_ = register_module("query", nn::Linear(hidden, hidden));
  key_ = register_module("key", nn::Linear(hidden, hidden));
  stay_ = register_module("stay", nn::Linear(hidden, 1));
  pair_ = register_module("pair", nn::Linear(nn::LinearOptions(3, 1).bias(false)));
  shrink(query_, 0.01);  // the first policy is close to uniform, as the absolute head's
  shrink(stay_, 0.01);
  {
    torch::NoGradGuard no_grad;
    pair_->weight.zero_();
  }
}

torch::Tensor PairHeadImpl::forward(const GraphTensors& g, const torch::Tensor& nodes, const torch::Tensor& current) {
  const std::int64_t n = nodes.size(1);
  // Devices: static features, the mean embedding of their nodes, their share of the nodes.
  const torch::Tensor count = current.sum(1).unsqueeze(-1);                                      // (B, D, 1)
  const torch::Tensor pooled = current.transpose(1, 2).matmul(nodes) / count.clamp_min(1.0);    // (B, D, H)
  const torch::Tensor features = torch::relu(device_in_(g.device_features)).unsqueeze(0).expand_as(pooled);
  const torch::Tensor devices =
      torch::relu(device_mix_(torch::cat({features, pooled, count / static_cast<double>(n)}, -1)));  // (B, D, H)
  const torch::Tensor score = query_(nodes).matmul(key_(devices).transpose(1, 2)) / std::sqrt(hidden_);  // (B, N, D)
  // Pairs: on it now; the share of the node's predecessors / successors on it.
  const torch::Tensor predecessors = mean_over_edges(current, g.source, g.destination, g.inverse_in_degree);
  const torch::Tensor successors = mean_over_edges(current, g.destination, g.source, g.inverse_out_degree);
  const torch::Tensor pair = pair_(torch::stack({current, predecessors, successors}, -1)).squeeze(-1);
  return score + stay_(nodes) * current + pair;
}

GoPolicyImpl::GoPolicyImpl(const AgentConfig& config, const PolicySpec& spec)
    : hidden_(config.hidden), segment_length_(config.segment_length), pairs_(spec.any_devices()) {
  const int h = config.hidden;
  encoder_ = register_module("encoder", GraphSage(spec.node_feature_dim + spec.node_state_dim, h, config.sage_layers));
  condition_ = register_module("condition", nn::Linear(h + spec.global_dim, h));
  film_ = register_module("film", nn::Linear(h, std::max(1, 2 * h * config.attention_layers)));
  {
    torch::NoGradGuard no_grad;  // FiLM starts as the identity
    film_->weight.zero_();
    film_->bias.zero_();
  }
  for (int l = 0; l < config.attention_layers; ++l)
    attention_.push_back(register_module("attention" + std::to_string(l), SegmentAttention(h, config.attention_heads)));
  for (std::size_t i = 0; i < spec.heads.size(); ++i) {
    if (pairs_ && spec.heads[i] == Head::kPlacement) {
      heads_.push_back(nullptr);
      pair_head_ = register_module("pair_head", PairHead(h, static_cast<int>(device_feature_names().size())));
      continue;
    }
    heads_.push_back(register_module(std::string("head_") + head_name(spec.heads[i]), nn::Linear(h, spec.choices[i])));
    shrink(heads_.back(), 0.01);
  }
  value1_ = register_module("value1", nn::Linear(h, h));
  value2_ = register_module("value2", nn::Linear(h, 1));
  shrink(value2_, 0.1);
}

torch::Tensor positional_encoding(std::int64_t n, std::int64_t h, const torch::TensorOptions& options) {
  // Channel pairs (sin, cos) of pi * position / n * 2^(10 i / pairs): periods from
  // twice the graph down to about a thousandth of it, the same for any graph size.
  const std::int64_t pairs = h / 2;
  const torch::Tensor where = torch::arange(n, options).div(static_cast<double>(std::max<std::int64_t>(n, 1))).unsqueeze(1);
  const torch::Tensor frequency =
      torch::pow(2.0, torch::arange(pairs, options).mul(10.0 / static_cast<double>(std::max<std::int64_t>(pairs, 1)))).mul(M_PI);
  const torch::Tensor angle = where * frequency.unsqueeze(0);  // (N, pairs)
  torch::Tensor out = torch::cat({torch::sin(angle), torch::cos(angle)}, 1);
  if (out.size(1) < h) out = torch::cat({out, out.new_zeros({n, h - out.size(1)})}, 1);
  return out.unsqueeze(0);  // (1, N, H)
}

PolicyOutput GoPolicyImpl::forward(const GraphTensors& g, const torch::Tensor& node_state, const torch::Tensor& globals) {
  const std::int64_t b = node_state.size(0), n = g.num_nodes, h = hidden_;
  // "pairs": the one-hot device columns are pair features, not node features.
  GOENV_CHECK(!pairs_ || (g.device_features.defined() && g.num_devices >= 1 &&
                          g.device_features.size(0) == g.num_devices && node_state.size(-1) > g.num_devices),
              InvalidArgument, "the pairs placement head needs the cluster's device features (a version-2 "
                               "observation's device_features, or an env)");
  const std::int64_t d = pairs_ ? g.num_devices : 0;
  const torch::Tensor current = pairs_ ? node_state.narrow(-1, 0, d) : torch::Tensor();
  const torch::Tensor state = pairs_ ? node_state.narrow(-1, d, node_state.size(-1) - d) : node_state;
  const torch::Tensor x = torch::cat({g.node_features.unsqueeze(0).expand({b, n, g.node_features.size(1)}), state}, -1);
  const torch::Tensor nodes = encoder_(g, x);  // (B, N, H), node-id order
  const torch::Tensor graph_embedding = torch::relu(condition_(torch::cat({nodes.mean(1), globals}, -1)));  // (B, H)

  // Topological order, plus a sinusoidal encoding of each node's relative
  // position in it (Vaswani et al., 2017; GO's Transformer-XL has relative
  // ones): without it, nodes with the same neighbourhood (the layers of an
  // RNN) look alike and no contiguous split of them can be expressed.
  torch::Tensor z = nodes.index_select(1, g.order) + positional_encoding(n, h, nodes.options());
  if (!attention_.empty()) {
    const std::int64_t length = std::min<std::int64_t>(segment_length_, n);
    const std::int64_t segments = (n + length - 1) / length, padded = segments * length;
    if (padded > n) z = torch::cat({z, z.new_zeros({b, padded - n, h})}, 1);
    const torch::Tensor film = film_(graph_embedding).view({b, static_cast<std::int64_t>(attention_.size()), 2, 1, 1, h});
    z = z.view({b, segments, length, h});
    for (std::size_t l = 0; l < attention_.size(); ++l) {
      const torch::Tensor memory =
          torch::cat({z.new_zeros({b, 1, length, h}), z.narrow(1, 0, segments - 1)}, 1).detach();
      z = attention_[l](z.reshape({b * segments, length, h}), memory.reshape({b * segments, length, h}), segments,
                        n - (segments - 1) * length)
              .view({b, segments, length, h});
      const torch::Tensor gamma = film.select(1, static_cast<std::int64_t>(l)).select(1, 0);  // (B, 1, 1, H)
      const torch::Tensor beta = film.select(1, static_cast<std::int64_t>(l)).select(1, 1);
      z = z * (1 + gamma) + beta;
    }
    z = z.view({b, padded, h}).narrow(1, 0, n);
  }
  const torch::Tensor out = z.index_select(1, g.position) + nodes;  // back to node-id order
  PolicyOutput result;
  for (auto& head : heads_) result.logits.push_back(head.is_empty() ? pair_head_(g, out, current) : head(out));
  result.value = value2_(torch::relu(value1_(graph_embedding))).squeeze(-1);
  return result;
}

PpoPolicyImpl::PpoPolicyImpl(const AgentConfig& config, const PolicySpec& spec) {
  const int h = config.hidden;
  encoder_ = register_module("encoder", GraphSage(spec.node_feature_dim + spec.node_state_dim, h, config.sage_layers));
  for (std::size_t i = 0; i < spec.heads.size(); ++i) {
    nn::Linear last(h, spec.choices[i]);
    shrink(last, 0.01);
    heads_.push_back(register_module(std::string("head_") + head_name(spec.heads[i]),
                                     nn::Sequential(nn::Linear(h, h), nn::ReLU(), last)));
  }
  nn::Linear last(h, 1);
  shrink(last, 0.1);
  value_ = register_module("value", nn::Sequential(nn::Linear(h + spec.global_dim, h), nn::ReLU(), last));
}

PolicyOutput PpoPolicyImpl::forward(const GraphTensors& g, const torch::Tensor& node_state, const torch::Tensor& globals) {
  const std::int64_t b = node_state.size(0), n = g.num_nodes;
  const torch::Tensor x = torch::cat({g.node_features.unsqueeze(0).expand({b, n, g.node_features.size(1)}), node_state}, -1);
  const torch::Tensor nodes = encoder_(g, x);
  PolicyOutput result;
  for (auto& head : heads_) result.logits.push_back(head->forward(nodes));
  result.value = value_->forward(torch::cat({nodes.mean(1), globals}, -1)).squeeze(-1);
  return result;
}

std::uint64_t policy_parameters(const AgentConfig& config, const PolicySpec& spec) {
  const std::uint64_t h = static_cast<std::uint64_t>(config.hidden);
  const std::uint64_t global = static_cast<std::uint64_t>(spec.global_dim);
  std::uint64_t total = graph_sage_parameters(
      static_cast<std::uint64_t>(spec.node_feature_dim + spec.node_state_dim), h,
      static_cast<std::uint64_t>(config.sage_layers));
  if (config.algorithm == "go") {
    const std::uint64_t layers = static_cast<std::uint64_t>(config.attention_layers);
    total += linear(h + global, h) + linear(h, std::max<std::uint64_t>(1, 2 * h * layers)) +
             layers * segment_attention_parameters(h) + linear(h, h) + linear(h, 1);
    for (std::size_t i = 0; i < spec.heads.size(); ++i)
      total += spec.any_devices() && spec.heads[i] == Head::kPlacement
                   ? pair_head_parameters(h, device_feature_names().size())
                   : linear(h, static_cast<std::uint64_t>(spec.choices[i]));
    return total;
  }
  for (std::size_t i = 0; i < spec.heads.size(); ++i)
    total += linear(h, h) + linear(h, static_cast<std::uint64_t>(spec.choices[i]));
  return total + linear(h + global, h) + linear(h, 1);
}

Policy make_policy(const AgentConfig& config, const PolicySpec& spec) {
  validate(config);
  GOENV_CHECK(!spec.heads.empty() && spec.heads.size() == spec.choices.size(), InvalidArgument,
              "a policy needs at least one decision head, got " << spec.describe());
  torch::manual_seed(static_cast<std::uint64_t>(config.seed));
  if (config.algorithm == "go") return std::make_shared<GoPolicyImpl>(config, spec);
  return std::make_shared<PpoPolicyImpl>(config, spec);
}

torch::Tensor mask_logits(const torch::Tensor& logits, const torch::Tensor& mask) {
  return logits.masked_fill(mask.to(torch::kBool).logical_not(), kMaskedLogit);
}

torch::Tensor unit_logits(const GraphTensors& graph, const torch::Tensor& logits, const torch::Tensor& mask) {
  if (!graph.unit.defined()) return mask_logits(logits, mask);
  const std::int64_t b = logits.size(0), c = logits.size(2);
  const torch::Tensor mean =
      logits.new_zeros({b, graph.num_units, c}).index_add_(1, graph.unit, logits) / graph.unit_size;
  const torch::Tensor forbidden = logits.new_zeros({b, graph.num_units, c})
                                      .index_add_(1, graph.unit, mask.to(torch::kBool).logical_not().to(logits.dtype()));
  return mean.masked_fill(forbidden > 0, kMaskedLogit);
}

torch::Tensor node_actions(const GraphTensors& graph, const torch::Tensor& unit_actions) {
  return graph.unit.defined() ? unit_actions.index_select(1, graph.unit.to(unit_actions.device())) : unit_actions;
}

torch::Tensor sample_actions(const torch::Tensor& masked_logits, bool deterministic, torch::Generator& generator) {
  if (deterministic) return masked_logits.argmax(-1);
  const torch::Tensor uniform =
      torch::rand(masked_logits.sizes(), generator, torch::TensorOptions().dtype(torch::kFloat32)).clamp_min(1e-12);
  const torch::Tensor gumbel = -torch::log(-torch::log(uniform));
  return (masked_logits + gumbel.to(masked_logits.device())).argmax(-1);
}

torch::Tensor log_prob(const std::vector<torch::Tensor>& masked_logits, const std::vector<torch::Tensor>& actions) {
  torch::Tensor total;
  for (std::size_t i = 0; i < masked_logits.size(); ++i) {
    const torch::Tensor part =
        torch::log_softmax(masked_logits[i], -1).gather(-1, actions[i].unsqueeze(-1)).squeeze(-1).to(torch::kFloat64).sum(-1);
    total = total.defined() ? total + part : part;
  }
  return total;
}

torch::Tensor entropy(const std::vector<torch::Tensor>& masked_logits) {
  torch::Tensor total;
  for (const torch::Tensor& logits : masked_logits) {
    const torch::Tensor log_p = torch::log_softmax(logits, -1);
    const torch::Tensor part = -(log_p.exp() * log_p).sum(-1).sum(-1);
    total = total.defined() ? total + part : part;
  }
  return total;
}

}  // namespace goenv::agents
