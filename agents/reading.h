// The policy's reading of the best decisions' observation, as policy-guided search's
// proposals use it: computed once per forward rather than once per proposal (a search
// makes hundreds of proposals per reading).
#pragma once

#include <utility>
#include <vector>

#include <torch/torch.h>

namespace goenv::agents::proposals {

// The masked logits per head (1, U, C), and their softmax per head (U, C) float64 on the CPU.
struct Reading {
  std::vector<torch::Tensor> logits, probabilities;
};

inline Reading read(std::vector<torch::Tensor> logits) {
  Reading r;
  for (const auto& l : logits) r.probabilities.push_back(torch::softmax(l[0].to(torch::kCPU).to(torch::kFloat64), -1));
  r.logits = std::move(logits);
  return r;
}

}  // namespace goenv::agents::proposals
