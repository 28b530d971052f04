// What policy-guided search (search::optimize) simulates next: proposal k, planned by the
// search's BudgetPlan (agents/budget_plan.h), is a decision from the policy or one move of
// the best decisions (agents/moves/move.h), guided by the policy's reading of their
// observation (agents/reading.h) and focused on their schedule's critical path
// (agents/focus.h). docs/agents.md describes the search.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "agents/budget_plan.h"
#include "agents/focus.h"
#include "agents/reading.h"

namespace goenv::agents::proposals {

// Proposal k of the search `budget` plans, from the policy's reading and the best decisions
// per unit (per head (1, U)), as per head (1, U) choices on the CPU: the planned kind's move
// (agents/moves/move.h) on a copy of the best decisions, or a decision sampled from the
// policy where that move has nothing to change. `placement_head`: the placement head's index
// (-1 if none: smoothing and joins are then moves of budget.moved_at(k) units, shifts and
// offloads decisions). Moves rotate over the heads (joint: the heads in turn); smoothing,
// joins, shifts and offloads change the placement head.
std::vector<torch::Tensor> propose(const Reading& policy, const std::vector<torch::Tensor>& best, const Focus& focus,
                                   const BudgetPlan& budget, std::int64_t k, torch::Generator& generator,
                                   std::int64_t placement_head = -1);
// The same from the logits alone (per head (1, U, C)) and a budget of `budget` calls (0: no opening).
std::vector<torch::Tensor> propose(const std::vector<torch::Tensor>& logits, const std::vector<torch::Tensor>& best,
                                   const Focus& focus, std::int64_t k, torch::Generator& generator,
                                   std::int64_t budget = 0, std::int64_t placement_head = -1);

// Whether a proposal is the best decisions again (per head, per unit).
bool same_as(const std::vector<torch::Tensor>& proposal, const std::vector<torch::Tensor>& best);

}  // namespace goenv::agents::proposals
