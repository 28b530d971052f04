#include "agents/moves/move.h"

#include <algorithm>

#include "agents/moves/runs.h"

namespace goenv::agents::moves {

bool shift(const MoveInput& input, std::vector<torch::Tensor>& proposal) {
  const torch::Tensor& p = input.policy.probabilities[static_cast<std::size_t>(input.head)];  // (U, C)
  torch::Tensor current = proposal[static_cast<std::size_t>(input.head)][0];                 // (U,)
  const std::int64_t units = p.size(0);
  Runs runs(input.focus.path_of(units), current, p);
  const auto wait = input.focus.wait_of(units).accessor<double, 1>();
  struct Candidate {
    double wait;
    std::int64_t unit, choice;
  };
  std::vector<Candidate> candidates;  // in path order, the unit before each change first
  for (std::int64_t r = 1; r < runs.count(); ++r) {
    const std::int64_t at = runs.starts[static_cast<std::size_t>(r)];
    const std::int64_t before = runs.path[at - 1], after = runs.path[at];
    if (runs.allowed[before][runs.choice(r)] > 0) candidates.push_back({wait[at], before, runs.choice(r)});
    if (runs.allowed[after][runs.choice(r - 1)] > 0) candidates.push_back({wait[at], after, runs.choice(r - 1)});
  }
  if (candidates.empty()) return false;  // the whole path on one choice
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.wait > b.wait; });
  const Candidate& chosen = candidates[static_cast<std::size_t>(input.plan.size) % candidates.size()];
  runs.values[chosen.unit] = chosen.choice;
  return true;
}

}  // namespace goenv::agents::moves
