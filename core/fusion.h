// Op fusion (DESIGN §2). A fused group is a set of nodes on one device run as
// one kernel: one launch overhead, the members' flops summed, and only bytes
// that cross the group boundary touch memory.
//
// Decisions are per-node priorities (0 = do not fuse). The greedy pass visits
// nodes by descending priority (ties: topological order) and merges each into
// the group of one of its producers (largest edge first) when the union is legal:
//  * all members on one device (ops on different devices never fuse);
//  * no opaque op; a reduction only as a sink of the group (nothing inside
//    consumes it);
//  * convex: no path leaves the group and re-enters it;
//  * at most max_fusion_size members.
// The XLA-style default gives every elementwise and reduction op priority 1.
#pragma once

#include <cstdint>
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

FusionPlan plan_fusion(const Graph& graph, const std::int32_t* placement, const std::int32_t* priority,
                       int max_fusion_size);

// XLA-style default priorities: 1 for elementwise and reduction ops, 0 otherwise.
std::vector<std::int32_t> xla_fusion_priorities(const Graph& graph);

// The kernel graph: one node per group, edges between groups carrying the bytes
// of each distinct tensor that crosses (once per destination kernel).
GraphPtr contract(const Graph& graph, const FusionPlan& plan);

// Simulates with fusion: plans, contracts, simulates the kernel graph and maps
// the timeline back to the original nodes (fused nodes share start and finish).
// Validity (colocation, device kinds) is judged on the original nodes.
SimulationResult simulate_fused(const GraphPtr& graph, const Cluster& cluster, const Decisions& decisions,
                                const std::int32_t* fusion_priority, int max_fusion_size,
                                FusionPlan* plan_out = nullptr);

}  // namespace goenv
