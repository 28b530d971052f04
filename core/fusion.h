// Op fusion (docs/simulator.md). A fused group is a set of nodes on one device run as
// one kernel: one launch overhead, the members' flops summed, and only bytes
// that cross the group boundary touch memory.
//
// Decisions are per-node priorities (0 = do not fuse: the node stays a kernel of
// its own). The greedy pass visits the nodes of priority > 0 by descending
// priority (ties: topological order) and merges each into the group of one of
// its producers of priority > 0 (largest edge first) when the union is legal:
//  * all members on one device (ops on different devices never fuse);
//  * no opaque op; a reduction only as a sink of the group (nothing inside
//    consumes it);
//  * convex: no path leaves the group and re-enters it;
//  * at most max_fusion_size members.
// The XLA-style default gives every elementwise and reduction op priority 1.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/simulator.h"

namespace goenv {

struct FusionPlan {
  std::vector<std::int32_t> group;  // per node: kernel id, 0..num_groups-1 by lowest member id
  int num_groups = 0;
  int num_fused_nodes = 0;          // nodes sharing a kernel with another node
};

// Groups are kept in a dynamic topological order of slots; a merge whose two
// groups lie more than this many slots apart is refused (it bounds the
// convexity search). Part of the pass's definition: results depend on it.
inline constexpr int kFusionWindow = 4096;

FusionPlan plan_fusion(const Graph& graph, const std::int32_t* placement, const std::int32_t* priority,
                       int max_fusion_size, int max_window = kFusionWindow);

// XLA-style default priorities: 1 for elementwise and reduction ops, 0 otherwise.
std::vector<std::int32_t> xla_fusion_priorities(const Graph& graph);

// The kernel graph: one node per group, edges between groups carrying the bytes
// of each distinct tensor that crosses (once per destination kernel).
GraphPtr contract(const Graph& graph, const FusionPlan& plan);

// Simulating with fusion, reusable per (graph, cluster) like Simulator: plans,
// builds the kernel graph as flat arrays (what contract() describes, without
// making a Graph), simulates it with the simulator's scratch and maps the
// timeline back to the original nodes (fused nodes share start and finish).
// Validity (colocation, device kinds) is judged on the original nodes. No
// allocation after the first run. Not thread-safe; copies share the tables.
class FusedSimulator {
 public:
  FusedSimulator(GraphPtr graph, Cluster cluster);
  explicit FusedSimulator(const Simulator& simulator);  // shares its tables
  FusedSimulator(const FusedSimulator& other);
  FusedSimulator& operator=(const FusedSimulator& other);
  FusedSimulator(FusedSimulator&&) noexcept;
  FusedSimulator& operator=(FusedSimulator&&) noexcept;
  ~FusedSimulator();
  const SimulationResult& run(const Decisions& decisions, const std::int32_t* fusion_priority, int max_fusion_size,
                              FusionPlan* plan_out = nullptr);
  const Graph& graph() const { return simulator_.graph(); }
  const Cluster& cluster() const { return simulator_.cluster(); }

 private:
  struct Scratch;  // planner and kernel-graph workspace (fusion.cc)
  Simulator simulator_;
  std::unique_ptr<Scratch> scratch_;
  SimulationResult result_;
};

// One-shot convenience: builds a FusedSimulator and runs it.
SimulationResult simulate_fused(const GraphPtr& graph, const Cluster& cluster, const Decisions& decisions,
                                const std::int32_t* fusion_priority, int max_fusion_size,
                                FusionPlan* plan_out = nullptr);

}  // namespace goenv
