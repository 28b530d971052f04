// The fusion pass as it was before its rewrite (commit 0ed9dc6), kept as the oracle
// for core/fusion.cc: plain, allocation-heavy and re-walking every group on each
// legality check, but obviously the docs/simulator.md greedy. fusion_differential_test.cc
// checks that core/fusion.cc makes the same groups, merge for merge.
//
// Groups are the nodes of a quotient DAG kept in a topological order of slots.
// Merging a producer group A into a consumer group B keeps the quotient acyclic
// iff no path A -> X -> B runs through another group; any such X sits between A
// and B in the order, which bounds the search. After a merge the window between
// them is re-laid out: groups A reaches go after the merged group, the rest
// before it (Pearce & Kelly). Windows wider than `max_window` slots are refused.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/fusion.h"
#include "core/graph.h"

namespace goenv::test {

class ReferenceGroupSet {
 public:
  explicit ReferenceGroupSet(const Graph& graph)
      : g_(graph), group_(graph.num_nodes()), members_(graph.num_nodes()), order_(graph.num_nodes()),
        at_(graph.num_nodes()), mark_(graph.num_nodes(), 0) {
    for (NodeId v = 0; v < g_.num_nodes(); ++v) {
      group_[v] = v;
      members_[v] = {v};
    }
    for (int i = 0; i < g_.num_nodes(); ++i) {
      const NodeId v = g_.topological_order()[i];
      order_[v] = i;
      at_[i] = v;
    }
  }

  std::int32_t group(NodeId v) const { return group_[v]; }

  bool legal_union(std::int32_t a, std::int32_t b, int max_size, int max_window) {
    if (static_cast<int>(members_[a].size() + members_[b].size()) > max_size) return false;
    if (order_[b] - order_[a] > max_window) return false;
    ++stamp_;
    for (std::int32_t s : {a, b})
      for (NodeId v : members_[s]) {
        if (g_.fusible(v) == FusibleKind::kOpaque) return false;
        mark_[v] = stamp_;
      }
    for (std::int32_t s : {a, b})
      for (NodeId v : members_[s])
        if (g_.fusible(v) == FusibleKind::kReduction)
          for (int e = g_.out_offsets()[v]; e < g_.out_offsets()[v + 1]; ++e)
            if (mark_[g_.edge_dst()[e]] == stamp_) return false;
    ++stamp_;
    reached_.clear();
    auto visit_successors = [&](std::int32_t from, bool first) {
      for (NodeId v : members_[from])
        for (int e = g_.out_offsets()[v]; e < g_.out_offsets()[v + 1]; ++e) {
          const std::int32_t h = group_[g_.edge_dst()[e]];
          if (h == b) {
            if (!first) return false;
            continue;
          }
          if (h != a && order_[h] < order_[b] && mark_[h] != stamp_) {
            mark_[h] = stamp_;
            reached_.push_back(h);
          }
        }
      return true;
    };
    if (!visit_successors(a, true)) return false;
    for (std::size_t i = 0; i < reached_.size(); ++i)
      if (!visit_successors(reached_[i], false)) return false;
    return true;
  }

  void merge(std::int32_t a, std::int32_t b) {
    const int lo = order_[a], hi = order_[b];
    std::vector<std::int32_t> before, after;
    const int reached_stamp = stamp_;
    for (int slot = lo; slot <= hi; ++slot) {
      const std::int32_t h = at_[slot];
      if (h == -1 || h == a || h == b) continue;
      (mark_[h] == reached_stamp ? after : before).push_back(h);
    }
    for (NodeId v : members_[b]) group_[v] = a;
    members_[a].insert(members_[a].end(), members_[b].begin(), members_[b].end());
    members_[b].clear();
    before.push_back(a);
    before.insert(before.end(), after.begin(), after.end());
    int next = 0;
    for (int slot = lo; slot <= hi; ++slot) {
      if (at_[slot] == -1) continue;
      if (next < static_cast<int>(before.size())) {
        at_[slot] = before[next];
        order_[before[next++]] = slot;
      } else {
        at_[slot] = -1;
      }
    }
  }

 private:
  const Graph& g_;
  std::vector<std::int32_t> group_;
  std::vector<std::vector<NodeId>> members_;
  std::vector<int> order_;
  std::vector<std::int32_t> at_;
  std::vector<int> mark_;
  std::vector<std::int32_t> reached_;
  int stamp_ = 0;
};

inline FusionPlan reference_plan_fusion(const Graph& graph, const std::int32_t* placement, const std::int32_t* priority,
                                        int max_fusion_size, int max_window) {
  const int n = graph.num_nodes();
  std::vector<int> position(n);
  for (int i = 0; i < n; ++i) position[graph.topological_order()[i]] = i;
  std::vector<NodeId> order;
  for (NodeId v = 0; v < n; ++v)
    if (priority[v] > 0) order.push_back(v);
  std::sort(order.begin(), order.end(), [&](NodeId a, NodeId b) {
    return priority[a] != priority[b] ? priority[a] > priority[b] : position[a] < position[b];
  });
  ReferenceGroupSet groups(graph);
  std::vector<std::pair<std::int64_t, NodeId>> producers;
  for (NodeId v : order) {
    if (graph.fusible(v) == FusibleKind::kOpaque) continue;
    producers.clear();
    for (int i = graph.in_offsets()[v]; i < graph.in_offsets()[v + 1]; ++i) {
      const int e = graph.in_edges()[i];
      const auto u = static_cast<NodeId>(graph.edge_src()[e]);
      if (placement[u] == placement[v] && priority[u] > 0) producers.emplace_back(-graph.edge_bytes()[e], u);
    }
    std::sort(producers.begin(), producers.end());
    for (const auto& [negative_bytes, u] : producers) {
      const auto gu = groups.group(u), gv = groups.group(v);
      if (gu != gv && groups.legal_union(gu, gv, max_fusion_size, max_window)) {
        groups.merge(gu, gv);
        break;
      }
    }
  }
  FusionPlan plan;
  plan.group.assign(n, -1);
  std::vector<std::int32_t> renumber(n, -1), size(n, 0);
  for (NodeId v = 0; v < n; ++v) {
    auto& id = renumber[groups.group(v)];
    if (id == -1) id = plan.num_groups++;
    plan.group[v] = id;
    ++size[id];
  }
  for (NodeId v = 0; v < n; ++v) plan.num_fused_nodes += size[plan.group[v]] > 1;
  return plan;
}

}  // namespace goenv::test
