// The teacher an agent imitates (DOPPLER-style warm start, agents/agent.h):
// a baseline's decisions on one env, as the env's actions, with what they
// simulate to. Torch-free.
//
// Contract:
//  * `method` is a baseline name (envs/baselines/baseline.h) or "best", short
//    for "best-heuristic": the best of the classic heuristics by simulated
//    runtime. An unknown name raises InvalidArgument listing the choices.
//  * The decisions are stepped once on a fresh copy of the env; a teacher
//    that is infeasible there (OOM, split group, forbidden device) raises
//    InvalidArgument naming the graph, the reason and the other choices.
//  * `simulator_calls` charges every simulation: the baseline's own calls plus
//    the one step that measures the decisions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "envs/baselines/baseline.h"
#include "envs/env.h"

namespace goenv::agents {

struct Teacher {
  std::string method;                          // the baseline actually run ("best" -> "best-heuristic")
  std::vector<std::vector<std::int64_t>> actions;  // per head in env.heads() order, (N,) values
  double runtime = 0;                          // seconds, the stepped decisions
  double reward = 0;                           // the env's reward for them (one-shot: the first step)
  std::int64_t simulator_calls = 0;
};

// Baseline names a teacher may be, sorted ("best" first).
std::vector<std::string> teacher_names(const Env& env);
Teacher solve_teacher(const Env& env, const std::string& method, std::uint64_t seed);
// The baseline a teacher name runs: "best" is "best-heuristic", any other name itself.
std::string teacher_method(const std::string& name);
// Steps `env` with per-head (N,) actions.
StepResult step_actions(Env& env, const std::vector<std::vector<std::int64_t>>& actions);
// A baseline's solution as the env's actions (per head, (N,) values; priorities quantized to the env's levels).
std::vector<std::vector<std::int64_t>> solution_actions(const Env& env, const Solution& solution);

}  // namespace goenv::agents
