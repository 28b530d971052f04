#include "agents/budget_plan.h"

#include <algorithm>

namespace goenv::agents::proposals {

std::int64_t units_moved(std::int64_t k, std::int64_t budget) {
  if (k == 0 || k % 8 == 7) return 0;
  std::int64_t move = k - k / 8, size = 1;  // the moves alone count 1, 2, 3, ...: a ruler sequence
  while (move % 2 == 0 && size < kMostMoved) move /= 2, size *= 2;
  const std::int64_t opening = std::min(budget, kOpeningCalls);
  if (k < opening)  // at least 16 x (1 - k / opening) units: 15, 14, ... down to the ruler's sizes
    size = std::max(size, kMostMoved * (opening - k) / opening);
  return size;
}

Plan plan(std::int64_t k, std::int64_t budget) {
  if (k < std::min(budget, kOpeningCalls))
    for (const LoadMove& move : kLoadMoves)
      if (move.k == k) return {move.kind, move.size};
  const std::int64_t size = units_moved(k, budget);
  if (size == 0) return {Kind::kDecision, 0};
  const std::int64_t move = k - k / 8;  // 1, 2, 3, ... over the moves alone
  if (k < std::min(budget, kOpeningCalls)) {
    if (move <= kSmoothings) return {Kind::kSmooth, std::int64_t{1} << (move - 1)};
    if (move % 2 == 0) return {Kind::kJoin, 0};
  }
  return {Kind::kMove, size};
}

BudgetPlan::BudgetPlan(std::int64_t budget) {
  const std::int64_t opening = std::max<std::int64_t>(0, std::min(budget, kOpeningCalls));
  for (std::int64_t k = 0; k < opening; ++k) opening_.push_back({plan(k, budget), units_moved(k, budget)});
}

// Past the opening the budget changes nothing: plan(k, budget) is plan(k) there.
Plan BudgetPlan::at(std::int64_t k) const { return in_opening(k) ? opening_[static_cast<std::size_t>(k)].plan : plan(k); }

std::int64_t BudgetPlan::moved_at(std::int64_t k) const {
  return in_opening(k) ? opening_[static_cast<std::size_t>(k)].moved : units_moved(k);
}

}  // namespace goenv::agents::proposals
