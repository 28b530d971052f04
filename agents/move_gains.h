// Move-gain supervision: trains the reading policy-guided search uses. A search draws the
// units it moves by 1 - p(their current choice) and sends each where p points
// (agents/moves/unit_draw.h); here p(u, c), read at a decision's observation, learns the
// runtime gained by moving unit u alone to choice c (a softmax of the gains), measured on
// the best heuristic's decisions and on perturbations of them. docs/agents.md describes it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "agents/agent.h"
#include "agents/model.h"

namespace goenv::agents::move_gains {

// `steps` Adam steps of cross-entropy toward the move-gain targets of `states` decisions per
// env (the best heuristic's and states - 1 perturbations of it, each labelled with one
// simulation per (unit, other allowed device)); `temperature` is the softmax's, as a share of
// the decision's runtime. Every target is simulated before the first step: a graph without
// a placement head, or bad arguments, raise InvalidArgument with the model unchanged.
ImitationMetrics learn(Model& model, const std::vector<const Env*>& prototypes, std::int64_t steps,
                       std::int64_t states, double temperature, std::uint64_t stream,
                       const std::function<bool(const ImitationMetrics&)>& callback);

}  // namespace goenv::agents::move_gains
