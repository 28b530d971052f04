#include "agents/moves/move.h"

#include <algorithm>

namespace goenv::agents::moves {

bool offload(const MoveInput& input, std::vector<torch::Tensor>& proposal) {
  const torch::Tensor& p = input.policy.probabilities[static_cast<std::size_t>(input.head)];  // (U, C)
  torch::Tensor current = proposal[static_cast<std::size_t>(input.head)][0];                 // (U,)
  const std::int64_t units = p.size(0), choices = p.size(1);
  const auto slack = input.focus.slack_of(units).accessor<double, 1>();
  const auto work = input.focus.work_of(units).accessor<double, 1>();
  auto values = current.accessor<std::int64_t, 1>();
  const auto allowed = p.accessor<double, 2>();
  std::vector<double> busy(static_cast<std::size_t>(choices), 0.0);
  for (std::int64_t u = 0; u < units; ++u) busy[values[u]] += work[u];
  const std::int64_t from = std::max_element(busy.begin(), busy.end()) - busy.begin();
  std::int64_t to = -1;
  for (std::int64_t c = 0; c < choices; ++c)
    if (c != from && (to < 0 || busy[c] < busy[to])) to = c;
  std::vector<std::int64_t> candidates;
  for (std::int64_t u = 0; u < units; ++u)
    if (to >= 0 && values[u] == from && allowed[u][to] > 0) candidates.push_back(u);
  if (candidates.empty()) return false;  // a single choice, or nothing on the busiest may go
  const std::int64_t m = std::min<std::int64_t>(input.plan.size, static_cast<std::int64_t>(candidates.size()));
  std::partial_sort(candidates.begin(), candidates.begin() + m, candidates.end(),
                    [&](std::int64_t a, std::int64_t b) { return slack[a] != slack[b] ? slack[a] > slack[b] : a < b; });
  for (std::int64_t i = 0; i < m; ++i) values[candidates[i]] = to;
  return true;
}

}  // namespace goenv::agents::moves
