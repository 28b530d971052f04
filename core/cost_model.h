// Roofline cost of one op on one device (DESIGN §2):
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

inline double op_cost(const Graph& graph, const std::vector<double>& touched, NodeId v,
                      const Device& device) {
  const double measured = graph.cost()[v * kNumDeviceKinds + static_cast<int>(device.kind)];
  if (!std::isnan(measured)) return measured;
  return std::max(graph.flops()[v] / device.peak_flops, touched[v] / device.memory_bandwidth) +
         device.launch_overhead;
}

}  // namespace goenv
