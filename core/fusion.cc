#include "core/fusion.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <type_traits>

#include "core/cost_model.h"
#include "core/error.h"

namespace goenv {

namespace {

enum : std::uint8_t { kFusesAnywhere = 0, kSinkOnly = 1, kNeverFuses = 2 };  // per node, from its FusibleKind

// The greedy pass (docs/simulator.md) over groups kept as the nodes of a quotient DAG in
// a topological order of slots. Merging a producer group A into a consumer group
// B keeps the quotient acyclic (so every group convex) iff no path A -> X -> B
// runs through another group; any such X sits between A and B in the order,
// which bounds the search, and a window wider than max_window slots is refused.
// After a merge the window between them is re-laid out: groups A reaches go
// after the merged group, the rest before it (Pearce & Kelly's dynamic
// topological order); the freed slot stays empty.
//
// The decisions are those of the earlier, simpler pass (tests/cpp/fusion_reference.h),
// merge for merge; what changed is what a legality check costs:
//  * size, and "no opaque op" (only a singleton can hold one), are O(1) per group;
//  * "a reduction only as a sink" needs no walk of its own: existing groups are
//    legal, and an edge from B into A cannot exist (A precedes B), so the only
//    new violation is an edge from a reduction in A into B, which the convexity
//    search sees anyway as it walks A's out-edges;
//  * members are intrusive lists and the smaller group is relabeled on a merge;
//  * a group's out-edges that leave it are one contiguous run, rewritten on a
//    merge (its edges inside the merged group dropped), so the search reads one
//    word per edge that leaves a group and nothing per member;
//  * every array is sized once per graph and reused by every plan.
class Planner {
 public:
  explicit Planner(const Graph& graph)
      : g_(graph), n_(graph.num_nodes()), kind_(n_), position_(n_), edges_(graph.num_edges()), group_(n_),
        size_(n_), head_(n_), tail_(n_), next_(n_), edge_begin_(n_), edge_count_(n_), fresh_edge_count_(n_),
        slot_(n_), at_(n_), next_occupied_(n_),
        renumber_(n_), reached_(n_), slots_(n_), after_(n_) {
    for (NodeId v = 0; v < n_; ++v) {
      const FusibleKind k = graph.fusible(v);
      kind_[v] = k == FusibleKind::kOpaque ? kNeverFuses : k == FusibleKind::kReduction ? kSinkOnly : kFusesAnywhere;
    }
    for (int i = 0; i < n_; ++i) position_[graph.topological_order()[i]] = i;
    for (NodeId v = 0; v < n_; ++v) {  // a singleton's run: its CSR out-edges, the first num_edges words
      const std::uint32_t sink_only = kind_[v] == kSinkOnly ? kFromSinkOnly : 0;
      for (int e = graph.out_offsets()[v]; e < graph.out_offsets()[v + 1]; ++e)
        edges_[e] = static_cast<std::uint32_t>(graph.edge_dst()[e]) | sink_only;
      fresh_edge_count_[v] = graph.out_offsets()[v + 1] - graph.out_offsets()[v];
    }
    pool_limit_ = 4 * static_cast<std::size_t>(graph.num_edges()) + static_cast<std::size_t>(n_);
    edges_.reserve(pool_limit_);
    int most = 0;
    for (NodeId v = 0; v < n_; ++v) most = std::max(most, graph.in_offsets()[v + 1] - graph.in_offsets()[v]);
    producers_.resize(most);  // a node's producers on its device, written by index
    identity_.resize(n_);
    std::iota(identity_.begin(), identity_.end(), 0);
    fresh_slot_.resize(n_);
    for (NodeId v = 0; v < n_; ++v) fresh_slot_[v].order = position_[v];
  }

  // Where plan() also writes each kernel's members, by increasing id (kernel k's are
  // members[offsets[k]..offsets[k + 1])), so the kernel graph needs no sort of its own.
  struct KernelMembers {
    std::int32_t* offsets;    // num_groups + 1
    std::int32_t* members;    // N
    std::int32_t* next_free;  // num_groups: scratch
  };

