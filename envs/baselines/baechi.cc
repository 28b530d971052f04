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

// m-ETF's state: per device, the ready ops by data-arrival time there (ties: topological
// order), and what is placed, where, and when it finishes.
class MEtf {
 public:
  explicit MEtf(Problem& p)
      : p_(p), g_(p.graph()), costs_(p.costs()), units_(p.units()), n_(g_.num_nodes()),
        num_devices_(costs_.num_devices()), unit_memory_(units_.size(), 0.0), position_(n_), ready_(num_devices_),
        device_(n_, kNone), unit_device_(units_.size(), kNone), pending_(n_), queued_(n_, 0), unlimited_(n_, 0),
        finish_(n_, 0.0), free_at_(num_devices_, 0.0), used_(num_devices_, 0.0) {
    for (NodeId v = 0; v < n_; ++v) unit_memory_[units_.unit[v]] += footprint(g_, v);
    for (int i = 0; i < n_; ++i) position_[g_.topological_order()[i]] = i;
  }

  Solution run() {
    for (NodeId v = 0; v < n_; ++v) {
      pending_[v] = g_.in_offsets()[v + 1] - g_.in_offsets()[v];
      if (pending_[v] == 0) enqueue(v);
    }
    for (int placed = 0; placed < n_; ++placed) {
      double start = kInf;
      const int best = earliest_device(start);
      GOENV_CHECK(best != kNone, Error, "m-ETF: no ready op left with " << n_ - placed << " ops unplaced");
      const NodeId v = ready_[best].top().node;
      ready_[best].pop();
      const int u = units_.unit[v];
      if (unit_device_[u] == kNone) unit_device_[u] = best, used_[best] += unit_memory_[u];
      device_[v] = best;
      finish_[v] = start + costs_.cost(v, best);
      free_at_[best] = start + costs_.busy(v, best);
      for (int e = g_.out_offsets()[v]; e < g_.out_offsets()[v + 1]; ++e)
        if (--pending_[g_.edge_dst()[e]] == 0) enqueue(static_cast<NodeId>(g_.edge_dst()[e]));
    }
    return with_placement(p_, std::move(device_));
  }

 private:
  struct Entry {
    double arrival;
    int position;
    NodeId node;
    bool operator>(const Entry& o) const { return arrival != o.arrival ? arrival > o.arrival : position > o.position; }
  };

  double arrival(NodeId v, int d) const {
    double t = 0;
    for (int i = g_.in_offsets()[v]; i < g_.in_offsets()[v + 1]; ++i) {
      const int e = g_.in_edges()[i];
      const auto src = static_cast<NodeId>(g_.edge_src()[e]);
      t = std::max(t, finish_[src] + costs_.transfer(device_[src], d, static_cast<double>(g_.edge_bytes()[e])));
    }
    return t;
  }

  void enqueue(NodeId v) {
    const int u = units_.unit[v];
    for (int d = 0; d < num_devices_; ++d)
      if (unit_device_[u] == kNone ? units_.allows(u, d) : unit_device_[u] == d) {
        ready_[d].push({arrival(v, d), position_[v], v});
        ++queued_[v];
      }
    if (queued_[v] == 0)  // no device allows every member: any device, repair settles it
      for (int d = 0; d < num_devices_; ++d) ready_[d].push({arrival(v, d), position_[v], v}), ++queued_[v];
  }

  // Whether v may go on d now; drops v from d's queue for good when not (memory only fills up).
  bool usable(NodeId v, int d) const {
    const int u = units_.unit[v];
    if (unit_device_[u] == d) return true;  // its group's memory is reserved there
    return unit_device_[u] == kNone &&
           (unlimited_[v] || used_[d] + unit_memory_[u] <= p_.cluster().device(d).memory_bytes);
  }

  // The device whose first usable ready op starts earliest (`start`), or kNone.
  int earliest_device(double& best_start) {
    int best = kNone;
    for (int d = 0; d < num_devices_; ++d) {
      auto& queue = ready_[d];
      while (!queue.empty()) {
        const NodeId v = queue.top().node;
        if (device_[v] != kNone) {
          queue.pop();
        } else if (!usable(v, d)) {
          queue.pop();
          if (--queued_[v] == 0) unlimited_[v] = 1, enqueue(v);
        } else {
          break;
        }
      }
      if (queue.empty()) continue;
      const double start = std::max(free_at_[d], queue.top().arrival);
      if (start < best_start) best_start = start, best = d;
    }
    return best;
  }

  Problem& p_;
  const Graph& g_;
  const CostTable& costs_;
  const Units& units_;
  const int n_, num_devices_;
  std::vector<double> unit_memory_;
  std::vector<int> position_;
  std::vector<std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>>> ready_;
  std::vector<std::int32_t> device_, unit_device_, pending_, queued_;
  std::vector<char> unlimited_;  // fits nowhere: placed ignoring memory
  std::vector<double> finish_, free_at_, used_;
};

Solution m_etf(Problem& p) { return MEtf(p).run(); }

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
