#include "core/lower_bound.h"

#include <algorithm>
#include <limits>

#include "core/cost_model.h"

namespace goenv {

LowerBound lower_bound(const Graph& graph, const Cluster& cluster) {
  const auto touched = bytes_touched(graph);
  const int n = graph.num_nodes();
  std::vector<double> fastest(n, std::numeric_limits<double>::infinity());
  for (NodeId v = 0; v < n; ++v) {
    for (const Device& d : cluster.devices())
      if (graph.allows(v, d.kind)) fastest[v] = std::min(fastest[v], op_cost(graph, touched, v, d));
    if (fastest[v] == std::numeric_limits<double>::infinity()) fastest[v] = 0;  // runs nowhere: no bound
  }
  LowerBound lb;
  std::vector<double> finish(n, 0);
  for (NodeId v : graph.topological_order()) {
    double ready = 0;
    for (int i = graph.in_offsets()[v]; i < graph.in_offsets()[v + 1]; ++i)
      ready = std::max(ready, finish[graph.edge_src()[graph.in_edges()[i]]]);
    finish[v] = ready + fastest[v];
    lb.critical_path = std::max(lb.critical_path, finish[v]);
    lb.work += fastest[v];
  }
  lb.work /= cluster.num_devices();
  lb.value = std::max(lb.critical_path, lb.work);
  return lb;
}

}  // namespace goenv
