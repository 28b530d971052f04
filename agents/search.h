// Using the policy: act on raw observations, evaluate episodes, and search for a graph's
// best decisions (optimize). A search reads start -> plan the budget once -> propose ->
// simulate -> keep the best, then optionally local search from the best; every simulation it
// makes is counted (agents/optimize.cc). The proposals are in agents/proposals.h, the
// search in docs/agents.md.
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
// Policy-guided search (docs/agents.md): exactly `budget` simulator calls on the
// policy's proposals from `start` ("" = the env's own start; "default" or a
// baseline's name), keeping the best; never worse than the start. Every call
// is reported, the start's too (result.start_calls).
// `seed` >= 0: proposals drawn from their own generator (config.seed, seed):
// reproducible runs that leave the agent's sampling generator alone; -1: the
// agent's generator. `start_budget`: the most calls a baseline named as `start`
// may make to find it (outside `budget`, counted in start_calls).
// `proposals`: the reading the proposals follow (Proposals in agents/agent.h); the ablations
// use the same budget, moves and generator.
OptimizeResult optimize(Model& model, const Env& env, std::int64_t budget, const std::string& start,
                        std::int64_t local_search_budget, std::int64_t seed = -1,
                        std::int64_t start_budget = kStartBudget, Proposals proposals = Proposals::kLearned);

// After a new best the policy is read again at most once per policy_read_gap(budget)
// calls: after every improvement up to kShortSearch calls (the zero-shot searches), beyond
// that at most 4 times after the first read, since a forward costs as much as hundreds of
// simulations on a CPU (docs/notes/search-moves.md has the measurements).
inline constexpr std::int64_t kShortSearch = 16;
inline std::int64_t policy_read_gap(std::int64_t budget) { return budget <= kShortSearch ? 1 : budget / 4; }

}  // namespace goenv::agents::search
