#include "envs/baselines/baseline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/suggest.h"
#include "core/fusion.h"
#include "core/lower_bound.h"
#include "envs/placement_heuristics.h"
#include "envs/registry.h"

namespace goenv {

namespace {

std::map<std::string, Baseline>& baselines() {
  static std::map<std::string, Baseline> table;
  return table;
}

bool has(const std::vector<Head>& heads, Head head) {
  return std::find(heads.begin(), heads.end(), head) != heads.end();
}

std::string head_list(const std::vector<Head>& heads) {
  std::vector<std::string> names;
  for (Head h : heads) names.emplace_back(head_name(h));
  return joined_names(names);
}

}  // namespace

CostTable::CostTable(const Graph& graph, const Cluster& cluster)
    : cluster_(cluster), num_devices_(cluster.num_devices()) {
  const int n = graph.num_nodes(), num_devices = num_devices_;
  const auto touched = bytes_touched(graph);
  cost_.resize(static_cast<std::size_t>(n) * num_devices);
  allowed_.resize(cost_.size());
  mean_cost_.resize(n);
  for (NodeId v = 0; v < n; ++v) {
    double sum_allowed = 0, sum_all = 0;
    int count = 0;
    for (int d = 0; d < num_devices; ++d) {
      const std::size_t i = static_cast<std::size_t>(v) * num_devices + d;
      cost_[i] = op_cost(graph, touched, v, cluster.device(d));
      allowed_[i] = graph.allows(v, cluster.device(d).kind);
      sum_all += cost_[i];
      if (allowed_[i]) sum_allowed += cost_[i], ++count;
    }
    mean_cost_[v] = count > 0 ? sum_allowed / count : sum_all / num_devices;
  }
  if (num_devices > 1) {
    for (const Link& l : cluster.links()) {
      mean_latency_ += l.latency;
      mean_seconds_per_byte_ += 1.0 / l.bandwidth;
    }
    const double pairs = static_cast<double>(cluster.links().size());
    mean_latency_ /= pairs;
    mean_seconds_per_byte_ /= pairs;
  }
}

double CostTable::busy(NodeId v, int d) const {
  const double c = cost(v, d);
  return c > 0 ? c + cluster_.device(d).op_gap : c;
}

double CostTable::mean_transfer(double bytes) const {
  return num_devices_ > 1 ? mean_latency_ + bytes * mean_seconds_per_byte_ : 0.0;
}

Units::Units(const Graph& graph, const CostTable& costs)
    : unit(graph.num_nodes(), kNone), num_devices(costs.num_devices()) {
  std::vector<std::int32_t> group_unit(graph.num_colocation_groups(), kNone);
  std::int32_t count = 0;
  for (NodeId v : graph.topological_order()) {
    const auto c = graph.colocation()[v];
    if (c == kNone) {
      unit[v] = count++;
    } else {
      if (group_unit[c] == kNone) group_unit[c] = count++;
      unit[v] = group_unit[c];
    }
  }
  offsets.assign(count + 1, 0);
  for (NodeId v = 0; v < graph.num_nodes(); ++v) ++offsets[unit[v] + 1];
  for (int u = 0; u < count; ++u) offsets[u + 1] += offsets[u];
  members.resize(graph.num_nodes());
  std::vector<std::int32_t> fill(offsets.begin(), offsets.end() - 1);
  for (NodeId v : graph.topological_order()) members[fill[unit[v]]++] = v;
  // A member that may run nowhere does not restrict its unit.
  allowed.assign(static_cast<std::size_t>(count) * num_devices, 1);
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    bool anywhere = false;
    for (int d = 0; d < num_devices; ++d) anywhere = anywhere || costs.allowed(v, d);
    for (int d = 0; d < num_devices && anywhere; ++d)
      if (!costs.allowed(v, d)) allowed[static_cast<std::size_t>(unit[v]) * num_devices + d] = 0;
  }
}

