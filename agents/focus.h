// Where policy-guided search looks: the critical path of the best decisions' schedule,
// its waits, and each op's data slack and work, read from the best decisions' observation.
// The moves (agents/moves/) weigh, rank and pick units by it; docs/agents.md explains why.
#pragma once

#include <cstdint>
#include <string>

#include <torch/torch.h>

#include "agents/policy.h"
#include "envs/observation.h"

namespace goenv::agents::proposals {

// The weight of a unit in move proposals: 1 on the critical path of the best
// decisions' schedule, 1e-3 elsewhere (moving an op off the critical path
// rarely shortens the run).
struct Focus {
  torch::Tensor nodes, units;  // (N,) and (U,) float64 on the CPU; units undefined without groups
  // The critical path's nodes and units in topological order ((P,) int64 on the CPU).
  torch::Tensor path_nodes, path_units;
  // Per position on those paths: how long the schedule waits between the path's previous
  // node finishing and this position's node starting ((P,) float64 on the CPU; 0 at the
  // first position): on the best decisions' path, the transfers where it changes device.
  torch::Tensor wait_nodes, wait_units;
  // The weights of a head's units: (U,) for placement, (N,) for node heads.
  const torch::Tensor& of(std::int64_t count) const { return units.defined() && units.size(0) == count ? units : nodes; }
  const torch::Tensor& path_of(std::int64_t count) const {
    return units.defined() && units.size(0) == count ? path_units : path_nodes;
  }
  const torch::Tensor& wait_of(std::int64_t count) const {
    return units.defined() && units.size(0) == count ? wait_units : wait_nodes;
  }
  // The mean of those waits that are > 0 (0 where none is), for the nodes' and the units' path.
  double mean_wait_nodes = 0, mean_wait_units = 0;
  double mean_wait_of(std::int64_t count) const {
    return units.defined() && units.size(0) == count ? mean_wait_units : mean_wait_nodes;
  }
  // Per node and per unit: the schedule's data slack (how much later it could finish with
  // every other op where it is, ignoring the queues of devices; a unit's: its members'
  // least) and its work (finish - start; a unit's: its members' sum), float64 on the CPU.
  torch::Tensor slack_nodes, slack_units, work_nodes, work_units;
  const torch::Tensor& slack_of(std::int64_t count) const {
    return units.defined() && units.size(0) == count ? slack_units : slack_nodes;
  }
  const torch::Tensor& work_of(std::int64_t count) const {
    return units.defined() && units.size(0) == count ? work_units : work_nodes;
  }
};

// The index of the "critical" column in a node_state row of `state_dim` columns
// at the policies' version (kPolicyObservationVersion): the named columns end it.
std::int64_t critical_column(std::int64_t state_dim);
// The same for any named column (node_state_names); InvalidArgument for another name.
std::int64_t state_column(std::int64_t state_dim, const std::string& name);

// From an observation at the policies' version with `state_dim` node_state
// columns: its "critical" column.
Focus focus_of(const GraphTensors& graph, const DynamicObservation& observation, std::int64_t state_dim);

}  // namespace goenv::agents::proposals
