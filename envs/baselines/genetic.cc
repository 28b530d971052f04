// Genetic search: a biased random-key genetic algorithm (BRKGA; Gonçalves &
// Resende, "Biased random-key genetic algorithms for combinatorial
// optimization", Journal of Heuristics 2011), as REGAL (Paliwal et al., ICLR
// 2020) uses it for placement and scheduling.
//
// A chromosome holds one key in [0, 1) per decision of the heads the env
// decides: per unit (a colocation group is one) its device among those it may
// use, per node its priority level and its fusion level; a key picks choice
// floor(key * choices). Each generation keeps the elite (the best 20%), adds
// random mutants (15%) and fills the rest with biased crossover of an elite and
// a non-elite parent, each key from the elite one with probability 0.7. The
// first population holds the start's keys and the best heuristic's candidates',
// the rest random; its size is the budget over 64 generations, 8 to 64.
// The start itself is simulated first, so the result is never worse than it.
// Decisions already simulated are not simulated again (looked up by a 64-bit
// hash), and the search stops when the budget is spent or when 100 generations
// in a row bring nothing new to simulate (a search space smaller than that).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "envs/baselines/baseline.h"

namespace goenv {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kEliteShare = 0.2, kMutantShare = 0.15, kEliteInheritance = 0.7;
constexpr std::int64_t kMinPopulation = 8, kMaxPopulation = 64, kGenerations = 64;
constexpr int kMaxIdleGenerations = 100;

using Keys = std::vector<double>;

int pick(double key, int choices) { return std::min(choices - 1, static_cast<int>(key * choices)); }
double key_of(int index, int choices) { return (index + 0.5) / choices; }

// Keys <-> decisions: [one per unit (placement)] [one per node (priority)] [one per node (fusion)].
class Codec {
 public:
  explicit Codec(Problem& p) : p_(p), nodes_(p.graph().num_nodes()) {
    if (p.decides(Head::kPlacement)) devices_ = unit_devices(p);
    priority_begin_ = devices_.size();
    fusion_begin_ = priority_begin_ + (p.decides(Head::kPriority) ? nodes_ : 0);
    size_ = fusion_begin_ + (p.decides(Head::kFusion) ? nodes_ : 0);
  }
  std::size_t size() const { return size_; }

  void decode(const Keys& keys, Solution& s) const {
    if (!devices_.empty()) {
      const Units& units = p_.units();
      for (std::size_t v = 0; v < nodes_; ++v) {
        const auto& choices = devices_[units.unit[v]];
        s.placement[v] = choices[pick(keys[units.unit[v]], static_cast<int>(choices.size()))];
      }
    }
    if (p_.decides(Head::kPriority))
      for (std::size_t v = 0; v < nodes_; ++v)
        s.priority[v] = pick(keys[priority_begin_ + v], p_.levels(Head::kPriority));
    if (p_.decides(Head::kFusion))
      for (std::size_t v = 0; v < nodes_; ++v)
        s.fusion[v] = pick(keys[fusion_begin_ + v], p_.levels(Head::kFusion));
  }

  // The keys that decode to `s` where it can be encoded (a unit's first member's
  // device, priorities rounded to levels); a random key where it cannot.
  Keys encode(const Solution& s, std::mt19937_64& rng) const {
    Keys keys(size_);
    const Units* units = devices_.empty() ? nullptr : &p_.units();
    for (std::size_t u = 0; u < devices_.size(); ++u) {
      const auto& choices = devices_[u];
      const auto at = std::find(choices.begin(), choices.end(), s.placement[units->members[units->offsets[u]]]);
      keys[u] = at == choices.end() ? uniform(rng)
                                    : key_of(static_cast<int>(at - choices.begin()), static_cast<int>(choices.size()));
    }
    const auto level = [](double x, int levels) { return std::clamp(static_cast<int>(std::lround(x)), 0, levels - 1); };
    if (p_.decides(Head::kPriority)) {
      const int levels = p_.levels(Head::kPriority);
      for (std::size_t v = 0; v < nodes_; ++v) keys[priority_begin_ + v] = key_of(level(s.priority[v], levels), levels);
    }
    if (p_.decides(Head::kFusion)) {
      const int levels = p_.levels(Head::kFusion);
      for (std::size_t v = 0; v < nodes_; ++v) keys[fusion_begin_ + v] = key_of(level(s.fusion[v], levels), levels);
    }
    return keys;
  }

