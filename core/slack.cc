#include "core/slack.h"

#include <algorithm>
#include <numeric>

namespace goenv {

std::vector<double> schedule_slack(const Graph& g, const Cluster& cluster, const SimulationResult& r) {
  const int n = g.num_nodes();
  if (static_cast<int>(r.start.size()) != n || static_cast<int>(r.device.size()) != n) return {};
  std::vector<int> position(n);  // topological position breaks ties between equal start times
  for (int i = 0; i < n; ++i) position[g.topological_order()[i]] = i;
  // Latest first: successors (data or device order) start no earlier than their predecessors.
  std::vector<NodeId> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](NodeId a, NodeId b) {
    return r.start[a] != r.start[b] ? r.start[a] > r.start[b] : position[a] > position[b];
  });
  // Each node's predecessor on its device: the previous kernel in start order.
  std::vector<NodeId> device_previous(n, kNone), last_on(cluster.num_devices(), kNone);
  const auto same_kernel = [&](NodeId a, NodeId b) { return !r.kernel.empty() && r.kernel[a] == r.kernel[b]; };
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const NodeId v = *it;
    NodeId& last = last_on[r.device[v]];
    if (last != kNone) device_previous[v] = same_kernel(last, v) ? device_previous[last] : last;
    last = v;
  }
  std::vector<double> latest_finish(n, r.runtime), slack(n, 0.0);
  for (const NodeId v : order) {
    const double latest_start = latest_finish[v] - (r.finish[v] - r.start[v]);
    slack[v] = std::max(0.0, latest_start - r.start[v]);
    for (std::int32_t k = g.in_offsets()[v]; k < g.in_offsets()[v + 1]; ++k) {
      const std::int32_t e = g.in_edges()[k];
      const NodeId u = static_cast<NodeId>(g.edge_src()[e]);
      if (same_kernel(u, v)) {  // one fused kernel: they finish together
        latest_finish[u] = std::min(latest_finish[u], latest_finish[v]);
        continue;
      }
      const double transfer = r.device[u] == r.device[v] ? 0.0
                              : cluster.transfer_time(r.device[u], r.device[v], static_cast<double>(g.edge_bytes()[e]));
      latest_finish[u] = std::min(latest_finish[u], latest_start - transfer);
    }
    const NodeId p = device_previous[v];
    if (p != kNone) {
      const double gap = r.finish[p] > r.start[p] ? cluster.device(r.device[p]).op_gap : 0.0;
      latest_finish[p] = std::min(latest_finish[p], latest_start - gap);
    }
  }
  return slack;
}

}  // namespace goenv
