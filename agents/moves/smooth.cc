#include "agents/moves/move.h"
#include "agents/moves/runs.h"

namespace goenv::agents::moves {

bool smooth(const MoveInput& input, std::vector<torch::Tensor>& proposal) {
  const torch::Tensor& p = input.policy.probabilities[static_cast<std::size_t>(input.head)];  // (U, C)
  torch::Tensor current = proposal[static_cast<std::size_t>(input.head)][0];                 // (U,)
  Runs runs(input.focus.path_of(p.size(0)), current, p);
  std::vector<std::int64_t> before;  // the choices before any run moves
  for (std::int64_t r = 0; r < runs.count(); ++r) before.push_back(runs.choice(r));
  for (std::int64_t r = 1; r + 1 < runs.count(); ++r)
    if (runs.length(r) <= input.plan.size && before[r - 1] == before[r + 1]) runs.assign(r, before[r - 1]);
  return true;
}

}  // namespace goenv::agents::moves
