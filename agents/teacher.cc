#include "agents/teacher.h"

#include "core/error.h"
#include "core/suggest.h"
#include "envs/baselines/baseline.h"
#include "envs/registry.h"

namespace goenv::agents {

std::vector<std::string> teacher_names(const Env& env) {
  std::vector<std::string> out = {"best"};
  for (const auto& name : baseline_names(env.task())) out.push_back(name);
  return out;
}

std::string teacher_method(const std::string& name) { return name == "best" ? "best-heuristic" : name; }

StepResult step_actions(Env& env, const std::vector<std::vector<std::int64_t>>& actions) {
  std::vector<const std::int64_t*> parts;
  for (const auto& a : actions) parts.push_back(a.data());
  return env.step(parts);
}

std::vector<std::vector<std::int64_t>> solution_actions(const Env& env, const Solution& solution) {
  std::vector<std::vector<std::int64_t>> out;
  for (Head head : env.heads()) {
    if (head == Head::kPriority) {
      out.push_back(quantize_priorities(solution.priority, env.choices(head)));
    } else {
      const auto& values = head == Head::kPlacement ? solution.placement : solution.fusion;
      out.emplace_back(values.begin(), values.end());
    }
  }
  return out;
}

Teacher solve_teacher(const Env& prototype, const std::string& method, std::uint64_t seed) {
  const std::vector<std::string> choices = teacher_names(prototype);
  bool known = false;
  for (const auto& c : choices) known = known || c == method;
  GOENV_CHECK(known, InvalidArgument,
              "unknown teacher '" << method << "' for " << prototype.id() << "; the choices are " << joined_names(choices));
  Teacher t;
  t.method = teacher_method(method);
  auto env = make_env_on_graph(prototype.task(), prototype.graph_ptr(), prototype.cluster(), prototype.config());
  env->reset(seed);
  const BaselineResult solved = solve_baseline(*env, t.method, Budget{1000, seed});
  t.actions = solution_actions(*env, solved.decisions);
  const StepResult r = step_actions(*env, t.actions);
  t.simulator_calls = solved.simulator_calls + 1;
  const bool bad = r.info.oom || r.info.invalid;
  std::vector<std::string> others;
  for (const auto& c : choices)
    if (c != method) others.push_back(c);
  GOENV_CHECK(!bad, InvalidArgument,
              "teacher '" << method << "' is infeasible on " << prototype.id() << " ("
                          << (r.info.invalid_reason.empty() ? "out of memory" : r.info.invalid_reason)
                          << "); choose another teacher: " << joined_names(others));
  t.runtime = r.info.runtime;
  t.reward = r.reward;
  return t;
}

}  // namespace goenv::agents
