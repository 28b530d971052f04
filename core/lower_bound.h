// A lower bound on the makespan of any decision (docs/simulator.md):
//   max(critical path with every op on its fastest allowed device and free
//       communication, total work on the fastest devices / number of devices).
// With `fusion` (tasks that decide it), any fusion too: a fused kernel pays one
// launch and touches only the bytes crossing it, so a fusible op counts only what
// it costs inside any kernel: its compute, flops / peak FLOP/s (or its measured
// cost, if lower: a kernel of measured ops costs their sum). Opaque ops never
// fuse and keep their whole cost. A path through a kernel still takes at least
// the sum of its members' shares, and the work bound sums them likewise.
#pragma once

#include "core/cluster.h"
#include "core/graph.h"

namespace goenv {

struct LowerBound {
  double value = 0;          // seconds: max of the two below
  double critical_path = 0;  // seconds
  double work = 0;           // seconds: sum of fastest costs / devices
};

LowerBound lower_bound(const Graph& graph, const Cluster& cluster, bool fusion = false);

}  // namespace goenv
