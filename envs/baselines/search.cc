// Searches with the simulator in the loop, within the simulator-call budget:
//  * random search (Bergstra & Bengio, "Random Search for Hyper-Parameter
//    Optimization", JMLR 2012): uniform decisions for the env's heads (a
//    colocation group draws one device), keeping the best feasible;
//  * best heuristic: the best by simulated runtime of the classic heuristics
//    for the env's heads (placement: expert, METIS, m-ETF, HEFT, each with
//    critical-path priorities and XLA fusion where the env decides those;
//    scheduling: critical-path and HEFT-rank levels; fusion: XLA), one
//    simulator call each. It is the agents' default teacher (agents/agent.h);
//  * local search: simulated annealing (Kirkpatrick, Gelatt & Vecchi,
//    "Optimization by Simulated Annealing", Science 1983) from the best of the
//    env's decisions and the best heuristic's candidates. A move changes one
//    op's (or one colocation group's) device, priority level or fusion level,
//    half the time an op on the current critical path; Metropolis acceptance;
//    infeasible candidates are rejected. The temperature falls geometrically
//    within epochs of 128, 256, 512, ... calls, each reheating to half the
//    previous epoch's start. Nothing depends on the budget, so the first K
//    calls of a longer run are the K-call run: more budget never returns worse.
// Both evaluate their starting point first, so they never return worse than it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "core/fusion.h"
#include "envs/baselines/baseline.h"
#include "envs/placement_heuristics.h"

namespace goenv {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

constexpr std::int64_t kFirstEpoch = 128;  // local search's first epoch, in simulator calls

// Uniform over [0, k) without `old` (k >= 2): draw among the first k - 1, the last stands in for `old`.
int other(std::mt19937_64& rng, int k, double old) {
  const int x = draw(rng, k - 1);
  return x == old ? k - 1 : x;
}

Solution random_search(Problem& p) {
  std::mt19937_64 rng(p.budget().seed);
  const Graph& g = p.graph();
  const int n = g.num_nodes();
  Solution best = p.start(), s = p.start();
  double best_runtime = kInf;
  const auto consider = [&](const Solution& candidate) {
    const SimulationResult& r = p.evaluate(candidate);
    if (feasible(r) && r.runtime < best_runtime) best_runtime = r.runtime, best = candidate;
  };
  if (p.calls_left() > 0) consider(s);
  const auto devices = p.decides(Head::kPlacement) ? unit_devices(p) : std::vector<std::vector<int>>{};
  std::vector<std::int32_t> unit_device(devices.size());
  while (p.calls_left() > 0) {
    if (p.decides(Head::kPlacement)) {
      for (std::size_t u = 0; u < devices.size(); ++u)
        unit_device[u] = devices[u][draw(rng, static_cast<int>(devices[u].size()))];
      for (NodeId v = 0; v < n; ++v) s.placement[v] = unit_device[p.units().unit[v]];
    }
    if (p.decides(Head::kPriority))
      for (double& x : s.priority) x = draw(rng, p.levels(Head::kPriority));
    if (p.decides(Head::kFusion))
      for (std::int32_t& x : s.fusion) x = draw(rng, p.levels(Head::kFusion));
    consider(s);
  }
  return best;
}

std::vector<NodeId> critical_nodes_of(const SimulationResult& r) {
  std::vector<NodeId> out;
  for (std::size_t v = 0; v < r.critical.size(); ++v)
    if (r.critical[v]) out.push_back(static_cast<NodeId>(v));
  return out;
}

}  // namespace

std::vector<std::vector<int>> unit_devices(Problem& p) {
  const Units& units = p.units();
  std::vector<std::vector<int>> out(units.size());
  for (int u = 0; u < units.size(); ++u) {
    for (int d = 0; d < p.cluster().num_devices(); ++d)
      if (units.allows(u, d)) out[u].push_back(d);
    if (out[u].empty())
      for (int d = 0; d < p.cluster().num_devices(); ++d) out[u].push_back(d);
  }
  return out;
}

namespace {

// A placement (or the start's), with critical-path
// priority levels and XLA fusion for the heads the search decides.
Solution tuned_start(Problem& p, std::vector<std::int32_t> placement) {
  Solution s = with_placement(p, std::move(placement));
  if (p.decides(Head::kPriority)) {
    const int levels = p.levels(Head::kPriority);
    const auto q = quantize_priorities(scale_priorities(critical_path_ranks(p, s.placement), levels), levels);
    s.priority.assign(q.begin(), q.end());
  }
  if (p.decides(Head::kFusion)) s.fusion = xla_fusion_priorities(p.graph());
  return s;
}

}  // namespace

std::vector<Solution> heuristic_candidates(Problem& p) {
  std::vector<Solution> out;
  if (p.decides(Head::kPlacement)) {
    for (const char* name : {"expert", "metis", "m-etf", "heft"})
      out.push_back(tuned_start(p, baseline(name).solve(p).placement));
  } else if (p.decides(Head::kPriority)) {
    for (const char* name : {"critical-path", "heft-rank"}) {
      Solution s = tuned_start(p, p.start().placement);
      s.priority = baseline(name).solve(p).priority;
      out.push_back(std::move(s));
    }
  } else {
    out.push_back(tuned_start(p, p.start().placement));
  }
  return out;
}

