#include "agents/moves/move.h"

#include <algorithm>

#include "agents/moves/runs.h"
#include "agents/moves/unit_draw.h"

namespace goenv::agents::moves {

// Moving ops of a chain one at a time adds a transfer at each end of every op moved; a
// segment of the critical path, all to one choice, pays them once.
bool segment(const MoveInput& input, std::vector<torch::Tensor>& proposal) {
  const torch::Tensor& p = input.policy.probabilities[static_cast<std::size_t>(input.head)];  // (U, C)
  torch::Tensor current = proposal[static_cast<std::size_t>(input.head)][0];                 // (U,)
  const torch::Tensor& path = input.focus.path_of(p.size(0));
  const std::int64_t moves = std::min(p.size(0), input.plan.size);
  UnitDraw draw(input, proposal, moves);
  const std::int64_t drawn = draw.unit(0);
  const std::int64_t at = moves >= 2 ? position_of(path, drawn) : -1;
  if (at < 0) {  // one unit, or drawn off the path (at weight 1e-3): the drawn units move one by one
    draw.move_each();
    return true;
  }
  const std::int64_t c = draw.elsewhere(drawn);
  if (c < 0) return true;
  const std::int64_t length = path.size(0);
  const std::int64_t first = std::max<std::int64_t>(0, std::min(at - moves / 2, length - moves));
  const auto along = path.accessor<std::int64_t, 1>();
  auto values = current.accessor<std::int64_t, 1>();
  const auto allowed = p.accessor<double, 2>();
  for (std::int64_t j = first; j < std::min(length, first + moves); ++j)
    if (allowed[along[j]][c] > 0) values[along[j]] = c;
  return true;
}

}  // namespace goenv::agents::moves
