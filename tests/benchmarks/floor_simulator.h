// The floor goenv's Simulator is measured against: a bare list
// scheduler written the plain way, with the same timing rules as
// core/simulator.h but nothing else. One std::priority_queue of ready ops per
// device (FIFO: earliest ready, then lowest id), one of events, a free-time per
// link channel, transfers deduplicated per destination device. No validation,
// no priorities, no memory, no fusion, no per-node outputs: run() returns the
// makespan only. On the same graph, cluster and placement it returns the same
// makespan as Simulator::run (the benchmark checks this on every graph).
#pragma once

#include <cstdint>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"

namespace goenv::bench {

class FloorSimulator {
 public:
  FloorSimulator(GraphPtr graph, const Cluster& cluster);
  // Makespan in seconds of the graph under `placement` (device per node).
  double run(const std::int32_t* placement);

 private:
  GraphPtr graph_;
  Cluster cluster_;
  int num_devices_;
  std::vector<double> cost_;          // node-major cost(v, d), as the Simulator computes it
  std::vector<int> in_degree_;
  std::vector<double> op_gap_;        // per device
  std::vector<int> channel_;          // per (src * D + dst)
  std::vector<double> latency_, bandwidth_;  // per (src * D + dst)
};

}  // namespace goenv::bench
