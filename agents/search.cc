#include "agents/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "agents/imitation.h"
#include "agents/proposals.h"
#include "agents/sampler.h"
#include "core/error.h"
#include "core/hash.h"
#include "envs/baselines/baseline.h"
#include "envs/observation.h"
#include "envs/registry.h"
#include "envs/start.h"
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

namespace {

// The env's decisions in force as its actions (per head, (N,) values).
std::vector<std::vector<std::int64_t>> decisions_of(const Env& env) {
  std::vector<std::vector<std::int64_t>> out;
  for (Head h : env.heads()) {
    if (h == Head::kPlacement) out.emplace_back(env.placement().begin(), env.placement().end());
    if (h == Head::kFusion) out.emplace_back(env.fusion().begin(), env.fusion().end());
    if (h == Head::kPriority) {
      out.emplace_back();
      for (double p : env.priority()) out.back().push_back(static_cast<std::int64_t>(p));
    }
  }
  return out;
}

// The env's actions (per head, (N,) values) as decisions for its heads.
Solution solution_of(const Env& env, const std::vector<std::vector<std::int64_t>>& actions) {
  Solution s;
  for (std::size_t h = 0; h < env.heads().size(); ++h) {
    const auto& a = actions[h];
    switch (env.heads()[h]) {
      case Head::kPlacement: s.placement.assign(a.begin(), a.end()); break;
      case Head::kPriority: s.priority.assign(a.begin(), a.end()); break;
      case Head::kFusion: s.fusion.assign(a.begin(), a.end()); break;
    }
  }
  return s;
}

// A search's start: the env of its improvement episode at the start's decisions, measured.
struct Started {
  std::unique_ptr<Env> env;
  DynamicObservation best_obs;  // the observation of the best decisions so far
  std::uint64_t seed;           // the episode's reset seed
};

// An improvement episode of `budget` steps on a copy of `prototype`, read at the policy's
// observation version, from `start` (or the env's own start, or the best decisions training
// kept for this graph where they are better); fills the result's start fields and calls.
Started start_search(Model& model, const Env& prototype, std::int64_t budget, const std::string& start,
                     std::int64_t start_budget, OptimizeResult& result) {
  EnvConfig config = prototype.config();
  config.observation_version = kPolicyObservationVersion;
  config.horizon = static_cast<int>(budget);
  config.start.clear();
  Started s{make_env_on_graph(prototype.task(), prototype.graph_ptr(), prototype.cluster(), config), {},
            reset_seed(model.config, 0, kEvaluation, 0)};
  Env& env = *s.env;
  result.env_id = prototype.id();
  Solution from = prototype.has_start() ? prototype.start() : env.initial_decisions();
  if (!start.empty()) from = start_decisions(env, start, &result.start_calls, start_budget);
  // Named: the argument, else the env's named start; decisions set on the env are "given".
  const std::string& named = prototype.config().start;
  result.start = !start.empty() ? start : !named.empty() ? named : prototype.has_start() ? "given" : "default";
  StepInfo info;
  s.best_obs = env.reset(s.seed, &info, &from);  // checks the start: infeasible -> InvalidArgument
  ++result.start_calls;
  result.initial_runtime = info.initial_runtime;
  result.start_runtime = result.runtime = info.runtime;
  result.greedy_runtime = std::numeric_limits<double>::infinity();
  result.source = "start";
  // The best decisions training found on this graph (a kept teacher, measured then) start the
  // search instead when they are better: measuring them here is one more start call.
  const std::uint64_t key = env_key(env);
  if (model.teacher_of(key) != nullptr) imitation::verify_teacher(model, env, key);
  if (const TeacherEntry* kept = model.teacher_of(key); kept != nullptr && kept->teacher.runtime < result.runtime) {
    const Solution trained = solution_of(env, kept->teacher.actions);
    StepInfo kept_info;
    DynamicObservation kept_obs = env.reset(s.seed, &kept_info, &trained);
    ++result.start_calls;
    if (kept_info.runtime < result.runtime) {
      result.runtime = kept_info.runtime;
      s.best_obs = std::move(kept_obs);
      result.source = "training";
    } else {
      env.reset(s.seed, &info, &from);  // back to the named start (measured again: charged)
      ++result.start_calls;
    }
  }
  result.actions = decisions_of(env);
  return s;
}

// What the proposals read of the best decisions: the policy's reading of their observation,
// the decisions per unit, and their schedule's focus. A new best changes the units and focus
// at once (cheap), the reading only every policy_read_gap(budget) calls (see search.h).
class BestView {
 public:
  BestView(const GraphTensors& graph, const ObservationDims& dims, std::int64_t budget)
      : graph_(graph), dims_(dims), read_gap_(policy_read_gap(budget)), read_at_(-read_gap_) {}
  // Brings the view up to the best decisions (result.actions, observed as best_obs) before call k.
  void update(Model& model, const DynamicObservation& best_obs, std::int64_t k, OptimizeResult& result) {
    const int n = static_cast<int>(graph_.num_nodes);
    if (reading_stale_ && k - read_at_ >= read_gap_) {
      policy_ = proposals::read(model.run(graph_, stack({view_of(best_obs, dims_, n)}, dims_, n, model.device)).first);
      read_at_ = k;
      reading_stale_ = false;
      ++result.policy_reads;
    }
    if (stale_) {
      Teacher as_units;
      as_units.actions = result.actions;
      units_.clear();
      for (const auto& t : imitation::targets(graph_, model.spec, as_units, torch::kCPU)) units_.push_back(t);
      focus_ = proposals::focus_of(graph_, best_obs, dims_.node_state);
      stale_ = false;
    }
  }
  void new_best() { stale_ = reading_stale_ = true; }
  const proposals::Reading& policy() const { return policy_; }
  const std::vector<torch::Tensor>& units() const { return units_; }
  const proposals::Focus& focus() const { return focus_; }

