#include "agents/proposals.h"

#include <algorithm>

#include "agents/moves/move.h"

namespace goenv::agents::proposals {

namespace {

// The move of each kind, in Kind's order.
constexpr moves::Move kMoves[] = {moves::decision, moves::smooth, moves::join,
                                  moves::segment,  moves::shift,  moves::offload};
static_assert(std::size(kMoves) == static_cast<std::size_t>(Kind::kOffload) + 1, "one move per Kind");

// The plan of proposal k for these heads: the kinds that change the placement head become,
// without one, a decision (shift, offload) or a move of as many units (smooth, join).
Plan for_heads(const BudgetPlan& budget, std::int64_t k, std::int64_t placement_head) {
  const Plan planned = budget.at(k);
  if (placement_head >= 0 || planned.kind == Kind::kDecision || planned.kind == Kind::kMove) return planned;
  if (planned.kind == Kind::kShift || planned.kind == Kind::kOffload) return {Kind::kDecision, 0};
  return {Kind::kMove, budget.moved_at(k)};
}

}  // namespace

std::vector<torch::Tensor> propose(const std::vector<torch::Tensor>& logits, const std::vector<torch::Tensor>& best,
                                   const Focus& focus, std::int64_t k, torch::Generator& generator, std::int64_t budget,
                                   std::int64_t placement_head) {
  return propose(read(logits), best, focus, BudgetPlan(budget), k, generator, placement_head);
}

std::vector<torch::Tensor> propose(const Reading& policy, const std::vector<torch::Tensor>& best, const Focus& focus,
                                   const BudgetPlan& budget, std::int64_t k, torch::Generator& generator,
                                   std::int64_t placement_head) {
  const Plan planned = for_heads(budget, k, placement_head);
  const std::int64_t heads = static_cast<std::int64_t>(policy.logits.size());
  const std::int64_t head = planned.kind == Kind::kMove ? k % heads : placement_head;
  const moves::MoveInput input{policy, focus, planned, k, head, !budget.in_opening(k), generator};
  std::vector<torch::Tensor> proposal;
  if (planned.kind != Kind::kDecision)
    for (const auto& b : best) proposal.push_back(b.clone());
  if (!kMoves[static_cast<std::size_t>(planned.kind)](input, proposal)) moves::decision(input, proposal);
  return proposal;
}

bool same_as(const std::vector<torch::Tensor>& proposal, const std::vector<torch::Tensor>& best) {
  for (std::size_t h = 0; h < proposal.size(); ++h) {
    const torch::Tensor& a = proposal[h];
    const torch::Tensor& b = best[h];
    if (a.scalar_type() == torch::kInt64 && b.scalar_type() == torch::kInt64 && a.is_cpu() && b.is_cpu() &&
        a.is_contiguous() && b.is_contiguous()) {  // a search's case: compared in place
      if (a.numel() != b.numel() ||
          !std::equal(a.data_ptr<std::int64_t>(), a.data_ptr<std::int64_t>() + a.numel(), b.data_ptr<std::int64_t>()))
        return false;
    } else if (!torch::equal(a.view(-1), b.view(-1))) {
      return false;
    }
  }
  return true;
}

}  // namespace goenv::agents::proposals
