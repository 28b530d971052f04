#include "envs/placement_heuristics.h"

#include <algorithm>
#include <map>

namespace goenv {

std::vector<std::int32_t> single_device_placement(const Graph& graph, int device) {
  return std::vector<std::int32_t>(graph.num_nodes(), device);
}

void repair_placement(const Graph& graph, const Cluster& cluster, std::vector<std::int32_t>& placement) {
  const int n = graph.num_nodes(), num_devices = cluster.num_devices();
  std::vector<std::vector<int>> votes(graph.num_colocation_groups(), std::vector<int>(num_devices, 0));
  for (NodeId v = 0; v < n; ++v)
    if (graph.colocation()[v] != kNone) ++votes[graph.colocation()[v]][placement[v]];
  for (NodeId v = 0; v < n; ++v) {
    const auto c = graph.colocation()[v];
    if (c != kNone)
      placement[v] = static_cast<std::int32_t>(std::max_element(votes[c].begin(), votes[c].end()) - votes[c].begin());
    if (!graph.allows(v, cluster.device(placement[v]).kind))
      for (int d = 0; d < num_devices; ++d)
        if (graph.allows(v, cluster.device(d).kind)) {
          placement[v] = d;
          break;
        }
  }
}

std::vector<std::int32_t> expert_placement(const Graph& graph, const Cluster& cluster) {
  const int n = graph.num_nodes(), num_devices = cluster.num_devices();
  const auto& order = graph.topological_order();
  // Layer groups in the order the forward pass first reaches them; their compute.
  std::vector<int> group_rank(graph.num_groups(), -1);
  std::vector<double> group_flops;
  for (NodeId v : order) {
    const auto g = graph.group()[v];
    if (g == kNone) continue;
    if (group_rank[g] == -1) {
      group_rank[g] = static_cast<int>(group_flops.size());
      group_flops.push_back(0);
    }
    group_flops[group_rank[g]] += graph.flops()[v];
  }
  double total = 0;
  for (double f : group_flops) total += f;
  std::vector<std::int32_t> device_of_rank(group_flops.size(), 0);
  double before = 0;
  for (std::size_t r = 0; r < group_flops.size(); ++r) {
    const double middle = before + group_flops[r] / 2;  // a group goes where its middle falls
    device_of_rank[r] = total > 0 ? std::min(num_devices - 1, static_cast<int>(middle / total * num_devices)) : 0;
    before += group_flops[r];
  }
  std::vector<std::int32_t> placement(n, -1);
  for (NodeId v = 0; v < n; ++v)
    if (graph.group()[v] != kNone) placement[v] = device_of_rank[group_rank[graph.group()[v]]];
  // Ungrouped nodes: follow a placed producer, else a placed consumer, else device 0.
  for (NodeId v : order)
    for (int i = graph.in_offsets()[v]; i < graph.in_offsets()[v + 1] && placement[v] == -1; ++i)
      placement[v] = placement[graph.edge_src()[graph.in_edges()[i]]];
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    for (int e = graph.out_offsets()[*it]; e < graph.out_offsets()[*it + 1] && placement[*it] == -1; ++e)
      placement[*it] = placement[graph.edge_dst()[e]];
  for (auto& p : placement) p = std::max(p, 0);
  repair_placement(graph, cluster, placement);
  return placement;
}

}  // namespace goenv
