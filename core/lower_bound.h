// A lower bound on the makespan of any decision (DESIGN §2):
//   max(critical path with every op on its fastest allowed device and free
//       communication, total work on the fastest devices / number of devices).
#pragma once

#include "core/cluster.h"
#include "core/graph.h"

namespace goenv {

struct LowerBound {
  double value = 0;          // seconds: max of the two below
  double critical_path = 0;  // seconds
  double work = 0;           // seconds: sum of fastest costs / devices
};

LowerBound lower_bound(const Graph& graph, const Cluster& cluster);

}  // namespace goenv
