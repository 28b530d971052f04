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
  if (graph.unit.defined())
    f.units = torch::full({graph.num_units}, 1e-3, torch::kFloat64).scatter_reduce(0, graph.unit.to(torch::kCPU), f.nodes, "amax");
  return f;
}

std::int64_t units_moved(std::int64_t k) {
  if (k == 0 || k % 8 == 7) return 0;
  std::int64_t move = k - k / 8, size = 1;  // the moves alone count 1, 2, 3, ...: a ruler sequence
  while (move % 2 == 0 && size < 8) move /= 2, size *= 2;
  return size;
}

std::vector<torch::Tensor> propose(const std::vector<torch::Tensor>& logits, const std::vector<torch::Tensor>& best,
                                   const Focus& focus, std::int64_t k, torch::Generator& generator) {
  std::vector<torch::Tensor> out;
  if (units_moved(k) == 0) {
    for (const auto& l : logits) out.push_back(sample_actions(l, k == 0, generator).to(torch::kCPU));
    return out;
  }
  for (const auto& b : best) out.push_back(b.clone());
  const std::size_t head = static_cast<std::size_t>(k) % logits.size();
  const torch::Tensor p = torch::softmax(logits[head][0].to(torch::kCPU).to(torch::kFloat64), -1);  // (U, C)
  const torch::Tensor current = out[head][0];                                                          // (U,)
  const std::int64_t units = p.size(0), moves = std::min(units, units_moved(k));
  // Gumbel top-m over log((1 - p(current)) x focus): units without another allowed choice weigh 0.
  const torch::Tensor stay = p.gather(1, current.unsqueeze(1)).squeeze(1);
  const torch::Tensor uniform = torch::rand({units}, generator, torch::kFloat64).clamp_min(1e-12);
  const torch::Tensor key = torch::log((1.0 - stay).clamp_min(0.0) * focus.of(units)) - torch::log(-torch::log(uniform));
  const torch::Tensor chosen = std::get<1>(key.topk(moves));
  auto values = current.accessor<std::int64_t, 1>();
  for (std::int64_t i = 0; i < moves; ++i) {
    const std::int64_t u = chosen[i].item<std::int64_t>();
    torch::Tensor other = p[u].clone();
    other[values[u]] = 0.0;
    if (!(other.sum().item<double>() > 1e-12)) continue;  // nowhere else to go
    values[u] = torch::multinomial(other, 1, false, generator).item<std::int64_t>();
  }
  return out;
}

bool same_as(const std::vector<torch::Tensor>& proposal, const std::vector<torch::Tensor>& best) {
  for (std::size_t h = 0; h < proposal.size(); ++h)
    if (!torch::equal(proposal[h].view(-1), best[h].view(-1))) return false;
  return true;
}

}  // namespace goenv::agents::proposals
