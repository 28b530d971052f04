#include "agents/weights.h"

#include "core/error.h"

namespace goenv::agents {

void FlatWeights::gather(torch::nn::Module& module, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  std::int64_t total = 0;
  for (const auto& p : module.parameters()) {
    GOENV_CHECK(p.scalar_type() == torch::kFloat32, Error, "policy parameters must be float32");
    total += p.numel();
  }
  torch::Tensor buffer = torch::empty({total}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  std::int64_t offset = 0;
  for (auto& p : module.parameters()) {
    torch::Tensor view = buffer.narrow(0, offset, p.numel()).view(p.sizes());
    view.copy_(p.detach());
    p.set_data(view);
    offset += p.numel();
  }
  flat_ = buffer;
  host_ = torch::Tensor();
}

const float* FlatWeights::data() {
  if (!flat_.is_cuda()) return flat_.data_ptr<float>();
  host_ = flat_.to(torch::kCPU).contiguous();
  return host_.data_ptr<float>();
}

std::shared_ptr<const float> FlatWeights::shared_data() {
  auto owner = std::make_shared<torch::Tensor>(flat_.is_cuda() ? flat_.to(torch::kCPU).contiguous() : flat_);
  return std::shared_ptr<const float>(owner, owner->data_ptr<float>());  // shares the tensor's storage
}

void FlatWeights::assign(const float* data) {
  torch::NoGradGuard no_grad;
  flat_.copy_(torch::from_blob(const_cast<float*>(data), {flat_.numel()}, torch::kFloat32));
}

bool FlatWeights::all_finite() const { return !flat_.defined() || torch::isfinite(flat_).all().item<bool>(); }

torch::Tensor FlatWeights::snapshot() const { return flat_.defined() ? flat_.clone() : torch::Tensor(); }

void FlatWeights::restore(const torch::Tensor& snapshot) {
  torch::NoGradGuard no_grad;
  if (flat_.defined() && snapshot.defined()) flat_.copy_(snapshot);
}

}  // namespace goenv::agents