namespace {

// Evaluates `candidates` in order while the budget lasts; the first feasible
// best (the first candidate when none is feasible) and its runtime.
std::pair<Solution, double> best_of(Problem& p, const std::vector<Solution>& candidates,
                                    std::vector<NodeId>* critical = nullptr) {
  std::pair<Solution, double> best{candidates.front(), kInf};
  for (const Solution& s : candidates) {
    if (p.calls_left() == 0) break;
    const SimulationResult& r = p.evaluate(s);
    if (feasible(r) && r.runtime < best.second) {
      best = {s, r.runtime};
      if (critical != nullptr) *critical = critical_nodes_of(r);
    }
  }
  return best;
}

Solution best_heuristic(Problem& p) { return best_of(p, heuristic_candidates(p)).first; }

Solution local_search(Problem& p) {
  std::mt19937_64 rng(p.budget().seed);
  const Graph& g = p.graph();
  const int n = g.num_nodes();
  std::vector<Solution> starts = {p.start()};
  for (Solution& s : heuristic_candidates(p)) starts.push_back(std::move(s));
  std::vector<NodeId> critical;
  auto [current, runtime] = best_of(p, starts, &critical);
  Solution best = current;
  double best_runtime = runtime;

  // Moves: heads with something to change (placement needs a unit with two devices).
  const auto devices = p.decides(Head::kPlacement) ? unit_devices(p) : std::vector<std::vector<int>>{};
  std::vector<Head> moves;
  const bool movable = std::any_of(devices.begin(), devices.end(), [](const auto& d) { return d.size() > 1; });
  for (Head h : p.heads())
    if (h != Head::kPlacement || movable) moves.push_back(h);
  if (moves.empty()) return best;

  const double scale = std::isfinite(runtime) ? runtime : std::max(p.initial_runtime(), 1e-9);
  // Epoch e starts at hot / 2^e (not below 10 * cold) and cools geometrically to cold.
  const double hot = 0.02 * scale, cold = 1e-4 * scale;  // accept +2% w.p. 1/e at first, ~never at the end
  double epoch_hot = hot;
  std::vector<std::pair<NodeId, std::int32_t>> undo_placement;
  for (std::int64_t epoch = kFirstEpoch, k = 0; p.calls_left() > 0; ++k) {
    if (k == epoch) epoch *= 2, k = 0, epoch_hot = std::max(epoch_hot / 2, 10 * cold);
    const double temperature =
        epoch_hot * std::pow(cold / epoch_hot, static_cast<double>(k) / static_cast<double>(epoch));
    const Head head = moves[draw(rng, static_cast<int>(moves.size()))];
    const bool on_critical_path = !critical.empty() && draw(rng, 2);
    NodeId v = on_critical_path ? critical[draw(rng, static_cast<int>(critical.size()))] : draw(rng, n);
    double old_priority = 0;
    std::int32_t old_fusion = 0;
    undo_placement.clear();
    if (head == Head::kPlacement) {
      while (devices[p.units().unit[v]].size() < 2) v = draw(rng, n);
      const int u = p.units().unit[v];
      const auto& choices = devices[u];
      const auto here = std::find(choices.begin(), choices.end(), current.placement[v]) - choices.begin();
      const int d = choices[other(rng, static_cast<int>(choices.size()), static_cast<double>(here))];
      for (int i = p.units().offsets[u]; i < p.units().offsets[u + 1]; ++i) {
        const NodeId w = p.units().members[i];
        undo_placement.emplace_back(w, current.placement[w]);
        current.placement[w] = d;
      }
    } else if (head == Head::kPriority) {
      old_priority = current.priority[v];
      current.priority[v] = other(rng, p.levels(head), old_priority);
    } else {
      old_fusion = current.fusion[v];
      current.fusion[v] = other(rng, p.levels(head), old_fusion);
    }
    const SimulationResult& r = p.evaluate(current);
    const bool accept =
        feasible(r) && (r.runtime <= runtime || uniform(rng) < std::exp((runtime - r.runtime) / temperature));
    if (accept) {
      runtime = r.runtime;
      critical = critical_nodes_of(r);
      if (runtime < best_runtime) best_runtime = runtime, best = current;
    } else {
      for (const auto& [w, d] : undo_placement) current.placement[w] = d;
      if (head == Head::kPriority) current.priority[v] = old_priority;
      if (head == Head::kFusion) current.fusion[v] = old_fusion;
    }
  }
  return best;
}

}  // namespace
}  // namespace goenv

GOENV_REGISTER_BASELINE(kRandomSearchRegistered,
                        {/*name=*/"random-search",
                         /*heads=*/{goenv::Head::kPlacement, goenv::Head::kPriority, goenv::Head::kFusion},
                         /*description=*/"uniform random decisions, best feasible within the simulator budget",
                         /*solve=*/goenv::random_search})
GOENV_REGISTER_BASELINE(kBestHeuristicRegistered,
                        {/*name=*/"best-heuristic",
                         /*heads=*/{goenv::Head::kPlacement, goenv::Head::kPriority, goenv::Head::kFusion},
                         /*description=*/"the best of the classic heuristics by simulated runtime (one call each)",
                         /*solve=*/goenv::best_heuristic})
GOENV_REGISTER_BASELINE(kLocalSearchRegistered,
                        {/*name=*/"local-search",
                         /*heads=*/{goenv::Head::kPlacement, goenv::Head::kPriority, goenv::Head::kFusion},
                         /*description=*/"simulated annealing from the best heuristic, one op per move, cooling in doubling epochs",
                         /*solve=*/goenv::local_search})