Problem::Problem(Env& env, const Budget& budget, std::vector<Head> heads)
    : env_(env), budget_(budget), heads_(std::move(heads)) {
  if (!env.placement().empty()) {  // after reset: the episode's current decisions
    start_ = {env.placement(), env.priority(), env.fusion()};
    initial_runtime_ = env.initial_runtime();
  } else {  // before reset: the initial decisions, as Env's constructor sets them
    const SimulationResult& r = env.evaluate({});
    start_.placement = r.device;
    initial_runtime_ = r.runtime;
    start_.priority.assign(env.graph().num_nodes(), 0.0);
    start_.fusion = env.fuses() ? xla_fusion_priorities(env.graph())
                                : std::vector<std::int32_t>(env.graph().num_nodes(), 0);
  }
}

bool Problem::decides(Head head) const { return has(heads_, head); }

const CostTable& Problem::costs() {
  if (!costs_) costs_.emplace(graph(), cluster());
  return *costs_;
}

const Units& Problem::units() {
  if (!units_) units_.emplace(graph(), costs());
  return *units_;
}

const SimulationResult& Problem::evaluate(const Solution& s) {
  GOENV_CHECK(calls_left() > 0, Error,
              "baseline ran past its budget of " << budget_.simulator_calls << " simulator calls");
  const SimulationResult& r = env_.evaluate(s.placement, s.priority, s.fusion);
  const double best = curve_.empty() ? std::numeric_limits<double>::infinity() : curve_.back();
  curve_.push_back(feasible(r) ? std::min(best, r.runtime) : best);
  return r;
}

void register_baseline(Baseline b) {
  const std::string name = b.name;
  GOENV_CHECK(!baselines().count(name), InvalidArgument, "baseline '" << name << "' registered twice");
  GOENV_CHECK(!b.heads.empty() && b.solve, InvalidArgument,
              "baseline '" << name << "' needs heads and a solve function");
  baselines().emplace(name, std::move(b));
}

const Baseline& baseline(const std::string& name) {
  auto it = baselines().find(name);
  GOENV_CHECK(it != baselines().end(), NotFound,
              "unknown baseline '" << name << "'; baselines: " << joined_names(baseline_names())
                                       << did_you_mean(name, baseline_names()));
  return it->second;
}

std::vector<std::string> baseline_names(const std::string& task) {
  const std::vector<Head>* task_heads = task.empty() ? nullptr : &task_spec(task).heads;
  std::vector<std::string> names;
  for (const auto& [name, b] : baselines())
    if (!task_heads || std::any_of(b.heads.begin(), b.heads.end(), [&](Head h) { return has(*task_heads, h); }))
      names.push_back(name);
  return names;
}

BaselineResult solve_baseline(Env& env, const std::string& name, const Budget& budget, bool measure) {
  const Baseline& method = baseline(name);
  GOENV_CHECK(budget.simulator_calls >= 0, InvalidArgument,
              "the simulator-call budget must be >= 0, got " << budget.simulator_calls);
  std::vector<Head> heads;
  for (Head h : env.heads())
    if (has(method.heads, h)) heads.push_back(h);
  GOENV_CHECK(!heads.empty(), InvalidArgument,
              "baseline '" << name << "' decides " << head_list(method.heads) << ", but env '" << env.id()
                           << "' (task '" << env.task() << "') decides only " << head_list(env.heads())
                           << "; baselines for this task: " << joined_names(baseline_names(env.task())));

  Problem problem(env, budget, heads);
  const auto begin = std::chrono::steady_clock::now();
  Solution s = method.solve(problem);
  const auto end = std::chrono::steady_clock::now();
  const Solution& start = problem.start();
  if (!problem.decides(Head::kPlacement)) s.placement = start.placement;
  if (!problem.decides(Head::kPriority)) s.priority = start.priority;
  if (!problem.decides(Head::kFusion)) s.fusion = start.fusion;
  const auto n = static_cast<std::size_t>(env.graph().num_nodes());
  GOENV_CHECK(s.placement.size() == n && s.priority.size() == n && s.fusion.size() == n, Error,
              "baseline '" << name << "' returned decisions of the wrong length");

  BaselineResult out;
  out.method = name;
  if (measure) {
    const SimulationResult& r = env.evaluate(s.placement, s.priority, s.fusion);
    out.runtime = r.runtime;
    out.oom = r.oom;
    out.invalid = r.invalid;
    out.invalid_reason = r.invalid_reason;
    out.lower_bound = env.bound().value;
  } else {
    out.runtime = out.lower_bound = std::numeric_limits<double>::quiet_NaN();
  }
  out.decisions = std::move(s);
  out.simulator_calls = problem.calls();
  out.curve = problem.curve();
  out.seconds = std::chrono::duration<double>(end - begin).count();
  out.initial_runtime = problem.initial_runtime();
  return out;
}

