// Baechi's memory-constrained placers (Jeon et al., "Baechi: Fast Device
// Placement of Machine Learning Graphs", SoCC 2020):
//  * m-TOPO walks the ops in topological order and fills one device after the
//    other up to its balanced share of compute and memory;
//  * m-ETF is earliest-task-first list scheduling: repeatedly the (ready op,
//    device) pair that can start earliest, counting transfer times, among the
//    devices with memory left.
// Memory follows Baechi's conservative estimate: an op holds its parameters and
// its output for the whole step. When an op fits nowhere it goes where it
// would without the limit (the result is then flagged OOM if it really is).
// Colocation groups move as one: their memory is reserved when the first member
// is placed, and the rest follow it.
#include <algorithm>
#include <functional>
#include <limits>
#include <queue>

#include "core/error.h"
#include "envs/baselines/baseline.h"

namespace goenv {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double footprint(const Graph& g, NodeId v) {
  return static_cast<double>(g.param_bytes()[v] + g.output_bytes()[v]);
}

Solution m_topo(Problem& p) {
  const Graph& g = p.graph();
  const CostTable& costs = p.costs();
  const Units& units = p.units();
  const int num_devices = costs.num_devices();
  std::vector<double> work(units.size(), 0.0), memory(units.size(), 0.0);
  double total_work = 0, total_memory = 0;
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    work[units.unit[v]] += costs.mean_cost(v);
    memory[units.unit[v]] += footprint(g, v);
    total_work += costs.mean_cost(v);
    total_memory += footprint(g, v);
  }
  // Balanced shares: compute by device speed, memory by capacity.
  const std::vector<double> share = device_shares(g, costs);
  double capacity = 0;
  for (const Device& d : p.cluster().devices()) capacity += d.memory_bytes;
  std::vector<double> used_work(num_devices, 0.0), used_memory(num_devices, 0.0);
  const auto full = [&](int d, int u) {  // d holds its share once u's middle would fall past it
    const bool empty = used_work[d] == 0 && used_memory[d] == 0;
    return !empty && (used_work[d] + work[u] / 2 > share[d] * total_work ||
                      used_memory[d] + memory[u] / 2 > p.cluster().device(d).memory_bytes / capacity * total_memory);
  };
  std::vector<std::int32_t> unit_device(units.size(), 0);
  int current = 0;
  for (int u = 0; u < units.size(); ++u) {  // units are in topological order
    while (current + 1 < num_devices && full(current, u)) ++current;
    const auto fits = [&](int d) {
      return units.allows(u, d) &&
             used_memory[d] + memory[u] <= p.cluster().device(d).memory_bytes;
    };
    int d = current;
    for (int k = 0; k < num_devices && !fits(d); ++k) d = (current + k + 1) % num_devices;
    if (!fits(d)) {  // nowhere: the allowed device with the most memory left
      d = current;
      double most = -kInf;
      for (int e = 0; e < num_devices; ++e) {
        const double left = p.cluster().device(e).memory_bytes - used_memory[e];
        if (units.allows(u, e) && left > most) most = left, d = e;
      }
    }
    unit_device[u] = d;
    used_work[d] += work[u];
    used_memory[d] += memory[u];
  }
  std::vector<std::int32_t> placement(g.num_nodes());
  for (NodeId v = 0; v < g.num_nodes(); ++v) placement[v] = unit_device[units.unit[v]];
  return with_placement(p, std::move(placement));
}

