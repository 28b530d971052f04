// What policy-guided search (search::optimize) simulates next: proposals from
// the policy's logits on the best decisions' observation, focused on the ops
// of that schedule's critical path.
#pragma once

#include <cstdint>
#include <string>
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

// What proposal k of a search of `budget` calls is (plan below).
enum class Kind {
  kDecision,  // a whole decision from the policy: greedy (k = 0) or sampled (every 8th past the opening)
  kSmooth,    // every run of at most `size` units of the critical path between two runs of
              // one choice goes to that choice (placement)
  kJoin,      // the drawn unit's run on the critical path goes to its neighbours' choice (placement)
  kMove,      // `size` units move: one drawn unit, or a segment of the critical path around it
  kShift,     // one unit crosses a change of choice on the critical path: the candidate ranked `size` (placement)
  kOffload,   // the `size` units of the busiest choice with the most data slack go to the least busy (placement)
};
struct Plan {
  Kind kind;
  std::int64_t size;  // units moved (kMove, kOffload), the longest run smoothed (kSmooth), a shift's rank, else 0
};

// The search's opening and the most units one move takes. With a budget of a few dozen
// calls only a big change gains more than 1%; past the opening the ruler's small moves
// refine (at 1,024 calls an opening of the whole budget lost to local search on
// transformer-xl-2 and inception-64, one of 64 calls cost transformer-xl-2 its win).
inline constexpr std::int64_t kOpeningCalls = 32;
inline constexpr std::int64_t kMostMoved = 16;
// The opening's first moves smooth the critical path: runs of at most 1, 2, 4, 8 units.
inline constexpr std::int64_t kSmoothings = 4;

// The opening's load moves, at calls where the plan would otherwise sample a whole decision
// (k = 7, 15, 23, 31) or join (k = 11): offloads of 16, 8 and 4 units and the two
// best-ranked shifts. They take the calls of moves that rarely pay (a sampled decision past
// the first call improved no search's best: none of about 130 per search, 3 seeds on 6
// graphs) for the two changes the opening's other moves do not make: a unit across a cut of
// the critical path, and work off the busiest device.
struct LoadMove {
  std::int64_t k;
  Kind kind;
  std::int64_t size;  // units offloaded, or the shift's rank
};
inline constexpr LoadMove kLoadMoves[] = {
    {7, Kind::kOffload, 16}, {11, Kind::kOffload, 8}, {15, Kind::kShift, 0}, {23, Kind::kOffload, 4}, {31, Kind::kShift, 1}};

// Past the opening, moves aim at the critical path's waits: where it changes choice it waits
// for a transfer, and a move of the unit before or after the cut can shorten or remove it. A
// unit beside a wait weighs 1 + kWaitWeight x (that wait / the path's mean wait) in the draw
// (1 elsewhere on the path), and goes, kAcrossShare of the time, to the choice across its wait
// instead of one sampled from the policy. At 1,024 calls, 5 seeds (0-4, then 5-9):
// amoebanet 267.8 -> 258.2 and 267.3 -> 256.3 ms, transformer-xl-2 38.3 -> 38.0 and 37.7 -> 37.6,
// the other go-placement graphs within their seed ranges. Chosen on those graphs (weights 2, 4,
// 8, 32; the choice across never, half the time, always). Proposals of the opening (index
// below kOpeningCalls) are unchanged: with the weights from the first call,
// transformer-xl-4's 16-call search lost its 1% over the best heuristic.
inline constexpr double kWaitWeight = 8.0;
inline constexpr double kAcrossShare = 0.5;

// The number of units proposal k moves if it is a move (0 for the greedy decision and the
// samples; budget 0: no opening): 1, 2, 1, 4, 1, 2, 1, 8, ..., 16 (a ruler sequence: small
// moves most often, as an annealer's), and in the opening (the first min(budget,
// kOpeningCalls) proposals) at least 16 x (1 - k / opening): big segments first, as an
// annealer starts hot.
std::int64_t units_moved(std::int64_t k, std::int64_t budget = 0);

