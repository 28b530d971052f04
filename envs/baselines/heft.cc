// HEFT (Topcuoglu, Hariri & Wu, "Performance-Effective and Low-Complexity Task
// Scheduling for Heterogeneous Computing", IEEE TPDS 2002): ops in decreasing
// upward rank (mean compute + mean communication cost to the exit), each on the
// device where it finishes earliest, inserted into the earliest idle gap that
// holds it. A colocation group goes where its first-ranked member goes.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>

#include "envs/baselines/baseline.h"

namespace goenv {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kNil = -1;

// The idle gaps of one device in time order, as a treap whose nodes also keep
// the longest gap of their subtree: the first gap that fits a task is found in
// O(log n) expected, so insertion scheduling stays O(N log N) per device.
class Timeline {
 public:
  Timeline() { root_ = make(0.0, kInf); }

  // Earliest start >= ready of a task that keeps the device busy `length` seconds.
  double earliest(double ready, double length) const {
    const int g = last_at_or_before(ready);
    if (g != kNil && gaps_[g].end - ready >= length && gaps_[g].end > ready) return ready;
    return gaps_[first_fit(root_, ready, length)].start;
  }

  // Marks [start, start + length) busy; it must lie inside one gap (as earliest() returns).
  void occupy(double start, double length) {
    if (!(length > 0)) return;
    const Gap g = gaps_[last_at_or_before(start)];
    int left, rest, gap, right;
    split(root_, g.start, left, rest);
    split(rest, std::nextafter(g.start, kInf), gap, right);
    int middle = kNil;
    if (start > g.start) middle = make(g.start, start);
    if (g.end > start + length) middle = merge(middle, make(start + length, g.end));
    root_ = merge(merge(left, middle), right);
  }

 private:
  struct Gap {
    double start, end, longest;  // longest: of the subtree
    std::uint32_t priority;
    int left = kNil, right = kNil;
  };

  int make(double start, double end) {
    std::uint32_t h = static_cast<std::uint32_t>(gaps_.size()) * 0x9e3779b9u;  // deterministic heap priorities
    h = (h ^ (h >> 16)) * 0x85ebca6bu;
    gaps_.push_back({start, end, end - start, h ^ (h >> 13)});
    return static_cast<int>(gaps_.size()) - 1;
  }
  double longest(int t) const { return t == kNil ? -kInf : gaps_[t].longest; }
  void update(int t) {
    Gap& x = gaps_[t];
    x.longest = std::max({x.end - x.start, longest(x.left), longest(x.right)});
  }
  // l: gaps starting before `key`; r: the others.
  void split(int t, double key, int& l, int& r) {
    if (t == kNil) {
      l = r = kNil;
    } else if (gaps_[t].start < key) {
      split(gaps_[t].right, key, gaps_[t].right, r);
      l = t;
      update(t);
    } else {
      split(gaps_[t].left, key, l, gaps_[t].left);
      r = t;
      update(t);
    }
  }
  int merge(int l, int r) {
    if (l == kNil || r == kNil) return l == kNil ? r : l;
    if (gaps_[l].priority > gaps_[r].priority) {
      gaps_[l].right = merge(gaps_[l].right, r);
      update(l);
      return l;
    }
    gaps_[r].left = merge(l, gaps_[r].left);
    update(r);
    return r;
  }
  int last_at_or_before(double time) const {
    int best = kNil;
    for (int t = root_; t != kNil;) {
      if (gaps_[t].start <= time) best = t, t = gaps_[t].right;
      else t = gaps_[t].left;
    }
    return best;
  }
  // The earliest gap starting after `ready` that is at least `length` long.
  int first_fit(int t, double ready, double length) const {
    if (t == kNil || longest(t) < length) return kNil;
    const Gap& x = gaps_[t];
    if (x.start <= ready) return first_fit(x.right, ready, length);
    const int l = first_fit(x.left, ready, length);
    if (l != kNil) return l;
    return x.end - x.start >= length ? t : first_fit(x.right, ready, length);
  }

  std::vector<Gap> gaps_;
  int root_ = kNil;
};

Solution heft(Problem& p) { return with_placement(p, heft_placement(p)); }

}  // namespace

std::vector<double> upward_rank(const Graph& graph, const CostTable& costs) {
  std::vector<double> compute(graph.num_nodes()), communicate(graph.num_edges());
  for (NodeId v = 0; v < graph.num_nodes(); ++v) compute[v] = costs.mean_cost(v);
  for (int e = 0; e < graph.num_edges(); ++e)
    communicate[e] = costs.mean_transfer(static_cast<double>(graph.edge_bytes()[e]));
  return bottom_levels(graph, compute, communicate);
}

std::vector<std::int32_t> heft_placement(Problem& p) {
  const Graph& g = p.graph();
  const CostTable& costs = p.costs();
  const Units& units = p.units();
  const int n = g.num_nodes(), num_devices = costs.num_devices();
  const std::vector<double> rank = upward_rank(g, costs);
  std::vector<int> position(n);
  for (int i = 0; i < n; ++i) position[g.topological_order()[i]] = i;
  std::vector<NodeId> order(n);
  std::iota(order.begin(), order.end(), 0);
  // Decreasing rank is a topological order; equal ranks (zero costs) keep theirs.
  std::sort(order.begin(), order.end(), [&](NodeId a, NodeId b) {
    return rank[a] != rank[b] ? rank[a] > rank[b] : position[a] < position[b];
  });

  std::vector<Timeline> timelines(num_devices);
  std::vector<std::int32_t> device(n, kNone), unit_device(units.size(), kNone);
  std::vector<double> finish(n, 0.0);
  std::vector<int> candidates;
  for (NodeId v : order) {
    const int u = units.unit[v];
    candidates.clear();
    if (unit_device[u] != kNone) {
      candidates.push_back(unit_device[u]);
    } else {
      for (int d = 0; d < num_devices; ++d)
        if (units.allows(u, d)) candidates.push_back(d);
      if (candidates.empty())  // the members' device kinds do not overlap: repair settles it
        for (int d = 0; d < num_devices; ++d) candidates.push_back(d);
    }
    double best_finish = kInf, best_start = 0;
    int best = candidates.front();
    for (int d : candidates) {
      double ready = 0;
      for (int i = g.in_offsets()[v]; i < g.in_offsets()[v + 1]; ++i) {
        const int e = g.in_edges()[i];
        const auto src = static_cast<NodeId>(g.edge_src()[e]);
        ready = std::max(ready, finish[src] + costs.transfer(device[src], d, static_cast<double>(g.edge_bytes()[e])));
      }
      const double start = timelines[d].earliest(ready, costs.busy(v, d));
      if (start + costs.cost(v, d) < best_finish) best_finish = start + costs.cost(v, d), best_start = start, best = d;
    }
    timelines[best].occupy(best_start, costs.busy(v, best));
    device[v] = best;
    finish[v] = best_finish;
    unit_device[u] = best;
  }
  return device;
}

}  // namespace goenv

GOENV_REGISTER_BASELINE(kHeftRegistered,
                        {/*name=*/"heft",
                         /*heads=*/{goenv::Head::kPlacement},
                         /*description=*/"HEFT: upward rank, insertion-based earliest finish time",
                         /*solve=*/goenv::heft})
