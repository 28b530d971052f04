// Using the policy: act on raw observations, evaluate episodes, and search
// for a graph's best decisions (optimize: greedy and sampled decisions, the
// best training found, then local search from the best). Every simulation a
// search makes is counted.
#pragma once

#include <cstdint>
#include <vector>

#include "agents/agent.h"
#include "agents/model.h"

namespace goenv::agents::search {

// act() on observations of one graph at a time: the graph's tensors are kept
// between calls while its content is the same.
class Actor {
 public:
  std::vector<std::vector<std::int64_t>> act(Model& model, const ObservationBatch& observation, bool deterministic);

 private:
  const GraphTensors& graph_for(const Model& model, const ObservationBatch& observation);
  std::uint64_t key_ = 0;
  GraphTensors graph_;
};

EvaluationResult evaluate(Model& model, const Env& env, int episodes, bool deterministic);
OptimizeResult optimize(Model& model, const Env& env, int samples, std::int64_t local_search_budget);

}  // namespace goenv::agents::search