Solution m_etf(Problem& p) {
  const Graph& g = p.graph();
  const CostTable& costs = p.costs();
  const Units& units = p.units();
  const int n = g.num_nodes(), num_devices = costs.num_devices();
  std::vector<double> unit_memory(units.size(), 0.0);
  for (NodeId v = 0; v < n; ++v) unit_memory[units.unit[v]] += footprint(g, v);
  std::vector<int> position(n);
  for (int i = 0; i < n; ++i) position[g.topological_order()[i]] = i;

  // Per device, the ready ops by data-arrival time there (ties: topological order).
  struct Entry {
    double arrival;
    int position;
    NodeId node;
    bool operator>(const Entry& o) const { return arrival != o.arrival ? arrival > o.arrival : position > o.position; }
  };
  std::vector<std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>>> ready(num_devices);
  std::vector<std::int32_t> device(n, kNone), unit_device(units.size(), kNone), pending(n), queued(n, 0);
  std::vector<char> unlimited(n, 0);  // fits nowhere: placed ignoring memory
  std::vector<double> finish(n, 0.0), free_at(num_devices, 0.0), used(num_devices, 0.0);

  const auto arrival = [&](NodeId v, int d) {
    double t = 0;
    for (int i = g.in_offsets()[v]; i < g.in_offsets()[v + 1]; ++i) {
      const int e = g.in_edges()[i];
      const auto src = static_cast<NodeId>(g.edge_src()[e]);
      t = std::max(t, finish[src] + costs.transfer(device[src], d, static_cast<double>(g.edge_bytes()[e])));
    }
    return t;
  };
  const auto enqueue = [&](NodeId v) {
    const int u = units.unit[v];
    for (int d = 0; d < num_devices; ++d)
      if (unit_device[u] == kNone ? units.allows(u, d) : unit_device[u] == d) {
        ready[d].push({arrival(v, d), position[v], v});
        ++queued[v];
      }
    if (queued[v] == 0)  // no device allows every member: any device, repair settles it
      for (int d = 0; d < num_devices; ++d) ready[d].push({arrival(v, d), position[v], v}), ++queued[v];
  };
  // Whether v may go on d now; drops v from d's queue for good when not (memory only fills up).
  const auto usable = [&](NodeId v, int d) {
    const int u = units.unit[v];
    if (unit_device[u] == d) return true;  // its group's memory is reserved there
    return unit_device[u] == kNone &&
           (unlimited[v] || used[d] + unit_memory[u] <= p.cluster().device(d).memory_bytes);
  };

  for (NodeId v = 0; v < n; ++v) {
    pending[v] = g.in_offsets()[v + 1] - g.in_offsets()[v];
    if (pending[v] == 0) enqueue(v);
  }
  for (int placed = 0; placed < n; ++placed) {
    int best = kNone;
    double best_start = kInf;
    for (int d = 0; d < num_devices; ++d) {
      auto& queue = ready[d];
      while (!queue.empty()) {
        const NodeId v = queue.top().node;
        if (device[v] != kNone) {
          queue.pop();
        } else if (!usable(v, d)) {
          queue.pop();
          if (--queued[v] == 0) unlimited[v] = 1, enqueue(v);
        } else {
          break;
        }
      }
      if (queue.empty()) continue;
      const double start = std::max(free_at[d], queue.top().arrival);
      if (start < best_start) best_start = start, best = d;
    }
    GOENV_CHECK(best != kNone, Error, "m-ETF: no ready op left with " << n - placed << " ops unplaced");
    const NodeId v = ready[best].top().node;
    ready[best].pop();
    const int u = units.unit[v];
    if (unit_device[u] == kNone) unit_device[u] = best, used[best] += unit_memory[u];
    device[v] = best;
    finish[v] = best_start + costs.cost(v, best);
    free_at[best] = best_start + costs.busy(v, best);
    for (int e = g.out_offsets()[v]; e < g.out_offsets()[v + 1]; ++e)
      if (--pending[g.edge_dst()[e]] == 0) enqueue(static_cast<NodeId>(g.edge_dst()[e]));
  }
  return with_placement(p, std::move(device));
}

}  // namespace
}  // namespace goenv

GOENV_REGISTER_BASELINE(kMTopoRegistered,
                        {/*name=*/"m-topo",
                         /*heads=*/{goenv::Head::kPlacement},
                         /*description=*/"Baechi m-TOPO: topological order, balanced compute and memory per device",
                         /*solve=*/goenv::m_topo})
GOENV_REGISTER_BASELINE(kMEtfRegistered,
                        {/*name=*/"m-etf",
                         /*heads=*/{goenv::Head::kPlacement},
                         /*description=*/"Baechi m-ETF: earliest-start list scheduling under memory limits",
                         /*solve=*/goenv::m_etf})
