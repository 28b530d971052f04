// Where an episode starts (docs/environments.md): the compiler's defaults, any baseline's
// decisions, or given decisions. Improvement episodes (horizon > 1) and
// policy-guided search start from the best heuristic rather than from nothing.
#pragma once

#include <cstdint>
#include <string>

#include "envs/env.h"

namespace goenv {

// Simulator calls a search baseline may spend when it is named as a start
// (unless the caller says otherwise: start_decisions' `budget`, optimize's start_budget).
inline constexpr std::int64_t kStartBudget = 1000;

// The decisions a start name stands for on `env`'s graph and cluster:
// "default" the initial decisions, otherwise baseline `name`'s (priorities
// quantized to the env's levels), solved from the initial decisions whatever
// episode the env is in. NotFound for an unknown name (the message lists the
// baselines of the env's task); InvalidArgument when the baseline's decisions
// are infeasible. Deterministic. `simulator_calls` (if given) receives the
// calls the baseline made plus the one that measured its decisions (0 for "default").
// `budget`: the most simulator calls the baseline may make (a heuristic makes none).
Solution start_decisions(Env& env, const std::string& name, std::int64_t* simulator_calls = nullptr,
                         std::int64_t budget = kStartBudget);

// make_env's last step: set_start(start_decisions(config.start)) when the
// config names a start other than the default.
void apply_configured_start(Env& env);

}  // namespace goenv