// Proposal k of a search of `budget` calls (0: no opening): k = 0 and every 8th are
// decisions; in the opening (its first min(budget, kOpeningCalls) proposals), the first
// kSmoothings moves smooth runs of at most 1, 2, 4, 8 units, kLoadMoves take their calls,
// and the other even-numbered moves are joins; every other proposal is a move of
// units_moved(k, budget) units.
//
// Why smoothing and joins: from the best heuristic, the critical path often leaves a
// device for a short run and comes back (transformer-xl-8: runs of 3 ops on device 1
// between long runs on device 0). Each such excursion pays two transfers on the path, and
// bringing it back removes them (all of them at once: 69.3 -> 64.8 ms, one call). Moves
// to a device the policy samples find that rarely: the shipped policy's device preference
// is close to flat. Chosen on the 8 held-out transfer graphs' 16-call results (better than
// the best heuristic by > 1% on 6 of 8, against 4 with the big segments alone).
// Why shifts: where the path changes device it pays a transfer, and moving the cut by one
// unit (the unit before it joins the device after, or the other way round) can shrink it:
// place_your_model.py's TinyGPT on 2 GPUs, 24.26 -> 23.28 ms with one Reshape crossing.
// Why offloads: from a list scheduler's decisions one device often does nearly all the work
// (TinyGPT on 4 GPUs: 23.0 ms busy of 23.1) while ops on it could run much later without
// delaying anything but its queue (a weight update waits for the end of the step anyway);
// 16 of them on an idle device: 23.01 -> 22.75 ms. The load moves were chosen on the same
// 8 held-out graphs and TinyGPT's two clusters, 16 calls: better than the best heuristic by
// > 1% on 6 of 8 and on both clusters (5 and 15 seeds), against 6 of 8 and neither before.
// At 1,024 calls they cost gnmt-8 (99 calls, a third of them the opening) its win.
Plan plan(std::int64_t k, std::int64_t budget = 0);

// The policy's reading of the best decisions' observation: its masked logits, per head
// (1, U, C), and their softmax, per head (U, C) float64 on the CPU, computed once per reading
// rather than once per proposal (a search makes hundreds of proposals per reading).
struct Reading {
  std::vector<torch::Tensor> logits, probabilities;
};
Reading read(std::vector<torch::Tensor> logits);

// Proposal k (plan above) from the policy's masked logits of the best decisions'
// observation (per head (1, U, C)) and those decisions per unit (per head (1, U)), as per
// head (1, U) choices on the CPU. `placement_head`: the placement head's index (-1 if
// none: smoothing and joins are then moves). Moves rotate over the heads (joint: the heads
// in turn); smoothing and joins change the placement head.
//  * A decision: the policy's greedy one (k = 0), as one-shot GO would take it, or one
//    sampled from the policy.
//  * A move: units drawn with weight (1 - p(their current choice)) x focus (the units the
//    policy most wants to change, on the critical path; past the opening, raised beside the
//    path's waits: kWaitWeight) go to a choice sampled from the policy among the others (or,
//    past the opening, across their wait: kAcrossShare) (GiPH and Placeto relocate; REGAL
//    lets a policy guide a search's moves). A move of m >= 2 units is a segment: the m units of the critical
//    path around the drawn one (in topological order) all go to its new choice.
//  * A join: the drawn unit's run (the units around it on the critical path with its
//    choice) goes to the choice of the runs before and after it; where those two differ,
//    to one of them sampled from the policy.
//  * A smoothing: every run of at most `size` units between two runs of one choice goes
//    to that choice, all at once.
//  * A shift: at each change of choice along the critical path, the unit before it may take
//    the choice after it, or the unit after it the choice before. These candidates are ranked
//    by the path's wait at the change (longest first; per change, the unit before first),
//    and the shift takes candidate `size` of them (modulo their number).
//  * An offload: each choice's load is its units' work; the `size` units of the busiest
//    choice with the most data slack (Focus) go to the least busy choice.
//    A shift or offload with nothing to move (a path on one choice, a single choice) is a
//    decision sampled from the policy instead, as is either one without a placement head.
// Units keep their choice wherever the new one is not allowed.
std::vector<torch::Tensor> propose(const Reading& policy, const std::vector<torch::Tensor>& best, const Focus& focus,
                                   std::int64_t k, torch::Generator& generator, std::int64_t budget = 0,
                                   std::int64_t placement_head = -1);
// The same from the logits alone (read(logits) first).
std::vector<torch::Tensor> propose(const std::vector<torch::Tensor>& logits, const std::vector<torch::Tensor>& best,
                                   const Focus& focus, std::int64_t k, torch::Generator& generator,
                                   std::int64_t budget = 0, std::int64_t placement_head = -1);

// Whether a proposal is the best decisions again (per head, per unit).
bool same_as(const std::vector<torch::Tensor>& proposal, const std::vector<torch::Tensor>& best);

}  // namespace goenv::agents::proposals
