// The observation every task shares (docs/environments.md).
//
// Static parts are built once per graph and shared by every env on it
// (Python receives read-only zero-copy views); dynamic parts are fresh arrays
// each step, so an observation kept by the caller is never overwritten.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"

namespace goenv {

// Observation versions (Gymnasium ids goenv/<id>-v<version>). 2 adds the
// per-device arrays (device_features, device_state) and the node's slack as
// the last node_state column; a version-1 reader takes node_state's first
// node_state_dim(D, 1) columns and sees exactly version 1.
inline constexpr int kObservationVersion = 2;  // the latest, what envs produce unless told
inline constexpr int kFirstObservationVersion = 1;

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
  std::vector<float> device_state;       // (D, Sd); version 2
};

// Node features: op-type one-hot, then the columns named below.
const std::vector<std::string>& node_feature_names();
const std::vector<std::string>& edge_feature_names();
// Node state: one-hot current device (num_devices columns), then these columns.
const std::vector<std::string>& node_state_names(int version = kObservationVersion);
const std::vector<std::string>& global_names();
int node_state_dim(int num_devices, int version = kObservationVersion);
// Per device (version 2): static features of the cluster, and the state of the
// decisions in force. Times are fractions of the simulated runtime, memory of
// the device's capacity, so the numbers mean the same on any cluster.
const std::vector<std::string>& device_feature_names();
const std::vector<std::string>& device_state_names();
// (D, Fd), row-major: built from the cluster alone.
std::vector<float> device_features(const Cluster& cluster);

// Built once per graph; later calls for the same graph return the same object.
std::shared_ptr<const StaticObservation> static_observation(const GraphPtr& graph);

}  // namespace goenv
