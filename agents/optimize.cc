// search::optimize (declared in agents/search.h): policy-guided search, as start -> plan
// the budget once -> propose -> simulate -> keep the best, then local search from the best.
#include "agents/search.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agents/imitation.h"
#include "agents/proposals.h"
#include "agents/sampler.h"
#include "core/error.h"
#include "core/hash.h"
#include "envs/baselines/baseline.h"
#include "envs/observation.h"
#include "envs/registry.h"
#include "envs/start.h"

namespace goenv::agents::search {

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
// observation version, from `start` (or the env's own start, or, with `use_kept`, the best
// decisions training kept for this graph where they are better); fills the result's start
// fields and calls.
Started start_search(Model& model, const Env& prototype, std::int64_t budget, const std::string& start,
                     std::int64_t start_budget, bool use_kept, OptimizeResult& result) {
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
  if (use_kept && model.teacher_of(key) != nullptr) imitation::verify_teacher(model, env, key);
  if (const TeacherEntry* kept = use_kept ? model.teacher_of(key) : nullptr;
      kept != nullptr && kept->teacher.runtime < result.runtime) {
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
  BestView(const GraphTensors& graph, const ObservationDims& dims, std::int64_t budget, bool uniform)
      : graph_(graph), dims_(dims), read_gap_(policy_read_gap(budget)), read_at_(-read_gap_), uniform_(uniform) {}
  // Brings the view up to the best decisions (result.actions, observed as best_obs) before call k.
  void update(Model& model, const DynamicObservation& best_obs, std::int64_t k, OptimizeResult& result) {
    const int n = static_cast<int>(graph_.num_nodes);
    if (reading_stale_ && k - read_at_ >= read_gap_) {
      const Batch batch = stack({view_of(best_obs, dims_, n)}, dims_, n, model.device);
      policy_ = proposals::read(uniform_ ? model.uniform_logits(graph_, batch) : model.run(graph_, batch).first);
      read_at_ = k;
      reading_stale_ = false;
      if (!uniform_) ++result.policy_reads;
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
  const bool uniform_;          // every allowed choice equally likely: masks, no forward
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

// The trained model's network as training started it: the same config and spec, weights
// drawn from config.seed. The process's torch generator, which drawing them reseeds, is
// restored: an ablation leaves its caller's random state as it found it.
Model initialised_like(const Model& trained) {
  at::Generator global = at::detail::getDefaultCPUGenerator();
  const at::Tensor state = global.get_state();
  Model fresh(trained.config);
  fresh.build(trained.spec);
  global.set_state(state);
  return fresh;
}

}  // namespace

OptimizeResult optimize(Model& trained, const Env& prototype, std::int64_t budget, const std::string& start,
                        std::int64_t local_search_budget, std::int64_t seed_of_run, std::int64_t start_budget,
                        Proposals proposals) {
  GOENV_CHECK(budget >= 1 && budget <= std::numeric_limits<int>::max(), InvalidArgument,
              "budget must be in [1, " << std::numeric_limits<int>::max() << "] simulator calls, got " << budget);
  GOENV_CHECK(local_search_budget >= 0, InvalidArgument, "local_search_budget must be >= 0, got " << local_search_budget);
  GOENV_CHECK(start_budget >= 0, InvalidArgument, "start_budget must be >= 0, got " << start_budget);
  trained.check_env(prototype);
  std::optional<Model> untrained;
  if (proposals == Proposals::kUntrained) untrained.emplace(initialised_like(trained));
  Model& model = untrained ? *untrained : trained;
  const ThreadScope threads(model.config.num_threads);
  OptimizeResult result;
  result.proposals = name_of(proposals);
  Started started =
      start_search(model, prototype, budget, start, start_budget, proposals == Proposals::kLearned, result);
  Env& env = *started.env;
  const GraphTensors graph = model.tensors_of(env);
  torch::NoGradGuard no_grad;
  const proposals::BudgetPlan plan(budget);  // what each proposal is: once per search
  BestView best(graph, model.dims_of(graph), budget, proposals == Proposals::kUniform);
  torch::Generator generator = generator_of(trained, seed_of_run);  // the agent's, whatever the reading
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

namespace goenv::agents {

namespace {
constexpr std::pair<Proposals, const char*> kProposalNames[] = {
    {Proposals::kLearned, "learned"}, {Proposals::kUntrained, "untrained"}, {Proposals::kUniform, "uniform"}};
}  // namespace

Proposals proposals_named(const std::string& name) {
  const auto* found = std::find_if(std::begin(kProposalNames), std::end(kProposalNames),
                                   [&](const auto& entry) { return name == entry.second; });
  GOENV_CHECK(found != std::end(kProposalNames), InvalidArgument,
              "proposals must be 'learned', 'untrained' or 'uniform', got '" << name << "'");
  return found->first;
}

const char* name_of(Proposals proposals) {
  for (const auto& [p, named] : kProposalNames)
    if (p == proposals) return named;
  return "learned";
}

}  // namespace goenv::agents
