// Baselines: the classic heuristics and searches every learned policy is
// compared against. Each method registers itself (OpenSpiel-style) with a static
// descriptor and GOENV_REGISTER_BASELINE in its family's file (placement_simple,
// metis, baechi, heft, scheduling, fusion, search, genetic); solve_baseline
// runs one on an env and reports what its decisions simulate to.
//
// Contract:
//  * A method decides some heads (placement / priority / fusion); it runs on an
//    env whose task has at least one of them and decides those the env has.
//    Every other head keeps the env's current decisions (its initial ones
//    before reset). A method never touches the env's episode.
//  * Simulations go through Problem::evaluate, which counts them: a method never
//    runs more than Budget::simulator_calls. The final simulation that measures
//    the returned decisions is not counted (heuristics report 0 calls).
//    Problem::evaluate also records the anytime curve: after each call, the
//    best feasible runtime so far (BaselineResult::curve).
//  * Same env, method and seed: same decisions, whatever the thread count.
//  * Infeasible results (OOM, split colocation group, forbidden device kind)
//    are returned flagged, never hidden or replaced.
//  * Priorities are returned as doubles in [0, priority_levels - 1] (the
//    simulator orders by them as they are); the env's priority head takes
//    integer levels: quantize_priorities() turns one into the other, which can
//    merge close values, so the stepped runtime may differ slightly.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "envs/env.h"

namespace goenv {

struct Budget {
  std::int64_t simulator_calls = 1000;  // simulations a method may run
  std::uint64_t seed = 0;
};

// Solution (one value per node for every head) is envs/env.h's.

struct BaselineResult {
  std::string method;
  Solution decisions;
  double runtime = 0;  // seconds, simulated
  bool oom = false, invalid = false;
  std::string invalid_reason;
  std::int64_t simulator_calls = 0;  // simulations the method ran
  double seconds = 0;                // wall time of the method (steady clock), without the final measurement
  double lower_bound = 0;            // seconds (core/lower_bound.h)
  double initial_runtime = 0;        // seconds, the env's initial (compiler-default) decisions
  // Anytime curve, one entry per simulator call: entry k is the best feasible
  // runtime (seconds) among calls 0..k, infinity while none was feasible.
  std::vector<double> curve;
};

// Per-(node, device) costs the heuristics plan with: seconds as the simulator
// charges them (roofline or measured), transfer times over the cluster's links.
class CostTable {
 public:
  CostTable(const Graph& graph, const Cluster& cluster);
  int num_devices() const { return num_devices_; }
  double cost(NodeId v, int d) const { return cost_[static_cast<std::size_t>(v) * num_devices_ + d]; }
  // How long node v keeps device d busy: its cost plus the device's gap after a nonzero-cost op.
  double busy(NodeId v, int d) const;
  bool allowed(NodeId v, int d) const { return allowed_[static_cast<std::size_t>(v) * num_devices_ + d]; }
  double mean_cost(NodeId v) const { return mean_cost_[v]; }  // over the devices v may run on
  double transfer(int src, int dst, double bytes) const {
    return src == dst ? 0.0 : cluster_.transfer_time(src, dst, bytes);
  }
  double mean_transfer(double bytes) const;  // over ordered pairs of distinct devices; 0 with one device

 private:
  Cluster cluster_;
  int num_devices_;
  std::vector<double> cost_, mean_cost_;
  std::vector<char> allowed_;
  double mean_latency_ = 0, mean_seconds_per_byte_ = 0;
};

// Colocation groups as placement units: a group is one unit, any other node is
// its own. Units are numbered in order of their first member in topological
// order; members of unit u are members[offsets[u] .. offsets[u + 1]).
struct Units {
  Units(const Graph& graph, const CostTable& costs);
  int size() const { return static_cast<int>(offsets.size()) - 1; }
  // Whether every member of unit u that may run somewhere may run on device d
  // (false everywhere when the members' allowed kinds do not overlap).
  bool allows(int u, int d) const { return allowed[static_cast<std::size_t>(u) * num_devices + d]; }
  std::vector<std::int32_t> unit;  // per node
  std::vector<std::int32_t> offsets;
  std::vector<NodeId> members;
  int num_devices;
  std::vector<char> allowed;  // (unit, device)
};

// A solve in progress: the env, the budget, the decisions to start from, and
// the one sanctioned way to simulate.
class Problem {
 public:
  Problem(Env& env, const Budget& budget, std::vector<Head> heads);
  const Env& env() const { return env_; }
  const Graph& graph() const { return env_.graph(); }
  const Cluster& cluster() const { return env_.cluster(); }
  const Budget& budget() const { return budget_; }
  bool decides(Head head) const;
  const std::vector<Head>& heads() const { return heads_; }  // the heads this solve decides
  int levels(Head head) const { return env_.choices(head); }
  const Solution& start() const { return start_; }
  double initial_runtime() const { return initial_runtime_; }  // seconds, the env's initial decisions
  const CostTable& costs();
  const Units& units();

