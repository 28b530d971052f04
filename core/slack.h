// Slack of every node in a simulated schedule: how long the node could start
// later without delaying the makespan, keeping the schedule's device order.
//
// The schedule is read as a disjunctive graph: the data edges (a cross-device
// edge needs at least the link's transfer time) plus, on each device, each
// kernel after the one before it (with the device's gap after a kernel of
// nonzero cost). Latest finish times come from one backward pass in
// decreasing start order; slack = latest start - start, never negative. Nodes
// on the critical path have (close to) zero slack; link contention the
// simulator charged is not assumed again, so slack is an upper bound there.
#pragma once

#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/simulator.h"

namespace goenv {

// Seconds per node; empty when the result holds no per-node schedule.
std::vector<double> schedule_slack(const Graph& graph, const Cluster& cluster, const SimulationResult& result);

}  // namespace goenv
