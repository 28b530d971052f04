#include "agents/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "agents/focus.h"
#include "agents/sampler.h"
#include "core/error.h"
#include "core/hash.h"
#include "envs/observation.h"
#include "envs/registry.h"
#include "envs/vector_env.h"

namespace goenv::agents::search {

namespace {

// The policy's input must be finite, and every node must have an allowed choice in every head.
void check_observation(const PolicySpec& spec, const ObservationDims& dims, const ObservationBatch& o) {
  auto finite = [](const float* values, std::int64_t count, const char* what) {
    for (std::int64_t i = 0; i < count; ++i)
      GOENV_CHECK(std::isfinite(values[i]), InvalidArgument,
                  "observation's " << what << " holds a non-finite value (" << values[i] << " at flat index " << i
                                   << ")");
  };
  const std::int64_t b = o.batch, n = o.num_nodes;
  finite(o.node_features, n * o.node_feature_dim, "node_features");
  finite(o.node_state, b * n * o.node_state_dim, "node_state");
  finite(o.globals, b * o.global_dim, "globals");
  // decision_mode="node" marks the one node to decide in 'current' (0 everywhere otherwise): the
  // policy decides whole graphs, and its (N,) answer is not the Discrete action that env takes.
  const std::int64_t current = proposals::state_column(o.node_state_dim, "current");
  for (std::int64_t row = 0; row < b * n; ++row)
    GOENV_CHECK(o.node_state[row * o.node_state_dim + current] == 0.f, InvalidArgument,
                "observation is of an env with decision_mode='node' (its node_state marks node "
                    << row % n << (b > 1 ? " of observation " + std::to_string(row / n) : std::string())
                    << " as the one to decide): the agents decide whole graphs; pass an observation of an env "
                       "with decision_mode='graph' (the default), whose action is the (N,) array act() returns");
  for (std::int64_t row = 0; row < b * n; ++row) {
    const std::int8_t* mask = o.action_mask + row * o.action_mask_width;
    int offset = 0;
    for (std::size_t h = 0; h < spec.heads.size(); ++h) {
      bool any = false;
      for (int c = 0; c < dims.choices[h]; ++c) any = any || mask[offset + c] != 0;
      GOENV_CHECK(any, InvalidArgument,
                  "action_mask allows no " << head_name(spec.heads[h]) << " choice for node " << row % n
                                           << (b > 1 ? " of observation " + std::to_string(row / n) : std::string())
                                           << ": every node needs at least one");
      offset += dims.choices[h];
    }
  }
  if (o.device_features != nullptr) finite(o.device_features, std::int64_t{o.num_devices} * o.device_feature_dim,
                                           "device_features");
}

// A colocation group is placed as one decision among the devices all its members allow: with
// none, every choice of the group is masked and the argmax returned a forbidden one.
void check_groups(const PolicySpec& spec, const ObservationDims& dims, const ObservationBatch& o) {
  const auto placement = std::find(spec.heads.begin(), spec.heads.end(), Head::kPlacement);
  if (o.colocation == nullptr || placement == spec.heads.end()) return;
  const auto head = static_cast<std::size_t>(placement - spec.heads.begin());
  int offset = 0;
  for (std::size_t h = 0; h < head; ++h) offset += dims.choices[h];
  const int choices = dims.choices[head];
  const auto listed = [&](const std::vector<char>& allowed) {
    std::ostringstream os;
    for (int c = 0; c < choices; ++c)
      if (allowed[c]) os << (os.tellp() > 0 ? ", " : "") << c;
    return "[" + os.str() + "]";
  };
  for (std::int64_t b = 0; b < o.batch; ++b) {
    std::unordered_map<std::int32_t, std::vector<char>> shared;  // group -> devices its members so far allow
    for (std::int64_t v = 0; v < o.num_nodes; ++v) {
      const std::int32_t group = o.colocation[v];
      if (group < 0) continue;
      const std::int8_t* mask = o.action_mask + (b * o.num_nodes + v) * o.action_mask_width + offset;
      const std::vector<char> own(mask, mask + choices);
      const auto [it, fresh] = shared.try_emplace(group, own);
      if (fresh) continue;
      std::vector<char> both(choices);
      for (int c = 0; c < choices; ++c) both[c] = it->second[c] && own[c];
      GOENV_CHECK(std::find(both.begin(), both.end(), 1) != both.end(), InvalidArgument,
                  "colocation group " << group << (o.batch > 1 ? " of observation " + std::to_string(b) : std::string())
                                      << " has no device all its members allow: the members before node " << v
                                      << " allow " << listed(it->second) << ", its action_mask allows " << listed(own)
                                      << " (a group is placed as one decision; pass colocation ids whose groups "
                                         "share an allowed device, or none)");
      it->second = std::move(both);
    }
  }
}

}  // namespace

const GraphTensors& Actor::graph_for(const Model& model, const ObservationBatch& o) {
  std::uint64_t key = hash_bytes(o.node_features, sizeof(float) * o.num_nodes * static_cast<std::size_t>(o.node_feature_dim));
  key = hash_bytes(o.edge_index, sizeof(std::int64_t) * 2 * static_cast<std::size_t>(o.num_edges), key);
  if (o.colocation != nullptr) key = hash_bytes(o.colocation, sizeof(std::int32_t) * o.num_nodes, key);
  if (o.device_features != nullptr)
    key = hash_bytes(o.device_features, sizeof(float) * o.num_devices * static_cast<std::size_t>(o.device_feature_dim),
                     key ^ 0xD5);
  key = splitmix64(key ^ (static_cast<std::uint64_t>(o.num_nodes) << 32) ^ static_cast<std::uint64_t>(o.num_edges) ^
                   (o.colocation != nullptr ? 1ULL << 63 : 0));
  if (!graph_.node_features.defined() || key != key_) {
    graph_ = graph_tensors(o.num_nodes, o.node_feature_dim, o.node_features, o.num_edges, o.edge_index, model.device,
                           o.colocation);
    if (o.device_features != nullptr)
      set_devices(graph_, o.num_devices, o.device_features, o.device_feature_dim, model.device);
    key_ = key;
  }
  return graph_;
}

std::vector<std::vector<std::int64_t>> Actor::act(Model& model, const ObservationBatch& o, bool deterministic) {
  GOENV_CHECK(model.ready, InvalidArgument,
              "the agent has no policy yet: train it, load a checkpoint, or pass env= when creating it");
  GOENV_CHECK(o.batch >= 1 && o.num_nodes >= 1 && o.num_edges >= 0, InvalidArgument,
              "observation needs batch >= 1 and nodes >= 1, got batch " << o.batch << ", " << o.num_nodes << " nodes");
  const bool pairs = model.spec.any_devices();
  const int device_feature_dim = static_cast<int>(device_feature_names().size());
  GOENV_CHECK(!pairs || o.device_features != nullptr, InvalidArgument,
              "this policy scores (unit, device) pairs: it needs the observation's device_features ("
                  << device_feature_dim << " columns; observation version 2, e.g. a -v2 id)");
  // Width and rows are checked before the spec: a wrong one surfaced as a node_state_dim mismatch.
  GOENV_CHECK(!pairs || o.device_feature_dim == device_feature_dim, InvalidArgument,
              "observation['device_features'] has " << o.device_feature_dim << " columns, this policy (it scores "
                  "(unit, device) pairs) needs " << device_feature_dim << " (one per device_feature_names())");
  // One row per device: as many as action_mask's placement columns.
  const int mask_devices = o.action_mask_width - model.spec.action_mask_width();
  GOENV_CHECK(!pairs || (o.num_devices >= 1 && o.num_devices == mask_devices), InvalidArgument,
              "observation['device_features'] is (D, Fd) = (" << o.num_devices << ", " << o.device_feature_dim
                  << "), one row per device, but action_mask's placement columns (one per device) are " << mask_devices
                  << " of its " << o.action_mask_width << ": both must count the env's devices");
  const int d = pairs ? o.num_devices : 0;
  PolicySpec seen = model.spec;
  seen.node_feature_dim = o.node_feature_dim;
  seen.node_state_dim = o.node_state_dim - d;
  seen.global_dim = o.global_dim;
  model.check_spec(seen, "the observation");
  const ObservationDims dims = model.spec.dims(d);
  GOENV_CHECK(o.action_mask_width == dims.action_mask, InvalidArgument,
              "action_mask has " << o.action_mask_width << " columns, the policy's heads need " << dims.action_mask
                                 << " (" << model.spec.describe() << ")");
  check_observation(model.spec, dims, o);
  check_groups(model.spec, dims, o);
  const ThreadScope threads(model.config.num_threads);
  torch::NoGradGuard no_grad;
  const GraphTensors& graph = graph_for(model, o);
  const Batch batch = batch_of(o.batch, o.num_nodes, o.node_state, o.node_state_dim, o.action_mask,
                               o.action_mask_width, o.globals, o.global_dim, model.device);
  return model.decide(graph, model.run(graph, batch).first, deterministic);
}

EvaluationResult evaluate(Model& model, const Env& prototype, int episodes, bool deterministic) {
  GOENV_CHECK(episodes >= 1, InvalidArgument, "episodes must be >= 1, got " << episodes);
  model.check_env(prototype);
  const ThreadScope threads(model.config.num_threads);
  std::unique_ptr<Env> env = copy_env(prototype);
  const GraphTensors graph = model.tensors_of(*env);
  EvaluationResult result;
  result.env_id = prototype.id();
  result.episodes = episodes;
  result.best_runtime = std::numeric_limits<double>::infinity();
  double runtime = 0, invalid = 0;
  std::int64_t calls = 0;
  std::vector<std::vector<std::int64_t>> decided;
  torch::NoGradGuard no_grad;
  const std::uint64_t seed = reset_seed(model.config, 0, kEvaluation, 0);
  ForwardCache cache;
  for (int e = 0; e < episodes; ++e) {
    const StepResult r =
        run_episode(model, *env, graph, episode_seed(seed, e), deterministic, decided, calls, nullptr, &cache);
    const bool bad = r.info.oom || r.info.invalid;
    runtime += r.info.runtime;
    invalid += bad ? 1 : 0;
    if (!bad) result.best_runtime = std::min(result.best_runtime, r.info.runtime);
    result.initial_runtime = r.info.initial_runtime;
    result.lower_bound = r.info.lower_bound;
  }
  result.runtime = runtime / episodes;
  result.speedup = result.runtime > 0 ? result.initial_runtime / result.runtime : 1.0;
  result.invalid_fraction = invalid / episodes;
  if (!std::isfinite(result.best_runtime)) result.best_runtime = result.runtime;
  return result;
}

}  // namespace goenv::agents::search