  void plan(const std::int32_t* placement, const std::int32_t* priority, int max_size, int max_window,
            FusionPlan& plan, const KernelMembers* out = nullptr) {
    GOENV_CHECK(max_size >= 1, InvalidArgument, "max_fusion_size must be >= 1, got " << max_size);
    visiting_order(priority);
    reset();
    const std::int32_t* in_offsets = g_.in_offsets().data();
    const std::int32_t* in_edges = g_.in_edges().data();
    const std::int64_t* edge_src = g_.edge_src().data();
    const std::int64_t* edge_bytes = g_.edge_bytes().data();
    for (NodeId v : visit_) {
      int num_producers = 0;
      for (int i = in_offsets[v]; i < in_offsets[v + 1]; ++i) {
        const int e = in_edges[i];
        const auto u = static_cast<NodeId>(edge_src[e]);
        // Priority 0 keeps a node alone: it visits no group, and no consumer joins its own.
        if (placement[u] == placement[v] && priority[u] > 0) producers_[num_producers++] = {-edge_bytes[e], u};
      }
      sort_small(producers_.data(), num_producers);  // largest tensor first, then lowest id
      for (int i = 0; i < num_producers; ++i) {
        const NodeId u = producers_[i].second;
        const std::int32_t gu = group_[u], gv = group_[v];
        if (gu != gv && fits(gu, gv, max_size, max_window) && legal_union(gu, gv)) {
          merge(gu, gv);
          break;
        }
      }
    }
    // Kernels are numbered by their lowest node id, so the simulator's "lowest id"
    // tie-break means the same with and without fusion.
    plan.group.resize(n_);
    plan.num_groups = plan.num_fused_nodes = 0;
    std::fill(renumber_.begin(), renumber_.end(), -1);
    int placed = 0;  // members of the kernels numbered so far
    for (NodeId v = 0; v < n_; ++v) {
      const std::int32_t g = group_[v];
      auto& id = renumber_[g];
      if (id == -1) {
        id = plan.num_groups++;
        if (out) out->offsets[id] = out->next_free[id] = placed;
        placed += size_[g];
      }
      plan.group[v] = id;
      if (out) out->members[out->next_free[id]++] = v;
      plan.num_fused_nodes += size_[g] > 1;
    }
    if (out) out->offsets[plan.num_groups] = n_;
  }

 private:
  // Fusible nodes with priority > 0 by descending priority, ties in topological order.
  void visiting_order(const std::int32_t* priority) {
    // Few levels (the env's case): counted while checking, then one stable pass in topological order.
    constexpr std::int32_t kFewLevels = 64;
    std::int32_t top = 0;
    std::array<int, kFewLevels> at_level{};
    int total = 0;
    for (NodeId v = 0; v < n_; ++v) {
      const std::int32_t p = priority[v];
      GOENV_CHECK(p >= 0, InvalidAction, "fusion priority of node " << v << " is " << p << " < 0");
      top = std::max(top, p);
      if (p > 0 && p < kFewLevels && kind_[v] != kNeverFuses) {
        ++at_level[p];
        ++total;
      }
    }
    visit_.clear();
    const auto& topological = g_.topological_order();
    if (top < kFewLevels) {
      int start = 0;
      for (std::int32_t p = top; p >= 1; --p) {  // descending priority: each level's first index
        const int count = at_level[p];
        at_level[p] = start;
        start += count;
      }
      visit_.resize(total);
      for (NodeId v : topological)
        if (priority[v] > 0 && kind_[v] != kNeverFuses) visit_[at_level[priority[v]]++] = v;
      return;
    }
    if (top <= 2 * n_ + 64) {  // few levels (the env's case): a stable counting sort, O(N + levels)
      count_.assign(static_cast<std::size_t>(top) + 2, 0);
      for (NodeId v = 0; v < n_; ++v)
        if (priority[v] > 0 && kind_[v] != kNeverFuses) ++count_[top - priority[v] + 1];
      for (std::size_t i = 1; i < count_.size(); ++i) count_[i] += count_[i - 1];
      visit_.resize(count_.back());
      for (NodeId v : topological)
        if (priority[v] > 0 && kind_[v] != kNeverFuses) visit_[count_[top - priority[v]]++] = v;
      return;
    }
    keys_.clear();
    for (NodeId v = 0; v < n_; ++v)
      if (priority[v] > 0 && kind_[v] != kNeverFuses)
        keys_.push_back(static_cast<std::uint64_t>(INT32_MAX - priority[v]) << 32 |
                        static_cast<std::uint32_t>(position_[v]));
    std::sort(keys_.begin(), keys_.end());
    for (std::uint64_t key : keys_) visit_.push_back(topological[key & 0xffffffffu]);
  }

