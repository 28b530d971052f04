#include "agents/moves/unit_draw.h"

#include <algorithm>
#include <tuple>

namespace goenv::agents::moves {

namespace {

// The move weights past the opening: focus, raised to 1 + kWaitWeight x wait / (the mean of
// the path's waits) for the two units on either side of each wait; and per unit, the choice
// on the other side of its wait (-1 for units beside none; the longer wait's where two).
void wait_weights(const proposals::Focus& focus, std::int64_t units, const torch::TensorAccessor<std::int64_t, 1>& values,
                  std::vector<double>& weight, std::vector<std::int64_t>& across) {
  across.assign(static_cast<std::size_t>(units), -1);
  const double mean = focus.mean_wait_of(units);
  if (!(mean > 0)) return;
  const torch::Tensor& path = focus.path_of(units);
  const auto wait = focus.wait_of(units).accessor<double, 1>();
  const auto along = path.accessor<std::int64_t, 1>();
  for (std::int64_t i = 1; i < path.size(0); ++i) {
    if (!(wait[i] > 0)) continue;
    const double raised = 1.0 + proposals::kWaitWeight * wait[i] / mean;
    const std::int64_t before = along[i - 1], after = along[i];
    if (raised > weight[before]) weight[before] = raised, across[before] = values[after];
    if (raised > weight[after]) weight[after] = raised, across[after] = values[before];
  }
}

}  // namespace

UnitDraw::UnitDraw(const MoveInput& input, std::vector<torch::Tensor>& proposal, std::int64_t count)
    : current_(proposal[static_cast<std::size_t>(input.head)][0]),
      p_(input.policy.probabilities[static_cast<std::size_t>(input.head)]),
      values_(current_.accessor<std::int64_t, 1>()),
      allowed_(p_.accessor<double, 2>()),
      generator_(input.generator),
      other_(static_cast<std::size_t>(p_.size(1))) {
  const std::int64_t units = p_.size(0);
  const auto focus_weight = input.focus.of(units).accessor<double, 1>();
  std::vector<double> weight(static_cast<std::size_t>(units));
  for (std::int64_t u = 0; u < units; ++u) weight[u] = focus_weight[u];
  if (input.past_opening) wait_weights(input.focus, units, values_, weight, across_);
  // Gumbel top-count over log((1 - p(current)) x weight). The products are the tensor
  // expression's, value for value; the logarithms stay torch's.
  std::vector<double> moving(static_cast<std::size_t>(units));
  for (std::int64_t u = 0; u < units; ++u) moving[u] = std::max(1.0 - allowed_[u][values_[u]], 0.0) * weight[u];
  const torch::Tensor uniform = torch::rand({units}, generator_, torch::kFloat64).clamp_min(1e-12);
  const torch::Tensor key = torch::log(torch::from_blob(moving.data(), {units}, torch::kFloat64)) -
                            torch::log(-torch::log(uniform));
  const torch::Tensor chosen = std::get<1>(key.topk(count)).contiguous();
  chosen_.assign(chosen.data_ptr<std::int64_t>(), chosen.data_ptr<std::int64_t>() + chosen.numel());
}

std::int64_t UnitDraw::elsewhere(std::int64_t u) {
  if (!across_.empty() && across_[u] >= 0 && across_[u] != values_[u] && allowed_[u][across_[u]] > 0 &&
      torch::rand({1}, generator_, torch::kFloat64).item<double>() < proposals::kAcrossShare)
    return across_[u];
  const std::int64_t choices = p_.size(1);
  double total = 0;
  for (std::int64_t c = 0; c < choices; ++c) total += other_[c] = c == values_[u] ? 0.0 : allowed_[u][c];
  if (!(total > 1e-12)) return -1;
  return torch::multinomial(torch::from_blob(other_.data(), {choices}, torch::kFloat64), 1, false, generator_)
      .item<std::int64_t>();
}

void UnitDraw::move_each() {
  for (const std::int64_t u : chosen_) {
    const std::int64_t c = elsewhere(u);
    if (c >= 0) values_[u] = c;
  }
}

}  // namespace goenv::agents::moves
