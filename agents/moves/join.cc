#include "agents/moves/move.h"
#include "agents/moves/runs.h"
#include "agents/moves/unit_draw.h"

namespace goenv::agents::moves {

bool join(const MoveInput& input, std::vector<torch::Tensor>& proposal) {
  const torch::Tensor& p = input.policy.probabilities[static_cast<std::size_t>(input.head)];  // (U, C)
  torch::Tensor current = proposal[static_cast<std::size_t>(input.head)][0];                 // (U,)
  const torch::Tensor& path = input.focus.path_of(p.size(0));
  UnitDraw draw(input, proposal, 1);
  const std::int64_t drawn = draw.unit(0);
  const std::int64_t at = position_of(path, drawn);
  if (at < 0) {  // drawn off the path (at weight 1e-3): it moves alone
    draw.move_each();
    return true;
  }
  Runs runs(path, current, p);
  const std::int64_t r = runs.of(at), last = runs.count() - 1;
  if (last == 0) return true;  // the whole path on one choice: nothing to join
  const std::int64_t a = runs.choice(r > 0 ? r - 1 : r + 1), b = runs.choice(r < last ? r + 1 : r - 1);
  const double weight_a = runs.allowed[drawn][a], weight_b = runs.allowed[drawn][b];
  const bool to_a =
      a == b || torch::rand({1}, input.generator, torch::kFloat64).item<double>() * (weight_a + weight_b) <= weight_a;
  runs.assign(r, to_a ? a : b);
  return true;
}

}  // namespace goenv::agents::moves
