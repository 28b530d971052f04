// Roofline cost of one op on one device (docs/simulator.md):
//   max(flops / peak_flops, bytes_touched / memory_bandwidth) + launch_overhead,
// unless the op carries a measured cost for the device's kind, which is used as is.
// bytes_touched = bytes of all input edges + output_bytes + param_bytes.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"

namespace goenv {

// Per-node bytes each op reads and writes; computed once per graph.
std::vector<double> bytes_touched(const Graph& graph);

// The formula itself, for ops that are not nodes of a Graph (the fusion pass's kernels).
inline double roofline_cost(double flops, double touched, double measured, const Device& device) {
  if (!std::isnan(measured)) return measured;
  return std::max(flops / device.peak_flops, touched / device.memory_bandwidth) + device.launch_overhead;
}

inline double op_cost(const Graph& graph, const std::vector<double>& touched, NodeId v,
                      const Device& device) {
  return roofline_cost(graph.flops()[v], touched[v], graph.cost()[v * kNumDeviceKinds + static_cast<int>(device.kind)],
                       device);
}

}  // namespace goenv