  // Simulates one solution and extends the curve; throws Error when the budget
  // is spent (a bug in the method).
  const SimulationResult& evaluate(const Solution& solution);
  std::int64_t calls() const { return static_cast<std::int64_t>(curve_.size()); }
  std::int64_t calls_left() const { return budget_.simulator_calls - calls(); }
  const std::vector<double>& curve() const { return curve_; }

 private:
  Env& env_;
  Budget budget_;
  std::vector<Head> heads_;
  Solution start_;
  double initial_runtime_ = 0;
  std::optional<CostTable> costs_;
  std::optional<Units> units_;
  std::vector<double> curve_;
};

struct Baseline {
  std::string name;         // "heft"; what solve() and goenv.baselines.solve() take
  std::vector<Head> heads;  // decisions it makes (a search: all it can; it decides those the env has)
  std::string description;  // one line for tables
  // Returns a full solution; heads outside problem.heads() are reset to the start.
  std::function<Solution(Problem&)> solve;
};

void register_baseline(Baseline baseline);
const Baseline& baseline(const std::string& name);  // NotFound lists the known names
// Registered names, sorted; with a task name only those that can run on it.
std::vector<std::string> baseline_names(const std::string& task = "");

// Runs a baseline. NotFound for an unknown name; InvalidArgument when the env's
// task has none of the method's heads or the budget is negative. measure=false
// leaves out the final measurement (one simulation of the decisions and the lower
// bound: runtime and lower_bound are NaN, oom and invalid false) for callers that
// simulate the decisions themselves, as labelling does in one batch.
BaselineResult solve_baseline(Env& env, const std::string& name, const Budget& budget = {}, bool measure = true);

// --- Helpers shared by the method files. ---

bool feasible(const SimulationResult& r);

// The start with its placement replaced by `placement`, repaired (colocation
// groups to their majority device, nodes off device kinds they do not allow).
Solution with_placement(Problem& problem, std::vector<std::int32_t> placement);

// The share of the work each device should get: proportional to its speed,
// 1 / (seconds it takes to run every op), so slow devices get less.
std::vector<double> device_shares(const Graph& graph, const CostTable& costs);

// Longest path from each node to a sink: node_weight[v] + max over out-edges e
// of (edge_weight[e] + level[dst]). Edge ids as in Graph::edge_src().
std::vector<double> bottom_levels(const Graph& graph, const std::vector<double>& node_weight,
                                  const std::vector<double>& edge_weight);

// HEFT's upward rank (heft.cc): bottom levels with mean compute and mean
// communication costs over the cluster.
std::vector<double> upward_rank(const Graph& graph, const CostTable& costs);
// HEFT's placement (heft.cc), unrepaired.
std::vector<std::int32_t> heft_placement(Problem& problem);
// Bottom levels under a placement (scheduling.cc): each op's cost on its device,
// transfers only between different devices.
std::vector<double> critical_path_ranks(Problem& problem, const std::vector<std::int32_t>& placement);

// The devices each unit may use (all of them when its members' kinds do not overlap).
std::vector<std::vector<int>> unit_devices(Problem& problem);
// What the best heuristic chooses from (search.cc): one solution per classic
// heuristic for the problem's heads, none of them simulated.
std::vector<Solution> heuristic_candidates(Problem& problem);

// Portable random draws (the standard distributions differ between libraries):
// uniform over [0, k) and over [0, 1).
inline int draw(std::mt19937_64& rng, int k) { return static_cast<int>(rng() % static_cast<std::uint64_t>(k)); }
inline double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Maps ranks linearly onto [0, levels - 1] (the largest rank gets levels - 1).
std::vector<double> scale_priorities(const std::vector<double>& ranks, int levels);

// Integer priority levels in [0, levels) for the env's priority head: order-
// preserving (equal values share a level, larger values never get a lower
// one), spreading the distinct values evenly over the levels.
std::vector<std::int64_t> quantize_priorities(const std::vector<double>& values, int levels);

}  // namespace goenv

#define GOENV_REGISTER_BASELINE(variable, ...)                               \
  namespace {                                                                \
  const bool variable = (::goenv::register_baseline(__VA_ARGS__), true);    \
  }