  // Every group a single node in its topological slot: copies of images made once per graph.
  void reset() {
    std::copy(identity_.begin(), identity_.end(), group_.begin());
    std::copy(identity_.begin(), identity_.end(), head_.begin());
    std::copy(identity_.begin(), identity_.end(), tail_.begin());
    std::fill(next_.begin(), next_.end(), kNone);
    std::fill(size_.begin(), size_.end(), 1);
    edges_.resize(g_.num_edges());  // the merged runs of the last plan dropped; the CSR words were never written
    std::copy(g_.out_offsets().begin(), g_.out_offsets().end() - 1, edge_begin_.begin());
    std::copy(fresh_edge_count_.begin(), fresh_edge_count_.end(), edge_count_.begin());
    std::copy(fresh_slot_.begin(), fresh_slot_.end(), slot_.begin());
    std::copy(g_.topological_order().begin(), g_.topological_order().end(), at_.begin());
    std::copy(identity_.begin() + 1, identity_.end(), next_occupied_.begin());
    if (n_ > 0) next_occupied_[n_ - 1] = kNone;
  }

  // Producers are a node's in-edges on its device: a handful, so insertion sort.
  static void sort_small(std::pair<std::int64_t, NodeId>* items, int count) {
    for (int i = 1; i < count; ++i) {
      const auto item = items[i];
      int j = i;
      for (; j > 0 && item < items[j - 1]; --j) items[j] = items[j - 1];
      items[j] = item;
    }
  }

  // The O(1) refusals, in the pass's loop itself (most candidate merges end here):
  // size, the window, and an opaque op (only ever a singleton).
  bool fits(std::int32_t a, std::int32_t b, int max_size, int max_window) const {
    return size_[a] + size_[b] <= max_size && slot_[b].order - slot_[a].order <= max_window &&
           !(kind_[a] == kNeverFuses && size_[a] == 1) && !(kind_[b] == kNeverFuses && size_[b] == 1);
  }

  // a is a producer group of b that fits(); whether merging keeps every group convex.
  // On success, the groups a reaches inside the window carry this check's stamp
  // (merge() needs them).
  // The hot loop of the pass: one slot read per edge that leaves a group decides
  // everything (every reached group carries the stamp, b sits at the limit,
  // groups after b lie beyond it), with the arrays in locals the stores cannot alias.
  // Not inlined: plan() around it would take the hot loop's registers.
  __attribute__((noinline)) bool legal_union(std::int32_t a, std::int32_t b) {
    next_stamp();
    const std::uint32_t stamp = stamp_;
    const int limit = slot_[b].order;
    const std::uint32_t* __restrict edges = edges_.data();
    const std::int32_t* __restrict edge_begin = edge_begin_.data();
    const std::int32_t* __restrict edge_count = edge_count_.data();
    const std::int32_t* __restrict group = group_.data();
    Slot* __restrict slot = slot_.data();
    std::int32_t* __restrict reached = reached_.data();
    int count = 0;
    slot[a].mark = stamp;
    // The groups x has edges to inside the window; false on a path a -> x -> b, or (from a
    // itself, std::true_type) on an edge a -> b from a reduction, which would stop being a sink.
    auto walk = [&](std::int32_t x, auto from_a) {
      for (int e = edge_begin[x], end = e + edge_count[x]; e < end; ++e) {
        const std::uint32_t edge = edges[e];
        const std::int32_t h = group[edge & ~kFromSinkOnly];
        Slot& s = slot[h];
        if (s.order < limit) {
          if (s.mark != stamp) {
            s.mark = stamp;
            reached[count++] = h;
          }
        } else if (h == b && (!from_a || (edge & kFromSinkOnly))) {
          return false;
        }  // else: a direct edge a -> b (what we fuse), or a group after b
      }
      return true;
    };
    bool legal = walk(a, std::true_type{});
    for (int i = 0; i < count && legal; ++i) legal = walk(reached[i], std::false_type{});
    return legal;
  }