 private:
  const GraphTensors& graph_;
  const ObservationDims dims_;
  const std::int64_t read_gap_;
  std::int64_t read_at_;        // the call count at the last forward
  bool stale_ = true;           // the units and focus belong to an older best
  bool reading_stale_ = true;   // the reading does
  proposals::Reading policy_;
  std::vector<torch::Tensor> units_;
  proposals::Focus focus_;
};

// Proposals come from their own generator (config.seed, seed_of_run) where seed_of_run >= 0,
// else from the agent's sampling generator (shared, not copied).
torch::Generator generator_of(Model& model, std::int64_t seed_of_run) {
  if (seed_of_run < 0) return model.sampling;
  return at::detail::createCPUGenerator(
      splitmix64(splitmix64(static_cast<std::uint64_t>(model.config.seed)) ^ static_cast<std::uint64_t>(seed_of_run)));
}

// Simulates proposal number `proposal` (per head, per unit) as one step of the env, and keeps
// it in `result` (and its observation in best_obs) where it is the best so far; true then.
bool simulate(Model& model, Env& env, const GraphTensors& graph, const std::vector<torch::Tensor>& units,
              std::int64_t proposal, std::vector<std::vector<std::int64_t>>& actions, OptimizeResult& result,
              DynamicObservation& best_obs) {
  std::vector<const std::int64_t*> parts;
  for (std::size_t h = 0; h < units.size(); ++h) {
    model.env_actions_into(graph, h, units[h], actions[h]);
    parts.push_back(actions[h].data());
  }
  env.advance(parts);  // observed only where it is a new best
  const StepInfo& info = env.last_info();
  ++result.simulator_calls;
  const bool valid = !(info.oom || info.invalid);
  if (proposal == 0) result.greedy_runtime = valid ? info.runtime : std::numeric_limits<double>::infinity();
  if (!valid || !(info.runtime < result.runtime)) return false;
  result.runtime = info.runtime;
  result.actions = decisions_of(env);  // as adopted (colocation "follow" applied)
  result.source = proposal == 0 ? "greedy" : "policy";
  best_obs = env.observation();
  return true;
}

// Local search from the best: its decisions become the env's current ones, and its result
// the search's where it is better, measured as the env steps it.
void local_search_from_best(Model& model, Env& env, std::uint64_t seed, std::int64_t local_search_budget,
                            OptimizeResult& result) {
  env.reset(episode_seed(seed, 1));
  step_actions(env, result.actions);
  ++result.simulator_calls;
  const BaselineResult searched =
      solve_baseline(env, "local-search", Budget{local_search_budget, static_cast<std::uint64_t>(model.config.seed)});
  result.simulator_calls += searched.simulator_calls;
  if (searched.oom || searched.invalid || !(searched.runtime < result.runtime)) return;
  auto actions = solution_actions(env, searched.decisions);
  env.reset(episode_seed(seed, 2));
  const StepResult r = step_actions(env, actions);
  ++result.simulator_calls;
  if (!(r.info.oom || r.info.invalid) && r.info.runtime < result.runtime) {
    result.runtime = r.info.runtime;
    result.actions = std::move(actions);
    result.source = "local-search";
  }
}

// The placement head's index among the policy's heads, -1 if it has none.
std::int64_t placement_head_of(const std::vector<Head>& heads) {
  const auto placement = std::find(heads.begin(), heads.end(), Head::kPlacement);
  return placement == heads.end() ? -1 : placement - heads.begin();
}

}  // namespace