bool feasible(const SimulationResult& r) { return !r.oom && !r.invalid; }

Solution with_placement(Problem& problem, std::vector<std::int32_t> placement) {
  Solution s = problem.start();
  repair_placement(problem.graph(), problem.cluster(), placement);
  s.placement = std::move(placement);
  return s;
}

std::vector<double> device_shares(const Graph& graph, const CostTable& costs) {
  const int num_devices = costs.num_devices();
  std::vector<double> seconds(num_devices, 0.0), share(num_devices, 1.0 / num_devices);
  for (NodeId v = 0; v < graph.num_nodes(); ++v)
    for (int d = 0; d < num_devices; ++d) seconds[d] += costs.cost(v, d);
  if (*std::min_element(seconds.begin(), seconds.end()) <= 0) return share;  // nothing to weigh
  double total = 0;
  for (int d = 0; d < num_devices; ++d) total += share[d] = 1.0 / seconds[d];
  for (double& s : share) s /= total;
  return share;
}

std::vector<double> bottom_levels(const Graph& graph, const std::vector<double>& node_weight,
                                  const std::vector<double>& edge_weight) {
  std::vector<double> level(graph.num_nodes(), 0.0);
  const auto& order = graph.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const NodeId v = *it;
    double tail = 0;
    for (int e = graph.out_offsets()[v]; e < graph.out_offsets()[v + 1]; ++e)
      tail = std::max(tail, edge_weight[e] + level[graph.edge_dst()[e]]);
    level[v] = node_weight[v] + tail;
  }
  return level;
}

std::vector<double> scale_priorities(const std::vector<double>& ranks, int levels) {
  if (ranks.empty()) return {};
  const auto [lo, hi] = std::minmax_element(ranks.begin(), ranks.end());
  const double span = *hi - *lo;
  std::vector<double> out(ranks.size(), 0.0);
  if (span > 0)
    for (std::size_t i = 0; i < ranks.size(); ++i) out[i] = (ranks[i] - *lo) / span * (levels - 1);
  return out;
}

std::vector<std::int64_t> quantize_priorities(const std::vector<double>& values, int levels) {
  GOENV_CHECK(levels >= 1, InvalidArgument, "levels must be >= 1, got " << levels);
  for (std::size_t i = 0; i < values.size(); ++i)
    GOENV_CHECK(std::isfinite(values[i]), InvalidArgument, "priority[" << i << "] is " << values[i] << ", not finite");
  std::vector<double> distinct(values);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const auto k = static_cast<std::int64_t>(distinct.size());
  std::vector<std::int64_t> out(values.size(), 0);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::int64_t index = std::lower_bound(distinct.begin(), distinct.end(), values[i]) - distinct.begin();
    // Few distinct values: spread them over the whole range; many: equal buckets.
    out[i] = k <= levels ? (k > 1 ? index * (levels - 1) / (k - 1) : 0) : index * levels / k;
  }
  return out;
}

}  // namespace goenv
