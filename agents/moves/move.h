// One move of policy-guided search: how proposal k changes the best decisions. Every move
// kind is one function of one signature, in its own file; proposals::propose picks it by
// the proposal's planned kind (agents/budget_plan.h), and a new kind is one more such
// function. docs/agents.md describes the search; docs/notes/search-moves.md how each kind
// was chosen.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "agents/budget_plan.h"
#include "agents/focus.h"
#include "agents/reading.h"

namespace goenv::agents::moves {

// What a move knows of its proposal.
struct MoveInput {
  const proposals::Reading& policy;  // the policy's reading of the best decisions' observation
  const proposals::Focus& focus;     // their schedule's critical path, waits, slack and work
  proposals::Plan plan;              // the proposal's kind and size
  std::int64_t k;                    // the proposal's index in the search (0: the greedy decision)
  std::int64_t head;                 // the head the move changes (a decision changes them all)
  bool past_opening;                 // past the budget's opening (BudgetPlan::in_opening)
  torch::Generator& generator;       // every random draw of the search comes from it
};

// Changes `proposal` in place: per head (1, U) choices on the CPU, on entry a copy of the
// best decisions. Units keep their choice wherever the new one is not allowed (p = 0).
// Returns false where the move has nothing to change (a path on one choice, a single
// choice); the proposal is then a decision sampled from the policy instead.
// The order and number of the generator's draws are part of a move's contract: searches
// with a seed repeat exactly.
using Move = bool (*)(const MoveInput& input, std::vector<torch::Tensor>& proposal);

// A whole decision from the policy, every head: the greedy one at k = 0, as one-shot GO
// would take it, else one sampled.
bool decision(const MoveInput& input, std::vector<torch::Tensor>& proposal);
// Every run of at most plan.size units on the critical path between two runs of one choice
// goes to that choice, all at once.
bool smooth(const MoveInput& input, std::vector<torch::Tensor>& proposal);
// The drawn unit's run on the critical path goes to the choice of the runs before and after
// it; where those two differ, to one of them sampled from the policy. Drawn off the path,
// the unit moves alone.
bool join(const MoveInput& input, std::vector<torch::Tensor>& proposal);
// plan.size drawn units move; of two or more, drawn on the critical path, the segment of
// the path around the first drawn unit goes to one choice (one transfer at each end), else
// each drawn unit moves alone.
bool segment(const MoveInput& input, std::vector<torch::Tensor>& proposal);
// At each change of choice along the critical path, the unit before it may take the choice
// after it, or the unit after it the choice before. The candidates ranked by the path's wait
// at the change (longest first; per change, the unit before first), candidate plan.size
// (modulo their number) moves.
bool shift(const MoveInput& input, std::vector<torch::Tensor>& proposal);
// Each choice's load is its units' work; the plan.size units of the busiest choice with the
// most data slack go to the least busy choice.
bool offload(const MoveInput& input, std::vector<torch::Tensor>& proposal);

}  // namespace goenv::agents::moves