OptimizeResult optimize(Model& model, const Env& prototype, std::int64_t budget, const std::string& start,
                        std::int64_t local_search_budget, std::int64_t seed_of_run, std::int64_t start_budget) {
  GOENV_CHECK(budget >= 1 && budget <= std::numeric_limits<int>::max(), InvalidArgument,
              "budget must be in [1, " << std::numeric_limits<int>::max() << "] simulator calls, got " << budget);
  GOENV_CHECK(local_search_budget >= 0, InvalidArgument, "local_search_budget must be >= 0, got " << local_search_budget);
  GOENV_CHECK(start_budget >= 0, InvalidArgument, "start_budget must be >= 0, got " << start_budget);
  model.check_env(prototype);
  const ThreadScope threads(model.config.num_threads);
  OptimizeResult result;
  Started started = start_search(model, prototype, budget, start, start_budget, result);
  Env& env = *started.env;
  const GraphTensors graph = model.tensors_of(env);
  torch::NoGradGuard no_grad;
  const proposals::BudgetPlan plan(budget);  // what each proposal is: once per search
  BestView best(graph, model.dims_of(graph), budget);
  torch::Generator generator = generator_of(model, seed_of_run);
  const std::int64_t placement_head = placement_head_of(model.spec.heads);
  std::vector<std::vector<std::int64_t>> actions(model.spec.heads.size());  // a proposal's, per node: reused
  // A proposal equal to the best decisions costs no call: the next one is drawn (the greedy
  // decision of a policy that keeps its start, a move with nowhere to go). After kMaxRepeats
  // in a row it is simulated anyway, so that exactly `budget` calls are spent even where
  // nothing else can be proposed.
  constexpr int kMaxRepeats = 64;
  int repeats = 0;
  for (std::int64_t k = 0, proposal = 0; k < budget; ++proposal) {
    best.update(model, started.best_obs, k, result);
    const std::vector<torch::Tensor> units =
        proposals::propose(best.policy(), best.units(), best.focus(), plan, proposal, generator, placement_head);
    if (proposals::same_as(units, best.units()) && ++repeats < kMaxRepeats) {
      if (proposal == 0) result.greedy_runtime = result.runtime;  // the greedy decision is the start
      continue;
    }
    repeats = 0;
    if (simulate(model, env, graph, units, proposal, actions, result, started.best_obs)) best.new_best();
    result.curve.push_back(result.runtime);
    ++k;
  }
  if (local_search_budget > 0) local_search_from_best(model, env, started.seed, local_search_budget, result);
  result.simulator_calls += result.start_calls;
  return result;
}

}  // namespace goenv::agents::search
