// Placements that need no search: the compiler default and a human expert's split.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"

namespace goenv {

// Everything on one device (TensorFlow's default).
std::vector<std::int32_t> single_device_placement(const Graph& graph, int device = 0);

// What a human does: walk the layer groups in forward order and cut them into
// contiguous runs of balanced compute, one run per device (a tower or a stack
// of RNN layers per GPU). Ungrouped nodes follow their grouped neighbours;
// colocation groups go where most of their members went; nodes never land on a
// device kind they do not allow.
std::vector<std::int32_t> expert_placement(const Graph& graph, const Cluster& cluster);

// Moves every colocation group to the device most of its members use and every
// node off device kinds it does not allow (first allowed device).
void repair_placement(const Graph& graph, const Cluster& cluster, std::vector<std::int32_t>& placement);

}  // namespace goenv
