// The observation every task shares (DESIGN §3).
//
// Static parts are built once per graph and shared by every env on it
// (Python receives read-only zero-copy views); dynamic parts are fresh arrays
// each step, so an observation kept by the caller is never overwritten.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/graph.h"

namespace goenv {

struct StaticObservation {
  int num_nodes = 0, num_edges = 0;
  int node_feature_dim = 0, edge_feature_dim = 0;
  std::vector<float> node_features;   // (N, F)
  std::vector<std::int64_t> edge_index;  // (2, E): row 0 sources, row 1 destinations (PyG)
  std::vector<float> edge_features;   // (E, Fe)
};

struct DynamicObservation {
  std::vector<float> node_state;         // (N, S)
  std::vector<std::int8_t> action_mask;  // (N, A)
  std::vector<float> globals;            // (G,)
};

// Node features: op-type one-hot, then the columns named below.
const std::vector<std::string>& node_feature_names();
const std::vector<std::string>& edge_feature_names();
// Node state: one-hot current device (num_devices columns), then these columns.
const std::vector<std::string>& node_state_names();
const std::vector<std::string>& global_names();
int node_state_dim(int num_devices);

// Built once per graph; later calls for the same graph return the same object.
std::shared_ptr<const StaticObservation> static_observation(const GraphPtr& graph);

}  // namespace goenv
