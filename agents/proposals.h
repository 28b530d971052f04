// What policy-guided search (search::optimize) simulates next: proposals from
// the policy's logits on the best decisions' observation, focused on the ops
// of that schedule's critical path.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "agents/policy.h"
#include "envs/observation.h"

namespace goenv::agents::proposals {

// The weight of a unit in move proposals: 1 on the critical path of the best
// decisions' schedule, 1e-3 elsewhere (moving an op off the critical path
// rarely shortens the run; GiPH's features say the same).
struct Focus {
  torch::Tensor nodes, units;  // (N,) and (U,) float64 on the CPU; units undefined without groups
  // The critical path's nodes and units in topological order ((P,) int64 on the CPU).
  torch::Tensor path_nodes, path_units;
  // The weights of a head's units: (U,) for placement, (N,) for node heads.
  const torch::Tensor& of(std::int64_t count) const { return units.defined() && units.size(0) == count ? units : nodes; }
  const torch::Tensor& path_of(std::int64_t count) const {
    return units.defined() && units.size(0) == count ? path_units : path_nodes;
  }
};

// The index of the "critical" column in a node_state row of `state_dim` columns
// at the policies' version (kPolicyObservationVersion): the named columns end it.
std::int64_t critical_column(std::int64_t state_dim);

// From an observation at the policies' version with `state_dim` node_state
// columns: its "critical" column.
Focus focus_of(const GraphTensors& graph, const DynamicObservation& observation, std::int64_t state_dim);

// Proposal k from the policy's masked logits of the best decisions' observation
// (per head (1, U, C)) and those decisions per unit (per head (1, U)), as per
// head (1, U) choices on the CPU:
//  * k = 0: the policy's greedy decision, as one-shot GO would take it;
//  * every 8th: a whole decision sampled from the policy;
//  * otherwise a move of 1, 2, 1, 4, 1, 2, 1, 8, ..., 16 units of one head (joint:
//    the heads in turn; small moves most often, as an annealer's), and in the search's
//    opening (the first min(budget, kOpeningCalls) proposals, `budget` > 0) at least
//    16 x (1 - k / opening) units: big segments first, as an annealer starts hot. A unit is
//    drawn with weight (1 - p(its current choice)) x focus (the units the
//    policy most wants to change, on the critical path) and goes to a choice
//    sampled from the policy among the others (GiPH and Placeto relocate;
//    REGAL lets a policy guide a search's moves). A move of m >= 2 units is a
//    segment: the m units of the critical path around the drawn one (in
//    topological order) all go to its new choice, where allowed.
std::vector<torch::Tensor> propose(const std::vector<torch::Tensor>& logits, const std::vector<torch::Tensor>& best,
                                   const Focus& focus, std::int64_t k, torch::Generator& generator,
                                   std::int64_t budget = 0);

// The search's opening and the most units one move takes. With a budget of a few dozen
// calls only a big move gains more than 1% (the zero-shot protocol's 16 calls from the
// best heuristic, 5 seeds: better by > 1% on 4 of the 8 held-out graphs, from 2 with the
// ruler alone); past the opening the ruler's small moves refine (at 1,024 calls an
// opening of the whole budget lost to local search on transformer-xl-2 and inception-64,
// one of 64 calls cost transformer-xl-2 its win; 32 keeps 8 of the 9 wins).
inline constexpr std::int64_t kOpeningCalls = 32;
inline constexpr std::int64_t kMostMoved = 16;

// The number of units proposal k of a search of `budget` calls moves (0 for the greedy
// decision and the samples; budget 0: no opening).
std::int64_t units_moved(std::int64_t k, std::int64_t budget = 0);

// Whether a proposal is the best decisions again (per head, per unit).
bool same_as(const std::vector<torch::Tensor>& proposal, const std::vector<torch::Tensor>& best);

}  // namespace goenv::agents::proposals