 private:
  Problem& p_;
  std::size_t nodes_, priority_begin_ = 0, fusion_begin_ = 0, size_ = 0;
  std::vector<std::vector<int>> devices_;
};

std::uint64_t mix(std::uint64_t h, std::uint64_t x) {  // splitmix64's finalizer over h ^ x
  std::uint64_t z = (h ^ x) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t hash_of(const Solution& s) {
  std::uint64_t h = 0;
  for (std::int32_t d : s.placement) h = mix(h, static_cast<std::uint64_t>(d));
  for (double x : s.priority) h = mix(h, static_cast<std::uint64_t>(std::llround(x * 1024)));
  for (std::int32_t f : s.fusion) h = mix(h, static_cast<std::uint64_t>(f));
  return h;
}

Solution genetic(Problem& p) {
  Solution best = p.start();
  if (p.calls_left() == 0) return best;
  std::mt19937_64 rng(p.budget().seed);
  const Codec codec(p);
  std::unordered_map<std::uint64_t, double> seen;  // hash of decisions -> runtime (infinity: infeasible)
  double best_runtime = kInf;
  Solution decoded = p.start();
  bool simulated = false;  // whether the generation simulated anything

  const auto simulate = [&](const Solution& s) {
    const SimulationResult& r = p.evaluate(s);
    const double runtime = feasible(r) ? r.runtime : kInf;
    seen.emplace(hash_of(s), runtime);
    if (runtime < best_runtime) best_runtime = runtime, best = s;
    simulated = true;
    return runtime;
  };
  // The runtime `keys` decode to; NaN when that needs a simulation and the budget is spent.
  const auto fitness = [&](const Keys& keys) {
    codec.decode(keys, decoded);
    const auto it = seen.find(hash_of(decoded));
    if (it != seen.end()) return it->second;
    return p.calls_left() > 0 ? simulate(decoded) : std::numeric_limits<double>::quiet_NaN();
  };
  const auto random_keys = [&] {
    Keys keys(codec.size());
    for (double& k : keys) k = uniform(rng);
    return keys;
  };

  simulate(p.start());
  const std::int64_t size = std::clamp(p.budget().simulator_calls / kGenerations, kMinPopulation, kMaxPopulation);
  const auto elites = std::max<std::int64_t>(1, std::llround(kEliteShare * static_cast<double>(size)));
  const auto mutants = std::max<std::int64_t>(1, std::llround(kMutantShare * static_cast<double>(size)));

  std::vector<Keys> population = {codec.encode(p.start(), rng)};
  for (const Solution& s : heuristic_candidates(p))
    if (static_cast<std::int64_t>(population.size()) < size) population.push_back(codec.encode(s, rng));
  while (static_cast<std::int64_t>(population.size()) < size) population.push_back(random_keys());
  std::vector<double> runtime(population.size());
  for (std::size_t i = 0; i < population.size(); ++i)
    if (std::isnan(runtime[i] = fitness(population[i]))) return best;

  std::vector<std::size_t> order(population.size());
  std::vector<Keys> next;
  std::vector<double> next_runtime;
  for (int idle = 0; idle < kMaxIdleGenerations; idle = simulated ? 0 : idle + 1) {
    simulated = false;
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return runtime[a] < runtime[b]; });
    next.clear();
    next_runtime.clear();
    for (std::int64_t i = 0; i < elites; ++i) {
      next.push_back(population[order[i]]);
      next_runtime.push_back(runtime[order[i]]);
    }
    for (std::int64_t i = 0; i < mutants; ++i) next.push_back(random_keys());
    while (static_cast<std::int64_t>(next.size()) < size) {
      const Keys& elite = population[order[draw(rng, static_cast<int>(elites))]];
      const Keys& other = population[order[elites + draw(rng, static_cast<int>(size - elites))]];
      Keys child(codec.size());
      for (std::size_t k = 0; k < child.size(); ++k) child[k] = uniform(rng) < kEliteInheritance ? elite[k] : other[k];
      next.push_back(std::move(child));
    }
    for (std::size_t i = next_runtime.size(); i < next.size(); ++i) {
      next_runtime.push_back(fitness(next[i]));
      if (std::isnan(next_runtime.back())) return best;
    }
    population.swap(next);
    runtime.swap(next_runtime);
  }
  return best;
}

}  // namespace
}  // namespace goenv

GOENV_REGISTER_BASELINE(kGeneticRegistered,
                        {/*name=*/"genetic",
                         /*heads=*/{goenv::Head::kPlacement, goenv::Head::kPriority, goenv::Head::kFusion},
                         /*description=*/"BRKGA genetic search (as in REGAL) over random keys per unit and node, "
                                         "seeded with the start and the best heuristic's candidates",
                         /*solve=*/goenv::genetic})