  // Merges a and b; call right after a successful legal_union(a, b).
  void merge(std::int32_t a, std::int32_t b) {
    const int lo = slot_[a].order, hi = slot_[b].order;
    // The window's new layout: the groups a does not reach, the merged group, the
    // groups it reaches; the same slots in order, the last (b's) left empty.
    // Only occupied slots are visited (most of a window is slots freed by merges):
    // a sits at lo, b at hi, and a group a does not reach moves at once to the
    // first slot not yet given (never after its own, which was read already).
    int num_slots = 0, num_before = 0, num_after = 0;
    slots_[num_slots++] = lo;
    for (int slot = next_occupied_[lo]; slot < hi; slot = next_occupied_[slot]) {
      const std::int32_t h = at_[slot];
      slots_[num_slots++] = slot;
      if (slot_[h].mark == stamp_)
        after_[num_after++] = h;
      else
        place(h, slots_[num_before++]);
    }
    slots_[num_slots++] = hi;
    const bool keep_a = size_[a] >= size_[b];  // relabel the smaller group
    const std::int32_t kept = keep_a ? a : b, gone = keep_a ? b : a;
    for (NodeId m = head_[gone]; m != kNone; m = next_[m]) group_[m] = kept;
    next_[tail_[kept]] = head_[gone];
    tail_[kept] = tail_[gone];
    size_[kept] += size_[gone];
    merge_edges(kept, gone);
    int s = num_before;
    place(kept, slots_[s++]);
    for (int i = 0; i < num_after; ++i) place(after_[i], slots_[s++]);
    // hi (b's slot) is freed: unlinked after the occupied slot before it, the window's last but one.
    at_[hi] = kNone;
    next_occupied_[slots_[num_slots - 2]] = next_occupied_[hi];
  }

  // The merged group's run, appended to the pool: both runs without the edges
  // now inside it (they can close no path; the order of a run does not matter).
  void merge_edges(std::int32_t kept, std::int32_t gone) {
    const std::size_t need = static_cast<std::size_t>(edge_count_[kept]) + edge_count_[gone];
    if (edges_.size() + need > pool_limit_) compact_edges();
    const std::size_t start = edges_.size();
    edges_.resize(start + need);  // within the capacity kept across plans, once the pool has grown to it
    std::uint32_t* pool = edges_.data();
    std::size_t end = start;
    for (const std::int32_t from : {kept, gone})
      for (int e = edge_begin_[from], last = e + edge_count_[from]; e < last; ++e)
        if (group_[pool[e] & ~kFromSinkOnly] != kept) pool[end++] = pool[e];
    edges_.resize(end);
    edge_begin_[kept] = static_cast<std::int32_t>(start);
    edge_count_[kept] = static_cast<std::int32_t>(end - start);
  }

  // Runs of groups merged away are dead words: the live merged runs (at most
  // num_edges words in all, as is one merge's need) move down to just after the
  // singletons' words, so the pool never outgrows pool_limit_ (a big group merged
  // again and again, as on a fan-out with no size limit, would otherwise copy its
  // run every time: O(N * E) words). At least N + num_edges words were appended
  // since the last call, so its O(N + num_edges) is O(1) per word appended.
  void compact_edges() {
    const std::size_t singles = static_cast<std::size_t>(g_.num_edges());
    spare_edges_.clear();
    for (std::int32_t g = 0; g < n_; ++g) {
      if (group_[g] != g || static_cast<std::size_t>(edge_begin_[g]) < singles) continue;  // merged away, or a singleton
      const std::uint32_t* run = edges_.data() + edge_begin_[g];
      edge_begin_[g] = static_cast<std::int32_t>(singles + spare_edges_.size());
      spare_edges_.insert(spare_edges_.end(), run, run + edge_count_[g]);
    }
    edges_.resize(singles);
    edges_.insert(edges_.end(), spare_edges_.begin(), spare_edges_.end());
  }

  void place(std::int32_t h, int slot) {
    at_[slot] = h;
    slot_[h].order = slot;
  }

  void next_stamp() {
    if (++stamp_ == 0) {  // wrapped: forget every old mark
      for (Slot& s : slot_) s.mark = 0;
      stamp_ = 1;
    }
  }

