// The policy's parameters as one contiguous float32 buffer plus a version
// (docs/distributed.md): weights travel between a learner and its rollout workers as one
// array, without packing, and the version tags every rollout.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>

namespace goenv::agents {

class FlatWeights {
 public:
  // Moves every parameter of `module` into one buffer on `device` and makes
  // each a view of its slice; an optimizer built on the module keeps the same
  // tensors. Loading a checkpoint replaces parameter storage: gather again after.
  void gather(torch::nn::Module& module, const torch::Device& device);
  std::int64_t size() const { return flat_.defined() ? flat_.numel() : 0; }
  // On CPU a live view of the parameters; on CUDA a host copy made by this call.
  const float* data();
  // The same floats, kept alive by the pointer itself: a later load (which replaces the
  // parameters' storage) or another call on CUDA leaves them valid (then stale, not freed).
  std::shared_ptr<const float> shared_data();
  // Copies `size()` floats into the parameters.
  void assign(const float* data);
  // Whether every parameter is finite (an update or a file can make them NaN or infinite).
  bool all_finite() const;
  // A copy of the parameters, and putting one back (an update that failed is undone).
  torch::Tensor snapshot() const;
  void restore(const torch::Tensor& snapshot);

  std::int64_t version = 0;  // updates the parameters went through

 private:
  torch::Tensor flat_;  // every parameter, on the policy's device
  torch::Tensor host_;  // CUDA: the host copy data() hands out
};

}  // namespace goenv::agents
