#include "core/lower_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/cost_model.h"

namespace goenv {

namespace {

// What a fusible op costs at least inside any kernel on device d (lower_bound.h).
double fused_share(const Graph& graph, NodeId v, const Device& d) {
  const double compute = graph.flops()[v] / d.peak_flops;
  const double measured = graph.cost()[v * kNumDeviceKinds + static_cast<int>(d.kind)];
  return std::isnan(measured) ? compute : std::min(measured, compute);
}

}  // namespace

LowerBound lower_bound(const Graph& graph, const Cluster& cluster, bool fusion) {
  const auto touched = bytes_touched(graph);
  const int n = graph.num_nodes();
  std::vector<double> fastest(n, std::numeric_limits<double>::infinity());
  for (NodeId v = 0; v < n; ++v) {
    const bool fusible = fusion && graph.fusible(v) != FusibleKind::kOpaque;
    for (const Device& d : cluster.devices())
      if (graph.allows(v, d.kind))
        fastest[v] = std::min(fastest[v], fusible ? fused_share(graph, v, d) : op_cost(graph, touched, v, d));
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