  const Graph& g_;
  const int n_;
  std::vector<std::uint8_t> kind_;
  std::vector<int> position_;          // per node: its index in the graph's topological order
  // A run's word: the target node, with kFromSinkOnly set where the edge leaves a reduction.
  static constexpr std::uint32_t kFromSinkOnly = 1u << 31;
  std::vector<std::uint32_t> edges_;   // the runs: the singletons' (CSR order), then those merges wrote
  std::vector<std::int32_t> group_;    // per node: its group (a member's id)
  std::vector<std::int32_t> size_, head_, tail_;  // per group
  std::vector<NodeId> next_;           // per node: the next member of its group
  std::vector<std::int32_t> edge_begin_, edge_count_;  // per group: its run in edges_
  std::vector<std::int32_t> fresh_edge_count_;         // edge_count_ at the start of a plan (out-degrees)
  std::size_t pool_limit_ = 0;                          // edges_ words: 4 * num_edges + N, reserved once
  std::vector<std::uint32_t> spare_edges_;              // compact_edges()' scratch
  struct Slot {
    int order = 0;            // the group's slot
    std::uint32_t mark = 0;   // the stamp of the last check that reached it
  };
  std::vector<Slot> slot_;
  std::vector<Slot> fresh_slot_;       // slot_ at the start of a plan
  std::vector<std::int32_t> identity_;  // 0, 1, ..., N - 1             // per group (one cache line read per group the search meets)
  std::vector<std::int32_t> at_;       // per slot: the group there, or kNone
  std::vector<std::int32_t> next_occupied_;  // per occupied slot: the next one (kNone at the end)
  std::uint32_t stamp_ = 0;
  std::vector<std::int32_t> renumber_;
  std::vector<std::int32_t> reached_, slots_, after_;  // sized N once: filled up to counts, never grown
  std::vector<std::int32_t> count_;
  std::vector<NodeId> visit_;
  std::vector<std::uint64_t> keys_;
  std::vector<std::pair<std::int64_t, NodeId>> producers_;
};

}  // namespace

FusionPlan plan_fusion(const Graph& graph, const std::int32_t* placement, const std::int32_t* priority,
                       int max_fusion_size, int max_window) {
  Planner planner(graph);
  FusionPlan plan;
  planner.plan(placement, priority, max_fusion_size, max_window, plan);
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

// Everything a fused run needs besides the simulator, sized once per graph.
struct FusedSimulator::Scratch {
  explicit Scratch(const Graph& graph);

  // The kernel graph of `plan` as contract() defines it (same nodes, edges, bytes
  // and costs, summed in the same order, so the simulation is bit-identical),
  // straight into flat arrays: O(N + E) after the plan, no Graph, no map. Every
  // array is sized for the graph once (a kernel graph has at most N nodes and E
  // edges) and written by index.
  // Also each kernel's device (its members') and, with priorities, its members' highest.
  void build_kernels(const Graph& g, const Cluster& cluster, const std::int32_t* placement, const double* priority);

  Planner planner;
  bool measured_costs = false;  // any node with a measured cost (else every kernel's is NaN: not measured)
  FusionPlan plan;
  FlatGraph kernels;
  std::vector<std::int32_t> member_offsets, members;  // kernel k's nodes, by id: members[offsets[k]..]
  std::vector<std::int64_t> edge_sum;                 // per destination kernel: bytes from this kernel
  std::vector<std::int64_t> tensor_max;               // per destination kernel: this node's largest edge
  std::vector<std::int32_t> seen_by_kernel, seen_by_node;  // stamps for the two above
  std::vector<std::int32_t> kernel_targets, node_targets;
  std::vector<double> flops, measured, touched;
  std::vector<std::int64_t> output_bytes;
  std::vector<std::int32_t> placement, kernel_placement, fill;
  std::vector<double> kernel_priority;
};

FusedSimulator::Scratch::Scratch(const Graph& graph) : planner(graph) {
  const std::size_t n = graph.num_nodes(), e = graph.num_edges();
  measured_costs = std::any_of(graph.cost().begin(), graph.cost().end(), [](double c) { return !std::isnan(c); });
  FlatGraph& f = kernels;
  f.out_offsets.resize(n + 1);
  f.in_offsets.resize(n + 1);
  f.out_target.resize(e);
  f.out_bytes.resize(e);
  f.in_source.resize(e);
  f.param_bytes.resize(n);
  f.node_bytes.resize(n);
  f.in_degree.resize(n);
  member_offsets.resize(n + 1);
  members.resize(n);
  fill.resize(n + 1);
  for (auto* v : {&edge_sum, &tensor_max, &output_bytes}) v->resize(n);
  for (auto* v : {&seen_by_kernel, &seen_by_node, &kernel_targets, &node_targets}) v->resize(n);
  flops.resize(n);
  touched.resize(n);
  if (measured_costs) measured.resize(n * kNumDeviceKinds);
}

namespace {

// Devices whose roofline_cost() agrees on every kernel.
bool same_cost_rule(const Device& a, const Device& b) {
  return a.kind == b.kind && a.peak_flops == b.peak_flops && a.memory_bandwidth == b.memory_bandwidth &&
         a.launch_overhead == b.launch_overhead;
}

// A kernel's destinations are a handful: insertion sort.
void sort_small(std::int32_t* first, std::int32_t* last) {
  if (last - first > 32) {
    std::sort(first, last);
    return;
  }
  for (std::int32_t* i = first + 1; i < last; ++i) {
    const std::int32_t item = *i;
    std::int32_t* j = i;
    for (; j > first && item < j[-1]; --j) *j = j[-1];
    *j = item;
  }
}

}  // namespace

void FusedSimulator::Scratch::build_kernels(const Graph& g, const Cluster& cluster, const std::int32_t* placement,
                                            const double* priority) {
  const int k = plan.num_groups;
  const std::int32_t* __restrict group = plan.group.data();
  const std::int32_t* __restrict offsets = member_offsets.data();  // written by the plan
  const std::int32_t* __restrict member = members.data();
  std::int32_t* __restrict next_free = fill.data();

  FlatGraph& f = kernels;
  f.num_nodes = k;
  std::int32_t* __restrict out_offset = f.out_offsets.data();
  NodeId* __restrict out_target = f.out_target.data();
  double* __restrict edge_out_bytes = f.out_bytes.data();  // int64 sums, exact as doubles the simulator reads
  std::int64_t* __restrict params = f.param_bytes.data();
  std::int64_t* __restrict outputs = output_bytes.data();
  double* __restrict kernel_flops = flops.data();
  std::int64_t* __restrict sum = edge_sum.data();
  std::int64_t* __restrict largest = tensor_max.data();
  std::int32_t* __restrict by_kernel = seen_by_kernel.data();
  std::int32_t* __restrict by_node = seen_by_node.data();
  std::int32_t* __restrict node_to = node_targets.data();
  std::int32_t* __restrict kernel_to = kernel_targets.data();
  std::int32_t* __restrict in_degree = f.in_degree.data();  // counted as edges are written
  std::fill(by_kernel, by_kernel + k, -1);
  std::fill(by_node, by_node + k, -1);
  std::fill(in_degree, in_degree + k, 0);
  if (measured_costs) std::fill(measured.begin(), measured.begin() + static_cast<std::size_t>(k) * kNumDeviceKinds, 0.0);
  const std::int32_t* out_offsets = g.out_offsets().data();
  const std::int64_t* edge_dst = g.edge_dst().data();
  const std::int64_t* edge_bytes = g.edge_bytes().data();
  const double* node_flops = g.flops().data();
  const std::int64_t* node_params = g.param_bytes().data();
  const std::int64_t* node_outputs = g.output_bytes().data();
  const double* node_cost = g.cost().data();
  int m = 0;  // kernel edges so far
  kernel_placement.resize(k);
  if (priority) kernel_priority.resize(k);
  out_offset[0] = 0;
  // u's out-edges to other kernels than its own: each destination kernel once, into `to_list`,
  // with u's largest edge there (u's tensor counts once per destination kernel); their count.
  const auto destinations = [&](NodeId u, std::int32_t kernel, std::int32_t* to_list, bool& leaves) {
    int count = 0;
    for (int e = out_offsets[u]; e < out_offsets[u + 1]; ++e) {
      const std::int32_t to = group[edge_dst[e]];
      if (to == kernel) continue;
      leaves = true;
      if (by_node[to] != u) {
        by_node[to] = u;
        largest[to] = edge_bytes[e];
        to_list[count++] = to;
      } else {
        largest[to] = std::max(largest[to], edge_bytes[e]);
      }
    }
    return count;
  };
  // The kernel's out-edges to kernel_to[0..count) in CSR order (by destination), bytes[to] each.
  const auto write_edges = [&](int kernel, int count, const std::int64_t* bytes) {
    sort_small(kernel_to, kernel_to + count);
    for (int t = 0; t < count; ++t) {
      const std::int32_t to = kernel_to[t];
      out_target[m] = to;
      edge_out_bytes[m++] = static_cast<double>(bytes[to]);
      ++in_degree[to];
    }
    out_offset[kernel + 1] = m;
  };
  for (int kernel = 0; kernel < k; ++kernel) {
    kernel_placement[kernel] = placement[member[offsets[kernel]]];
    if (offsets[kernel + 1] - offsets[kernel] == 1) {
      // A kernel of one node (most of them): the node's own numbers, and each destination's
      // bytes are the node's largest edge there (the general loop's sums of one term). The
      // same operations from the same starting values as that loop (so -0.0 and NaN agree).
      const NodeId u = member[offsets[kernel]];
      if (priority) kernel_priority[kernel] = std::max(-std::numeric_limits<double>::infinity(), priority[u]);
      kernel_flops[kernel] = 0.0 + node_flops[u];
      params[kernel] = node_params[u];
      outputs[kernel] = node_outputs[u];  // every out-edge leaves the kernel, or there are none
      if (measured_costs)
        for (int kind = 0; kind < kNumDeviceKinds; ++kind)
          measured[kernel * kNumDeviceKinds + kind] = 0.0 + node_cost[u * kNumDeviceKinds + kind];
      bool leaves = false;
      write_edges(kernel, destinations(u, kernel, kernel_to, leaves), largest);
      continue;
    }
    int kernel_count = 0;
    double kernel_flop_sum = 0, highest = -std::numeric_limits<double>::infinity();
    std::int64_t param_sum = 0, output_sum = 0;
    for (int i = offsets[kernel]; i < offsets[kernel + 1]; ++i) {
      const NodeId u = member[i];
      if (priority) highest = std::max(highest, priority[u]);
      kernel_flop_sum += node_flops[u];
      param_sum += node_params[u];
      if (measured_costs)
        for (int kind = 0; kind < kNumDeviceKinds; ++kind)  // NaN (not measured) stays NaN
          measured[kernel * kNumDeviceKinds + kind] += node_cost[u * kNumDeviceKinds + kind];
      // Only outputs that leave the kernel (or leave the graph) are materialized.
      bool leaves = out_offsets[u] == out_offsets[u + 1];
      const int node_count = destinations(u, kernel, node_to, leaves);
      if (leaves) output_sum += node_outputs[u];
      for (int t = 0; t < node_count; ++t) {
        const std::int32_t to = node_to[t];
        if (by_kernel[to] != kernel) {
          by_kernel[to] = kernel;
          sum[to] = 0;
          kernel_to[kernel_count++] = to;
        }
        sum[to] += largest[to];
      }
    }
    if (priority) kernel_priority[kernel] = highest;
    kernel_flops[kernel] = kernel_flop_sum;
    params[kernel] = param_sum;
    outputs[kernel] = output_sum;
    write_edges(kernel, kernel_count, sum);
  }
  // In-edges grouped by consumer, producers increasing (a Graph's in_edges() order).
  std::int32_t* __restrict in_offset = f.in_offsets.data();
  in_offset[0] = 0;
  for (int i = 0; i < k; ++i) in_offset[i + 1] = in_offset[i] + in_degree[i];
  std::copy(in_offset, in_offset + k, next_free);
  // bytes_touched() of the kernel graph, additions in the same order: outputs + params, then
  // each in-edge's bytes by increasing producer, the order this pass writes the in-edges in.
  double* __restrict kernel_touched = touched.data();
  double* __restrict node_bytes = f.node_bytes.data();
  for (int kernel = 0; kernel < k; ++kernel) {
    kernel_touched[kernel] = static_cast<double>(outputs[kernel]) + static_cast<double>(params[kernel]);
    node_bytes[kernel] = static_cast<double>(outputs[kernel]);
  }
  NodeId* __restrict in_source = f.in_source.data();
  for (int src = 0; src < k; ++src)
    for (int e = out_offset[src]; e < out_offset[src + 1]; ++e) {
      const std::int32_t to = out_target[e];
      const int slot = next_free[to]++;
      in_source[slot] = src;
      kernel_touched[to] += edge_out_bytes[e];
    }
  const int num_devices = cluster.num_devices();
  f.cost.resize(static_cast<std::size_t>(k) * num_devices);
  const double not_measured = std::numeric_limits<double>::quiet_NaN();
  for (int d = 0; d < num_devices; ++d) {
    const Device& device = cluster.device(d);
    const int kind = static_cast<int>(device.kind);
    double* cost = f.cost.data() + static_cast<std::size_t>(d) * k;
    // Identical devices (the usual N x gpu) have identical columns: copy, skip the divisions.
    int same = 0;
    while (same < d && !same_cost_rule(cluster.device(same), device)) ++same;
    if (same < d) {
      std::copy_n(f.cost.data() + static_cast<std::size_t>(same) * k, k, cost);
      continue;
    }
    for (int kernel = 0; kernel < k; ++kernel)
      cost[kernel] = roofline_cost(kernel_flops[kernel], kernel_touched[kernel],
                                   measured_costs ? measured[kernel * kNumDeviceKinds + kind] : not_measured, device);
  }
}

FusedSimulator::FusedSimulator(GraphPtr graph, Cluster cluster)
    : simulator_(std::move(graph), std::move(cluster)), scratch_(std::make_unique<Scratch>(simulator_.graph())) {}

FusedSimulator::FusedSimulator(const Simulator& simulator)
    : simulator_(simulator), scratch_(std::make_unique<Scratch>(simulator_.graph())) {}

FusedSimulator::FusedSimulator(const FusedSimulator& other)
    : simulator_(other.simulator_), scratch_(std::make_unique<Scratch>(simulator_.graph())), result_(other.result_) {}

FusedSimulator& FusedSimulator::operator=(const FusedSimulator& other) {
  if (this != &other) *this = FusedSimulator(other);
  return *this;
}

FusedSimulator::FusedSimulator(FusedSimulator&&) noexcept = default;
FusedSimulator& FusedSimulator::operator=(FusedSimulator&&) noexcept = default;
FusedSimulator::~FusedSimulator() = default;

const SimulationResult& FusedSimulator::run(const Decisions& decisions, const std::int32_t* fusion_priority,
                                            int max_fusion_size, FusionPlan* plan_out) {
  const Graph& g = simulator_.graph();
  const int n = g.num_nodes();
  Scratch& s = *scratch_;
  const std::int32_t* placement = decisions.placement;
  if (!placement) {  // all on device 0
    s.placement.assign(n, 0);
    placement = s.placement.data();
  }
  std::string invalid_reason = simulator_.validate(placement, decisions.priority);
  const Planner::KernelMembers members{s.member_offsets.data(), s.members.data(), s.fill.data()};
  s.planner.plan(placement, fusion_priority, max_fusion_size, kFusionWindow, s.plan, &members);
  // A kernel runs at its members' highest priority; without priorities, FIFO as unfused.
  s.build_kernels(g, simulator_.cluster(), placement, decisions.priority);
  const double* kernel_priority = decisions.priority ? s.kernel_priority.data() : nullptr;
  const SimulationResult& kr = simulator_.run_flat(s.kernels, {s.kernel_placement.data(), kernel_priority});

  SimulationResult& r = result_;  // device-level numbers carry over
  r.runtime = kr.runtime;
  r.device_busy = kr.device_busy;
  r.peak_memory = kr.peak_memory;
  r.oom = kr.oom;
  r.bytes_moved = kr.bytes_moved;
  r.invalid = !invalid_reason.empty();
  r.invalid_reason = std::move(invalid_reason);
  r.start.resize(n);
  r.finish.resize(n);
  r.device.resize(n);
  r.critical.resize(n);
  r.kernel = s.plan.group;
  for (NodeId v = 0; v < n; ++v) {
    const auto kernel = s.plan.group[v];
    r.start[v] = kr.start[kernel];
    r.finish[v] = kr.finish[kernel];
    r.device[v] = kr.device[kernel];
    r.critical[v] = kr.critical[kernel];
  }
  r.transfers = kr.transfers;
  for (Transfer& t : r.transfers) t.node = s.members[s.member_offsets[t.node]];  // the kernel's lowest id
  if (plan_out) *plan_out = s.plan;
  return r;
}

SimulationResult simulate_fused(const GraphPtr& graph, const Cluster& cluster, const Decisions& decisions,
                                const std::int32_t* fusion_priority, int max_fusion_size, FusionPlan* plan_out) {
  FusedSimulator simulator(graph, cluster);
  return simulator.run(decisions, fusion_priority, max_fusion_size, plan_out);
}

}  // namespace goenv
