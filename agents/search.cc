#include "agents/search.h"

#include <cmath>
#include <limits>

#include "agents/imitation.h"
#include "agents/sampler.h"
#include "core/error.h"
#include "core/hash.h"
#include "envs/baselines/baseline.h"
#include "envs/observation.h"
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
  GOENV_CHECK(!pairs || (o.device_features != nullptr && o.num_devices >= 1 &&
                         o.device_feature_dim == static_cast<int>(device_feature_names().size())),
              InvalidArgument, "this policy scores (unit, device) pairs: it needs the observation's device_features ("
                                   << device_feature_names().size() << " columns; observation version 2, e.g. a -v2 id)");
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

OptimizeResult optimize(Model& model, const Env& prototype, int samples, std::int64_t local_search_budget) {
  GOENV_CHECK(samples >= 1, InvalidArgument, "samples must be >= 1, got " << samples);
  GOENV_CHECK(local_search_budget >= 0, InvalidArgument, "local_search_budget must be >= 0, got " << local_search_budget);
  model.check_env(prototype);
  const ThreadScope threads(model.config.num_threads);
  std::unique_ptr<Env> env = copy_env(prototype);
  const GraphTensors graph = model.tensors_of(*env);
  constexpr double inf = std::numeric_limits<double>::infinity();
  OptimizeResult result;
  result.env_id = prototype.id();
  result.runtime = result.greedy_runtime = inf;
  torch::NoGradGuard no_grad;
  std::vector<std::vector<std::int64_t>> decided;
  const std::uint64_t seed = reset_seed(model.config, 0, kEvaluation, 0);
  ForwardCache cache;  // one-shot samples all start from the reset observation: one forward
  for (int i = 0; i < samples; ++i) {
    const StepResult r = run_episode(model, *env, graph, episode_seed(seed, i), i == 0, decided,
                                     result.simulator_calls, nullptr, &cache);
    result.initial_runtime = r.info.initial_runtime;
    const bool valid = !(r.info.oom || r.info.invalid);
    if (i == 0) result.greedy_runtime = valid ? r.info.runtime : inf;
    if (i == 0 || (valid && r.info.runtime < result.runtime)) {
      result.runtime = valid ? r.info.runtime : inf;
      result.actions = decided;
      result.source = i == 0 ? "greedy" : "sample";
    }
  }
  // The best decisions training found on this graph (a kept teacher) were simulated then.
  imitation::verify_teacher(model, *env, env_key(*env));
  if (const auto it = model.teachers.find(env_key(*env));
      it != model.teachers.end() && it->second.teacher.runtime < result.runtime) {
    result.runtime = it->second.teacher.runtime;
    result.actions = it->second.teacher.actions;
    result.source = "training";
  }
  if (local_search_budget > 0 && std::isfinite(result.runtime)) {
    // The best decisions become the env's current ones: local search starts from them.
    env->reset(episode_seed(seed, samples));
    step_actions(*env, result.actions);
    ++result.simulator_calls;
    const BaselineResult searched =
        solve_baseline(*env, "local-search", Budget{local_search_budget, static_cast<std::uint64_t>(model.config.seed)});
    result.simulator_calls += searched.simulator_calls;
    if (!searched.oom && !searched.invalid && searched.runtime < result.runtime) {
      auto actions = solution_actions(*env, searched.decisions);  // measured as the env steps them
      env->reset(episode_seed(seed, samples + 1));
      const StepResult r = step_actions(*env, actions);
      ++result.simulator_calls;
      if (!(r.info.oom || r.info.invalid) && r.info.runtime < result.runtime) {
        result.runtime = r.info.runtime;
        result.actions = std::move(actions);
        result.source = "local-search";
      }
    }
  }
  return result;
}

}  // namespace goenv::agents::search
