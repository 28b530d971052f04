#include "core/fusion.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

#include "core/error.h"

namespace goenv {

namespace {

// Groups as the nodes of a quotient DAG, kept in a topological order (slots).
// Merging a producer group A into a consumer group B keeps the quotient acyclic
// (and so every group convex) iff no path A -> X -> B runs through another group;
// any such X sits between A and B in the order, which bounds the search. After a
// merge, the window between them is re-laid out: groups A reaches go after the
// merged group, the rest before it (Pearce & Kelly's dynamic topological order).
class GroupSet {
 public:
  // Windows wider than this many slots are not searched: the merge is refused.
  static constexpr int kMaxWindow = 4096;

  explicit GroupSet(const Graph& graph)
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

  // a is a producer group of b. On success, reached_ holds the groups a reaches
  // inside the window (needed by merge()).
  bool legal_union(std::int32_t a, std::int32_t b, int max_size) {
    if (static_cast<int>(members_[a].size() + members_[b].size()) > max_size) return false;
    if (order_[b] - order_[a] > kMaxWindow) return false;
    ++stamp_;
    for (std::int32_t s : {a, b})
      for (NodeId v : members_[s]) {
        if (g_.fusible(v) == FusibleKind::kOpaque) return false;
        mark_[v] = stamp_;
      }
    // A reduction must stay a sink of its group.
    for (std::int32_t s : {a, b})
      for (NodeId v : members_[s])
        if (g_.fusible(v) == FusibleKind::kReduction)
          for (int e = g_.out_offsets()[v]; e < g_.out_offsets()[v + 1]; ++e)
            if (mark_[g_.edge_dst()[e]] == stamp_) return false;
    // Is there a path a -> x -> b through another group x?
    ++stamp_;  // marks visited groups (by representative)
    reached_.clear();
    auto visit_successors = [&](std::int32_t from, bool first) {
      for (NodeId v : members_[from])
        for (int e = g_.out_offsets()[v]; e < g_.out_offsets()[v + 1]; ++e) {
          const std::int32_t h = group_[g_.edge_dst()[e]];
          if (h == b) {
            if (!first) return false;
            continue;  // the direct edges a -> b are what we fuse
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

  // Merges b into a; call right after a successful legal_union(a, b).
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
        at_[slot] = -1;  // one slot fewer: the merged group freed it
      }
    }
  }

 private:
  const Graph& g_;
  std::vector<std::int32_t> group_;
  std::vector<std::vector<NodeId>> members_;
  std::vector<int> order_;           // per group representative: its slot
  std::vector<std::int32_t> at_;     // per slot: the group there, or -1
  std::vector<int> mark_;
  std::vector<std::int32_t> reached_;
  int stamp_ = 0;
};

}  // namespace

FusionPlan plan_fusion(const Graph& graph, const std::int32_t* placement, const std::int32_t* priority,
                       int max_fusion_size) {
  GOENV_CHECK(max_fusion_size >= 1, InvalidArgument, "max_fusion_size must be >= 1, got " << max_fusion_size);
  const int n = graph.num_nodes();
  std::vector<int> position(n);
  for (int i = 0; i < n; ++i) position[graph.topological_order()[i]] = i;
  std::vector<NodeId> order;
  for (NodeId v = 0; v < n; ++v) {
    GOENV_CHECK(priority[v] >= 0, InvalidAction, "fusion priority of node " << v << " is " << priority[v] << " < 0");
    if (priority[v] > 0) order.push_back(v);
  }
  std::sort(order.begin(), order.end(), [&](NodeId a, NodeId b) {
    return priority[a] != priority[b] ? priority[a] > priority[b] : position[a] < position[b];
  });

  GroupSet groups(graph);
  std::vector<std::pair<std::int64_t, NodeId>> producers;
  for (NodeId v : order) {
    if (graph.fusible(v) == FusibleKind::kOpaque) continue;
    producers.clear();
    for (int i = graph.in_offsets()[v]; i < graph.in_offsets()[v + 1]; ++i) {
      const int e = graph.in_edges()[i];
      const auto u = static_cast<NodeId>(graph.edge_src()[e]);
      if (placement[u] == placement[v]) producers.emplace_back(-graph.edge_bytes()[e], u);
    }
    std::sort(producers.begin(), producers.end());  // largest tensor first, then lowest id
    for (const auto& [negative_bytes, u] : producers) {
      const auto gu = groups.group(u), gv = groups.group(v);
      if (gu != gv && groups.legal_union(gu, gv, max_fusion_size)) {
        groups.merge(gu, gv);
        break;
      }
    }
  }

  FusionPlan plan;
  plan.group.assign(n, -1);
  std::vector<std::int32_t> renumber(n, -1), size(n, 0);
  // Kernels are numbered by their lowest node id, so the simulator's "lowest id"
  // tie-break means the same with and without fusion.
  for (NodeId v = 0; v < n; ++v) {
    auto& id = renumber[groups.group(v)];
    if (id == -1) id = plan.num_groups++;
    plan.group[v] = id;
    ++size[id];
  }
  for (NodeId v = 0; v < n; ++v) plan.num_fused_nodes += size[plan.group[v]] > 1;
  return plan;
}

std::vector<std::int32_t> xla_fusion_priorities(const Graph& graph) {
  std::vector<std::int32_t> priority(graph.num_nodes());
  for (NodeId v = 0; v < graph.num_nodes(); ++v) priority[v] = graph.fusible(v) != FusibleKind::kOpaque;
  return priority;
}

GraphPtr contract(const Graph& graph, const FusionPlan& plan) {
  const int n = graph.num_nodes(), k = plan.num_groups;
  std::vector<NodeSpec> kernels(k);
  std::vector<int> size(k, 0);
  std::vector<double> largest_flops(k, -1);
  for (NodeId v = 0; v < n; ++v) {
    NodeSpec& s = kernels[plan.group[v]];
    if (size[plan.group[v]]++ == 0) {
      s.name = graph.names()[v];
      s.group = graph.group()[v];
      s.cost = {0, 0, 0};
    }
    if (graph.flops()[v] > largest_flops[plan.group[v]]) {  // the kernel is named by its heaviest op
      largest_flops[plan.group[v]] = graph.flops()[v];
      s.op_type = graph.op_type()[v];
    }
    s.flops += graph.flops()[v];
    s.param_bytes += graph.param_bytes()[v];
    const std::uint8_t allowed = graph.allowed_kinds()[v];
    if (allowed) s.allowed_kinds = s.allowed_kinds ? (s.allowed_kinds & allowed) : allowed;
    for (int kind = 0; kind < kNumDeviceKinds; ++kind) s.cost[kind] += graph.cost()[v * kNumDeviceKinds + kind];  // NaN stays NaN
    // Only outputs that leave the kernel (or leave the graph) are materialized.
    bool leaves = graph.out_offsets()[v] == graph.out_offsets()[v + 1];
    for (int e = graph.out_offsets()[v]; e < graph.out_offsets()[v + 1]; ++e)
      leaves = leaves || plan.group[graph.edge_dst()[e]] != plan.group[v];
    if (leaves) s.output_bytes += graph.output_bytes()[v];
  }
  for (int g = 0; g < k; ++g)  // names stay within kMaxNameBytes (a longest name keeps no suffix)
    if (size[g] > 1 && kernels[g].name.size() + 12 <= kMaxNameBytes)
      kernels[g].name += " +" + std::to_string(size[g] - 1);
  // Each producer's tensor counts once per destination kernel (its largest edge there).
  std::map<std::pair<NodeId, std::int32_t>, std::int64_t> tensor_to_kernel;
  for (int e = 0; e < graph.num_edges(); ++e) {
    const auto u = static_cast<NodeId>(graph.edge_src()[e]);
    const auto gd = plan.group[graph.edge_dst()[e]];
    if (plan.group[u] == gd) continue;
    auto& bytes = tensor_to_kernel[{u, gd}];
    bytes = std::max(bytes, graph.edge_bytes()[e]);
  }
  std::map<std::pair<std::int32_t, std::int32_t>, std::int64_t> kernel_edges;
  for (const auto& [key, bytes] : tensor_to_kernel) kernel_edges[{plan.group[key.first], key.second}] += bytes;
  std::vector<std::array<std::int64_t, 3>> edges;
  edges.reserve(kernel_edges.size());
  for (const auto& [key, bytes] : kernel_edges) edges.push_back({key.first, key.second, bytes});
  // Sums stay in range: each column's total over the graph is bounded at validation (graph.h).
  std::string name = graph.name().size() + 6 <= kMaxNameBytes ? graph.name() + "/fused" : graph.name();
  return Graph::from_specs(std::move(name), std::move(kernels), std::move(edges));
}

SimulationResult simulate_fused(const GraphPtr& graph, const Cluster& cluster, const Decisions& decisions,
                                const std::int32_t* fusion_priority, int max_fusion_size, FusionPlan* plan_out) {
  const Graph& g = *graph;
  const int n = g.num_nodes();
  std::vector<std::int32_t> placement(n, 0);
  if (decisions.placement) std::copy(decisions.placement, decisions.placement + n, placement.begin());
  const std::string invalid_reason = validate_decisions(g, cluster, placement.data(), decisions.priority);
  FusionPlan plan = plan_fusion(g, placement.data(), fusion_priority, max_fusion_size);
  GraphPtr kernels = contract(g, plan);

  std::vector<std::int32_t> kernel_placement(plan.num_groups, 0);
  std::vector<double> kernel_priority(plan.num_groups, -std::numeric_limits<double>::infinity());
  std::vector<NodeId> first_member(plan.num_groups, kNone);
  for (NodeId v = 0; v < n; ++v) {
    const auto k = plan.group[v];
    kernel_placement[k] = placement[v];
    kernel_priority[k] = std::max(kernel_priority[k], decisions.priority ? decisions.priority[v] : 0.0);
    if (first_member[k] == kNone) first_member[k] = v;
  }
  SimulationResult kernel_result = simulate(kernels, cluster, {kernel_placement.data(), kernel_priority.data()});

  SimulationResult r = kernel_result;  // device-level numbers carry over
  r.invalid = !invalid_reason.empty();
  r.invalid_reason = invalid_reason;
  r.start.resize(n);
  r.finish.resize(n);
  r.device.resize(n);
  r.critical.resize(n);
  r.kernel = plan.group;
  for (NodeId v = 0; v < n; ++v) {
    const auto k = plan.group[v];
    r.start[v] = kernel_result.start[k];
    r.finish[v] = kernel_result.finish[k];
    r.device[v] = kernel_result.device[k];
    r.critical[v] = kernel_result.critical[k];
  }
  for (Transfer& t : r.transfers) t.node = first_member[t.node];
  if (plan_out) *plan_out = std::move(plan);
  return r;
}

}  // namespace goenv
