#include "agents/moves/move.h"
#include "agents/policy.h"

namespace goenv::agents::moves {

bool decision(const MoveInput& input, std::vector<torch::Tensor>& proposal) {
  proposal.clear();
  for (const auto& l : input.policy.logits) proposal.push_back(sample_actions(l, input.k == 0, input.generator).to(torch::kCPU));
  return true;
}

}  // namespace goenv::agents::moves
