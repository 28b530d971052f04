// The plan of a search's budget (agents/budget_plan.h), computed once per search, is
// plan(k, budget) and units_moved(k, budget) for every proposal k.
#include <gtest/gtest.h>

#include <cstdint>

#include "agents/budget_plan.h"

namespace goenv::agents::proposals {
namespace {

TEST(BudgetPlan, IsThePlanOfEveryProposalOfItsBudget) {
  for (std::int64_t budget : {0, 1, 7, 16, 31, 32, 33, 99, 1024}) {
    const BudgetPlan planned(budget);
    EXPECT_EQ(planned.opening(), budget < kOpeningCalls ? budget : kOpeningCalls) << "budget " << budget;
    for (std::int64_t k = 0; k < 300; ++k) {
      const Plan expected = plan(k, budget), got = planned.at(k);
      EXPECT_EQ(got.kind, expected.kind) << "budget " << budget << ", k = " << k;
      EXPECT_EQ(got.size, expected.size) << "budget " << budget << ", k = " << k;
      EXPECT_EQ(planned.moved_at(k), units_moved(k, budget)) << "budget " << budget << ", k = " << k;
      EXPECT_EQ(planned.in_opening(k), k < planned.opening());
    }
  }
}

TEST(BudgetPlan, TheOpeningHoldsEveryKindAndThenOnlyMovesAndDecisions) {
  const BudgetPlan planned(1024);
  bool seen[6] = {};
  for (std::int64_t k = 0; k < planned.opening(); ++k) seen[static_cast<int>(planned.at(k).kind)] = true;
  for (bool kind : seen) EXPECT_TRUE(kind);
  for (std::int64_t k = planned.opening(); k < 2000; ++k) {
    const Kind kind = planned.at(k).kind;
    EXPECT_TRUE(kind == Kind::kMove || kind == Kind::kDecision) << "k = " << k;
  }
}

}  // namespace
}  // namespace goenv::agents::proposals
