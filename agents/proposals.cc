#include "agents/proposals.h"

#include <algorithm>

#include "agents/config.h"
#include "core/error.h"

namespace goenv::agents::proposals {

std::int64_t critical_column(std::int64_t state_dim) {
  const auto& names = node_state_names(kPolicyObservationVersion);
  return state_dim - static_cast<std::int64_t>(names.size()) +
         (std::find(names.begin(), names.end(), "critical") - names.begin());
}

Focus focus_of(const GraphTensors& graph, const DynamicObservation& observation, std::int64_t state_dim) {
  const auto& names = node_state_names(kPolicyObservationVersion);
  GOENV_CHECK(state_dim >= static_cast<std::int64_t>(names.size()) &&
                  static_cast<std::int64_t>(observation.node_state.size()) == graph.num_nodes * state_dim,
              InvalidArgument, "focus_of: node_state has " << observation.node_state.size() << " values, not "
                                                           << graph.num_nodes << " nodes x " << state_dim << " columns");
  const torch::Tensor critical =
      torch::from_blob(const_cast<float*>(observation.node_state.data()), {graph.num_nodes, state_dim}, torch::kFloat32)
          .select(1, critical_column(state_dim))
          .to(torch::kFloat64);
  Focus f;
  f.nodes = critical * (1.0 - 1e-3) + 1e-3;
  const torch::Tensor order = graph.order.to(torch::kCPU);
  f.path_nodes = order.index({critical.index({order}) > 0.5});
  if (graph.unit.defined()) {
    const torch::Tensor unit = graph.unit.to(torch::kCPU);
    f.units = torch::full({graph.num_units}, 1e-3, torch::kFloat64).scatter_reduce(0, unit, f.nodes, "amax");
    // A group's place on the path: its first critical member's.
    std::vector<std::int64_t> seen(static_cast<std::size_t>(graph.num_units), 0), path;
    const torch::Tensor along = unit.index({f.path_nodes}).contiguous();
    for (const std::int64_t* u = along.data_ptr<std::int64_t>(); u != along.data_ptr<std::int64_t>() + along.numel(); ++u)
      if (!seen[static_cast<std::size_t>(*u)]) seen[static_cast<std::size_t>(*u)] = 1, path.push_back(*u);
    f.path_units = torch::tensor(path, torch::kInt64);
  }
  return f;
}

std::int64_t units_moved(std::int64_t k, std::int64_t budget) {
  if (k == 0 || k % 8 == 7) return 0;
  std::int64_t move = k - k / 8, size = 1;  // the moves alone count 1, 2, 3, ...: a ruler sequence
  while (move % 2 == 0 && size < kMostMoved) move /= 2, size *= 2;
  const std::int64_t opening = std::min(budget, kOpeningCalls);
  if (k < opening)  // at least 16 x (1 - k / opening) units: 15, 14, ... down to the ruler's sizes
    size = std::max(size, kMostMoved * (opening - k) / opening);
  return size;
}

std::vector<torch::Tensor> propose(const std::vector<torch::Tensor>& logits, const std::vector<torch::Tensor>& best,
                                   const Focus& focus, std::int64_t k, torch::Generator& generator, std::int64_t budget) {
  std::vector<torch::Tensor> out;
  if (units_moved(k, budget) == 0) {
    for (const auto& l : logits) out.push_back(sample_actions(l, k == 0, generator).to(torch::kCPU));
    return out;
  }
  for (const auto& b : best) out.push_back(b.clone());
  const std::size_t head = static_cast<std::size_t>(k) % logits.size();
  const torch::Tensor p = torch::softmax(logits[head][0].to(torch::kCPU).to(torch::kFloat64), -1);  // (U, C)
  const torch::Tensor current = out[head][0];                                                          // (U,)
  const std::int64_t units = p.size(0), moves = std::min(units, units_moved(k, budget));
  // Gumbel top-m over log((1 - p(current)) x focus): units without another allowed choice weigh 0.
  const torch::Tensor stay = p.gather(1, current.unsqueeze(1)).squeeze(1);
  const torch::Tensor uniform = torch::rand({units}, generator, torch::kFloat64).clamp_min(1e-12);
  const torch::Tensor key = torch::log((1.0 - stay).clamp_min(0.0) * focus.of(units)) - torch::log(-torch::log(uniform));
  const torch::Tensor chosen = std::get<1>(key.topk(moves));
  auto values = current.accessor<std::int64_t, 1>();
  // A choice for unit u other than its current one, sampled from the policy; -1 where it has none.
  auto elsewhere = [&](std::int64_t u) -> std::int64_t {
    torch::Tensor other = p[u].clone();
    other[values[u]] = 0.0;
    if (!(other.sum().item<double>() > 1e-12)) return -1;
    return torch::multinomial(other, 1, false, generator).item<std::int64_t>();
  };
  // A move of several units is a segment: the drawn unit and its neighbours on
  // the critical path, in topological order, all to one choice. Moving ops of a
  // chain one at a time adds a transfer at each end of every op moved; a segment
  // pays them once (at 1,024 calls: transformer-xl-2 40.3 -> 38.2 ms,
  // amoebanet 290 -> 268 ms, median of 3 seeds; segments of up to 16 rather
  // than 8: rnnlm-4 83.0 -> 79.5, inception-64 147.7 -> 144.3).
  const torch::Tensor path = focus.path_of(units);
  const torch::Tensor at = moves >= 2 ? (path == chosen[0]).nonzero() : torch::Tensor();
  // (Drawn off the path, at weight 1e-3, the units drawn move one by one instead.)
  if (moves >= 2 && at.size(0) > 0) {
    const std::int64_t c = elsewhere(chosen[0].item<std::int64_t>());
    if (c < 0) return out;
    const std::int64_t i = at[0][0].item<std::int64_t>(), length = path.size(0);
    const std::int64_t first = std::max<std::int64_t>(0, std::min(i - moves / 2, length - moves));
    auto along = path.accessor<std::int64_t, 1>();
    auto allowed = p.accessor<double, 2>();
    for (std::int64_t j = first; j < std::min(length, first + moves); ++j)
      if (allowed[along[j]][c] > 0) values[along[j]] = c;
    return out;
  }
  for (std::int64_t i = 0; i < moves; ++i) {
    const std::int64_t u = chosen[i].item<std::int64_t>();
    const std::int64_t c = elsewhere(u);
    if (c >= 0) values[u] = c;  // nowhere else to go: it stays
  }
  return out;
}

bool same_as(const std::vector<torch::Tensor>& proposal, const std::vector<torch::Tensor>& best) {
  for (std::size_t h = 0; h < proposal.size(); ++h)
    if (!torch::equal(proposal[h].view(-1), best[h].view(-1))) return false;
  return true;
}

}  // namespace goenv::agents::proposals
