#include "envs/start.h"

#include <algorithm>

#include "core/error.h"
#include "envs/baselines/baseline.h"
#include "envs/registry.h"

namespace goenv {

namespace {

bool is_default(const std::string& name) { return name.empty() || name == "default"; }

}  // namespace

Solution start_decisions(Env& env, const std::string& name, std::int64_t* simulator_calls, std::int64_t budget) {
  if (simulator_calls != nullptr) *simulator_calls = 0;
  if (is_default(name)) return env.initial_decisions();
  // A fresh copy: the baseline starts from the initial decisions, not the episode's.
  EnvConfig config = env.config();
  config.start.clear();
  const auto copy = make_env_on_graph(env.task(), env.graph_ptr(), env.cluster(), config);
  const BaselineResult r = solve_baseline(*copy, name, {budget, 0});
  if (simulator_calls != nullptr) *simulator_calls = r.simulator_calls + 1;
  GOENV_CHECK(!r.oom && !r.invalid, InvalidArgument,
              env.id() << ": start '" << name << "' is infeasible: "
                       << (r.invalid ? r.invalid_reason : std::string("out of memory")));
  Solution s = r.decisions;
  // Only the task's heads: the others stay empty, so the start keeps the initial ones (given
  // other values for them, checked_start would refuse the start).
  const auto decides = [&](Head h) { return std::find(env.heads().begin(), env.heads().end(), h) != env.heads().end(); };
  if (!decides(Head::kPlacement)) s.placement.clear();
  if (!decides(Head::kFusion)) s.fusion.clear();
  if (!decides(Head::kPriority)) {
    s.priority.clear();
  } else {
    const auto quantized = quantize_priorities(s.priority, env.config().priority_levels);
    s.priority.assign(quantized.begin(), quantized.end());
  }
  return s;
}

void apply_configured_start(Env& env) {
  const std::string name = env.config().start;  // a copy: set_start writes the config
  if (!is_default(name)) env.set_start(start_decisions(env, name), name);
}

}  // namespace goenv
