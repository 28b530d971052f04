// The units a join or a segment moves, and where each one goes: drawn with weight
// (1 - p(its current choice)) x focus (the units the policy most wants to change, on the
// critical path), and sent to another choice the policy samples. Past the opening the
// units beside the path's waits weigh more and may go across their wait instead
// (kWaitWeight, kAcrossShare in agents/budget_plan.h).
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "agents/moves/move.h"

namespace goenv::agents::moves {

class UnitDraw {
 public:
  // Draws `count` distinct units of head input.head of `proposal` (one uniform per unit, a
  // Gumbel top-count); units without another allowed choice weigh 0.
  UnitDraw(const MoveInput& input, std::vector<torch::Tensor>& proposal, std::int64_t count);
  // The i-th unit drawn (0: the most wanted).
  std::int64_t unit(std::int64_t i) const { return chosen_[static_cast<std::size_t>(i)]; }
  // A choice for unit u other than its current one: the one across its wait (kAcrossShare of
  // the time, where it has one), else sampled from the policy; -1 where it has none.
  std::int64_t elsewhere(std::int64_t u);
  // Every drawn unit to a choice elsewhere(), one by one (it stays where it has none).
  void move_each();

 private:
  torch::Tensor current_, p_;                     // the head's (U,) choices in the proposal, (U, C) probabilities
  torch::TensorAccessor<std::int64_t, 1> values_;  // current_'s
  torch::TensorAccessor<double, 2> allowed_;       // p_'s: > 0 where a choice is allowed
  torch::Generator& generator_;
  std::vector<std::int64_t> across_;  // per unit, the choice across its wait (-1: none); empty in the opening
  std::vector<std::int64_t> chosen_;  // the units drawn
  std::vector<double> other_;         // elsewhere()'s weights, per choice
};

}  // namespace goenv::agents::moves
