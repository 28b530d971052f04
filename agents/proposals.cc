#include "agents/proposals.h"

#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>

#include "agents/config.h"
#include "core/error.h"

namespace goenv::agents::proposals {

std::int64_t state_column(std::int64_t state_dim, const std::string& name) {
  const auto& names = node_state_names(kPolicyObservationVersion);
  const auto at = std::find(names.begin(), names.end(), name);
  GOENV_CHECK(at != names.end(), InvalidArgument, "no node_state column named " << name);
  return state_dim - static_cast<std::int64_t>(names.size()) + (at - names.begin());
}

std::int64_t critical_column(std::int64_t state_dim) { return state_column(state_dim, "critical"); }

namespace {

// Focus's data slack and work per node from the schedule's start and finish columns: latest
// finish over the successors' latest starts (the makespan for sinks), in one backward pass.
void data_slack(const GraphTensors& graph, const torch::Tensor& order, const float* state, std::int64_t state_dim,
                std::int64_t start, std::int64_t finish, Focus& f) {
  const std::int64_t n = graph.num_nodes, e = graph.num_edges;
  const torch::Tensor src = graph.source.to(torch::kCPU).contiguous(), dst = graph.destination.to(torch::kCPU).contiguous();
  const std::int64_t* s = src.data_ptr<std::int64_t>();
  const std::int64_t* d = dst.data_ptr<std::int64_t>();
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(n + 1), 0), targets(static_cast<std::size_t>(e));
  for (std::int64_t i = 0; i < e; ++i) ++offsets[s[i] + 1];
  for (std::int64_t v = 0; v < n; ++v) offsets[v + 1] += offsets[v];
  std::vector<std::int64_t> fill(offsets.begin(), offsets.end() - 1);
  for (std::int64_t i = 0; i < e; ++i) targets[fill[s[i]]++] = d[i];
  std::vector<double> begin(static_cast<std::size_t>(n)), end(static_cast<std::size_t>(n));
  double makespan = 0;
  for (std::int64_t v = 0; v < n; ++v) {
    begin[v] = state[v * state_dim + start];
    end[v] = std::max(begin[v], static_cast<double>(state[v * state_dim + finish]));
    makespan = std::max(makespan, end[v]);
  }
  std::vector<double> latest_start(static_cast<std::size_t>(n)), slack(static_cast<std::size_t>(n)),
      work(static_cast<std::size_t>(n));
  const std::int64_t* topo = order.data_ptr<std::int64_t>();
  for (std::int64_t i = n - 1; i >= 0; --i) {
    const std::int64_t v = topo[i];
    double latest_finish = makespan;
    for (std::int64_t j = offsets[v]; j < offsets[v + 1]; ++j) latest_finish = std::min(latest_finish, latest_start[targets[j]]);
    work[v] = end[v] - begin[v];
    latest_start[v] = latest_finish - work[v];
    slack[v] = std::max(0.0, latest_start[v] - begin[v]);
  }
  f.slack_nodes = torch::tensor(slack, torch::kFloat64);
  f.work_nodes = torch::tensor(work, torch::kFloat64);
}

// The mean of the waits > 0 (0 where none is).
double mean_wait(const torch::Tensor& waits) {
  const std::int64_t waiting = (waits > 0).sum().item<std::int64_t>();
  return waiting == 0 ? 0.0 : waits.sum().item<double>() / static_cast<double>(waiting);
}

}  // namespace

Focus focus_of(const GraphTensors& graph, const DynamicObservation& observation, std::int64_t state_dim) {
  const auto& names = node_state_names(kPolicyObservationVersion);
  GOENV_CHECK(state_dim >= static_cast<std::int64_t>(names.size()) &&
                  static_cast<std::int64_t>(observation.node_state.size()) == graph.num_nodes * state_dim,
              InvalidArgument, "focus_of: node_state has " << observation.node_state.size() << " values, not "
                                                           << graph.num_nodes << " nodes x " << state_dim << " columns");
  const torch::Tensor critical =
      torch::from_blob(const_cast<float*>(observation.node_state.data()), {graph.num_nodes, state_dim}, torch::kFloat32)
          .select(1, critical_column(state_dim))
          .to(torch::kFloat64);
  Focus f;
  f.nodes = critical * (1.0 - 1e-3) + 1e-3;
  const torch::Tensor order = graph.order.to(torch::kCPU).contiguous();
  f.path_nodes = order.index({critical.index({order}) > 0.5});
  // The wait before each path node: its start minus the previous path node's finish.
  const float* state = observation.node_state.data();
  const std::int64_t start = state_column(state_dim, "start"), finish = state_column(state_dim, "finish");
  const std::int64_t* path = f.path_nodes.data_ptr<std::int64_t>();
  const std::int64_t length = f.path_nodes.numel();
  std::vector<double> wait(static_cast<std::size_t>(length), 0.0);
  for (std::int64_t i = 1; i < length; ++i)
    wait[i] = std::max(0.0, static_cast<double>(state[path[i] * state_dim + start]) -
                                static_cast<double>(state[path[i - 1] * state_dim + finish]));
  f.wait_nodes = torch::tensor(wait, torch::kFloat64);
  data_slack(graph, order, state, state_dim, start, finish, f);
  if (graph.unit.defined()) {
    const torch::Tensor unit = graph.unit.to(torch::kCPU);
    f.units = torch::full({graph.num_units}, 1e-3, torch::kFloat64).scatter_reduce(0, unit, f.nodes, "amax");
    // A group's place on the path: its first critical member's (and the wait before it).
    std::vector<std::int64_t> seen(static_cast<std::size_t>(graph.num_units), 0), units;
    std::vector<double> unit_wait;
    const torch::Tensor along = unit.index({f.path_nodes}).contiguous();
    const std::int64_t* u = along.data_ptr<std::int64_t>();
    for (std::int64_t i = 0; i < length; ++i)
      if (!seen[static_cast<std::size_t>(u[i])]) {
        seen[static_cast<std::size_t>(u[i])] = 1;
        units.push_back(u[i]);
        unit_wait.push_back(units.size() == 1 ? 0.0 : wait[i]);
      }
    f.path_units = torch::tensor(units, torch::kInt64);
    f.wait_units = torch::tensor(unit_wait, torch::kFloat64);
    f.slack_units = torch::full({graph.num_units}, std::numeric_limits<double>::infinity(), torch::kFloat64)
                        .scatter_reduce(0, unit, f.slack_nodes, "amin");
    f.work_units = torch::zeros({graph.num_units}, torch::kFloat64).index_add(0, unit, f.work_nodes);
    f.mean_wait_units = mean_wait(f.wait_units);
  }
  f.mean_wait_nodes = mean_wait(f.wait_nodes);
  return f;
}

std::int64_t units_moved(std::int64_t k, std::int64_t budget) {
  if (k == 0 || k % 8 == 7) return 0;
  std::int64_t move = k - k / 8, size = 1;  // the moves alone count 1, 2, 3, ...: a ruler sequence
  while (move % 2 == 0 && size < kMostMoved) move /= 2, size *= 2;
  const std::int64_t opening = std::min(budget, kOpeningCalls);
  if (k < opening)  // at least 16 x (1 - k / opening) units: 15, 14, ... down to the ruler's sizes
    size = std::max(size, kMostMoved * (opening - k) / opening);
  return size;
}

Plan plan(std::int64_t k, std::int64_t budget) {
  if (k < std::min(budget, kOpeningCalls))
    for (const LoadMove& move : kLoadMoves)
      if (move.k == k) return {move.kind, move.size};
  const std::int64_t size = units_moved(k, budget);
  if (size == 0) return {Kind::kDecision, 0};
  const std::int64_t move = k - k / 8;  // 1, 2, 3, ... over the moves alone
  if (k < std::min(budget, kOpeningCalls)) {
    if (move <= kSmoothings) return {Kind::kSmooth, std::int64_t{1} << (move - 1)};
    if (move % 2 == 0) return {Kind::kJoin, 0};
  }
  return {Kind::kMove, size};
}

namespace {

// A head's decisions along the critical path, as runs of one choice.
struct Runs {
  torch::TensorAccessor<std::int64_t, 1> path, values;  // path: units in topological order
  torch::TensorAccessor<double, 2> allowed;             // (U, C): > 0 where a choice is allowed
  std::vector<std::int64_t> starts;                     // each run's first position, then the path's length

  Runs(const torch::Tensor& path_units, torch::Tensor& choices, const torch::Tensor& p)
      : path(path_units.accessor<std::int64_t, 1>()),
        values(choices.accessor<std::int64_t, 1>()),
        allowed(p.accessor<double, 2>()) {
    for (std::int64_t i = 0; i < path.size(0); ++i)
      if (i == 0 || values[path[i]] != values[path[i - 1]]) starts.push_back(i);
    starts.push_back(path.size(0));
  }
  std::int64_t count() const { return static_cast<std::int64_t>(starts.size()) - 1; }
  std::int64_t length(std::int64_t r) const { return starts[r + 1] - starts[r]; }
  std::int64_t choice(std::int64_t r) const { return values[path[starts[r]]]; }
  std::int64_t of(std::int64_t position) const {  // the run holding a position on the path
    return std::upper_bound(starts.begin(), starts.end(), position) - starts.begin() - 1;
  }
  void assign(std::int64_t r, std::int64_t c) {
    for (std::int64_t i = starts[r]; i < starts[r + 1]; ++i)
      if (allowed[path[i]][c] > 0) values[path[i]] = c;
  }
};

// The position of unit u on the path, or -1.
std::int64_t position_of(const torch::Tensor& path, std::int64_t u) {
  const auto along = path.accessor<std::int64_t, 1>();
  for (std::int64_t i = 0; i < along.size(0); ++i)
    if (along[i] == u) return i;
  return -1;
}

// The move weights past the opening: focus, raised to 1 + kWaitWeight x wait / (the mean of
// the path's waits) for the two units on either side of each wait; and per unit, the choice
// on the other side of its wait (-1 for units beside none; the longer wait's where two).
void wait_weights(const Focus& focus, std::int64_t units, const torch::TensorAccessor<std::int64_t, 1>& values,
                  std::vector<double>& weight, std::vector<std::int64_t>& across) {
  across.assign(static_cast<std::size_t>(units), -1);
  const double mean = focus.mean_wait_of(units);
  if (!(mean > 0)) return;
  const torch::Tensor& path = focus.path_of(units);
  const auto wait = focus.wait_of(units).accessor<double, 1>();
  const auto along = path.accessor<std::int64_t, 1>();
  for (std::int64_t i = 1; i < path.size(0); ++i) {
    if (!(wait[i] > 0)) continue;
    const double raised = 1.0 + kWaitWeight * wait[i] / mean;
    const std::int64_t before = along[i - 1], after = along[i];
    if (raised > weight[before]) weight[before] = raised, across[before] = values[after];
    if (raised > weight[after]) weight[after] = raised, across[after] = values[before];
  }
}

}  // namespace

Reading read(std::vector<torch::Tensor> logits) {
  Reading r;
  for (const auto& l : logits) r.probabilities.push_back(torch::softmax(l[0].to(torch::kCPU).to(torch::kFloat64), -1));
  r.logits = std::move(logits);
  return r;
}

std::vector<torch::Tensor> propose(const std::vector<torch::Tensor>& logits, const std::vector<torch::Tensor>& best,
                                   const Focus& focus, std::int64_t k, torch::Generator& generator, std::int64_t budget,
                                   std::int64_t placement_head) {
  return propose(read(logits), best, focus, k, generator, budget, placement_head);
}

std::vector<torch::Tensor> propose(const Reading& policy, const std::vector<torch::Tensor>& best, const Focus& focus,
                                   std::int64_t k, torch::Generator& generator, std::int64_t budget,
                                   std::int64_t placement_head) {
  const std::vector<torch::Tensor>& logits = policy.logits;
  std::vector<torch::Tensor> out;
  Plan planned = plan(k, budget);
  auto decision = [&] {  // the policy's greedy decision (k = 0) or one sampled from it
    out.clear();
    for (const auto& l : logits) out.push_back(sample_actions(l, k == 0, generator).to(torch::kCPU));
    return out;
  };
  if (planned.kind == Kind::kDecision || ((planned.kind == Kind::kShift || planned.kind == Kind::kOffload) && placement_head < 0))
    return decision();
  if (planned.kind != Kind::kMove && placement_head < 0) planned = {Kind::kMove, units_moved(k, budget)};
  for (const auto& b : best) out.push_back(b.clone());
  const std::size_t head = static_cast<std::size_t>(planned.kind == Kind::kMove ? k % static_cast<std::int64_t>(logits.size())
                                                                                  : placement_head);
  const torch::Tensor& p = policy.probabilities[head];  // (U, C)
  torch::Tensor current = out[head][0];                                                                // (U,)
  const std::int64_t units = p.size(0);
  const torch::Tensor path = focus.path_of(units);
  if (planned.kind == Kind::kOffload) {
    const auto slack = focus.slack_of(units).accessor<double, 1>();
    const auto work = focus.work_of(units).accessor<double, 1>();
    auto values = current.accessor<std::int64_t, 1>();
    auto allowed = p.accessor<double, 2>();
    const std::int64_t choices = p.size(1);
    std::vector<double> busy(static_cast<std::size_t>(choices), 0.0);
    for (std::int64_t u = 0; u < units; ++u) busy[values[u]] += work[u];
    const std::int64_t from = std::max_element(busy.begin(), busy.end()) - busy.begin();
    std::int64_t to = -1;
    for (std::int64_t c = 0; c < choices; ++c)
      if (c != from && (to < 0 || busy[c] < busy[to])) to = c;
    std::vector<std::int64_t> candidates;
    for (std::int64_t u = 0; u < units; ++u)
      if (to >= 0 && values[u] == from && allowed[u][to] > 0) candidates.push_back(u);
    if (candidates.empty()) return decision();
    const std::int64_t m = std::min<std::int64_t>(planned.size, static_cast<std::int64_t>(candidates.size()));
    std::partial_sort(candidates.begin(), candidates.begin() + m, candidates.end(),
                      [&](std::int64_t a, std::int64_t b) { return slack[a] != slack[b] ? slack[a] > slack[b] : a < b; });
    for (std::int64_t i = 0; i < m; ++i) values[candidates[i]] = to;
    return out;
  }
  if (planned.kind == Kind::kShift) {
    Runs runs(path, current, p);
    const auto wait = focus.wait_of(units).accessor<double, 1>();
    struct Candidate {
      double wait;
      std::int64_t unit, choice;
    };
    std::vector<Candidate> candidates;  // in path order, the unit before each change first
    for (std::int64_t r = 1; r < runs.count(); ++r) {
      const std::int64_t at = runs.starts[static_cast<std::size_t>(r)];
      const std::int64_t before = runs.path[at - 1], after = runs.path[at];
      if (runs.allowed[before][runs.choice(r)] > 0) candidates.push_back({wait[at], before, runs.choice(r)});
      if (runs.allowed[after][runs.choice(r - 1)] > 0) candidates.push_back({wait[at], after, runs.choice(r - 1)});
    }
    if (candidates.empty()) return decision();  // the whole path on one choice
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) { return a.wait > b.wait; });
    const Candidate& shift = candidates[static_cast<std::size_t>(planned.size) % candidates.size()];
    runs.values[shift.unit] = shift.choice;
    return out;
  }
  if (planned.kind == Kind::kSmooth) {
    Runs runs(path, current, p);
    std::vector<std::int64_t> before;  // the choices before any run moves
    for (std::int64_t r = 0; r < runs.count(); ++r) before.push_back(runs.choice(r));
    for (std::int64_t r = 1; r + 1 < runs.count(); ++r)
      if (runs.length(r) <= planned.size && before[r - 1] == before[r + 1]) runs.assign(r, before[r - 1]);
    return out;
  }
  const std::int64_t moves = planned.kind == Kind::kJoin ? 1 : std::min(units, planned.size);
  auto values = current.accessor<std::int64_t, 1>();
  auto allowed = p.accessor<double, 2>();
  // Past the opening, the units beside the path's waits weigh more, and each knows the choice
  // across its wait (-1: none).
  const auto focus_weight = focus.of(units).accessor<double, 1>();
  std::vector<double> weight(static_cast<std::size_t>(units));
  for (std::int64_t u = 0; u < units; ++u) weight[u] = focus_weight[u];
  std::vector<std::int64_t> across;
  if (k >= std::min(budget, kOpeningCalls)) wait_weights(focus, units, values, weight, across);
  // Gumbel top-m over log((1 - p(current)) x weight): units without another allowed choice weigh 0.
  // The products are the tensor expression's, value for value; the logarithms stay torch's.
  std::vector<double> moving(static_cast<std::size_t>(units));
  for (std::int64_t u = 0; u < units; ++u) moving[u] = std::max(1.0 - allowed[u][values[u]], 0.0) * weight[u];
  const torch::Tensor uniform = torch::rand({units}, generator, torch::kFloat64).clamp_min(1e-12);
  const torch::Tensor key = torch::log(torch::from_blob(moving.data(), {units}, torch::kFloat64)) -
                            torch::log(-torch::log(uniform));
  const torch::Tensor chosen_units = std::get<1>(key.topk(moves)).contiguous();
  const auto chosen = chosen_units.accessor<std::int64_t, 1>();
  // A choice for unit u other than its current one: the one across its wait (kAcrossShare of
  // the time, where it has one), else sampled from the policy; -1 where it has none.
  const std::int64_t choices = p.size(1);
  std::vector<double> other(static_cast<std::size_t>(choices));
  auto elsewhere = [&](std::int64_t u) -> std::int64_t {
    if (!across.empty() && across[u] >= 0 && across[u] != values[u] && allowed[u][across[u]] > 0 &&
        torch::rand({1}, generator, torch::kFloat64).item<double>() < kAcrossShare)
      return across[u];
    double total = 0;
    for (std::int64_t c = 0; c < choices; ++c) total += other[c] = c == values[u] ? 0.0 : allowed[u][c];
    if (!(total > 1e-12)) return -1;
    return torch::multinomial(torch::from_blob(other.data(), {choices}, torch::kFloat64), 1, false, generator)
        .item<std::int64_t>();
  };
  const std::int64_t drawn = chosen[0];
  const std::int64_t at = moves >= 2 || planned.kind == Kind::kJoin ? position_of(path, drawn) : -1;
  if (planned.kind == Kind::kJoin && at >= 0) {
    Runs runs(path, current, p);
    const std::int64_t r = runs.of(at), last = runs.count() - 1;
    if (last == 0) return out;  // the whole path on one choice: nothing to join
    const std::int64_t a = runs.choice(r > 0 ? r - 1 : r + 1), b = runs.choice(r < last ? r + 1 : r - 1);
    const double weight_a = allowed[drawn][a], weight_b = allowed[drawn][b];
    const bool to_a = a == b || torch::rand({1}, generator, torch::kFloat64).item<double>() * (weight_a + weight_b) <= weight_a;
    runs.assign(r, to_a ? a : b);
    return out;
  }
  // A move of several units is a segment: the drawn unit and its neighbours on
  // the critical path, in topological order, all to one choice. Moving ops of a
  // chain one at a time adds a transfer at each end of every op moved; a segment
  // pays them once (at 1,024 calls: transformer-xl-2 40.3 -> 38.2 ms,
  // amoebanet 290 -> 268 ms, median of 3 seeds; segments of up to 16 rather
  // than 8: rnnlm-4 83.0 -> 79.5, inception-64 147.7 -> 144.3).
  // (Drawn off the path, at weight 1e-3, the units drawn move one by one instead,
  // and a join's unit moves alone.)
  if (moves >= 2 && at >= 0) {
    const std::int64_t c = elsewhere(drawn);
    if (c < 0) return out;
    const std::int64_t length = path.size(0);
    const std::int64_t first = std::max<std::int64_t>(0, std::min(at - moves / 2, length - moves));
    auto along = path.accessor<std::int64_t, 1>();
    for (std::int64_t j = first; j < std::min(length, first + moves); ++j)
      if (allowed[along[j]][c] > 0) values[along[j]] = c;
    return out;
  }
  for (std::int64_t i = 0; i < moves; ++i) {
    const std::int64_t u = chosen[i];
    const std::int64_t c = elsewhere(u);
    if (c >= 0) values[u] = c;  // nowhere else to go: it stays
  }
  return out;
}

bool same_as(const std::vector<torch::Tensor>& proposal, const std::vector<torch::Tensor>& best) {
  for (std::size_t h = 0; h < proposal.size(); ++h) {
    const torch::Tensor& a = proposal[h];
    const torch::Tensor& b = best[h];
    if (a.scalar_type() == torch::kInt64 && b.scalar_type() == torch::kInt64 && a.is_cpu() && b.is_cpu() &&
        a.is_contiguous() && b.is_contiguous()) {  // a search's case: compared in place
      if (a.numel() != b.numel() ||
          !std::equal(a.data_ptr<std::int64_t>(), a.data_ptr<std::int64_t>() + a.numel(), b.data_ptr<std::int64_t>()))
        return false;
    } else if (!torch::equal(a.view(-1), b.view(-1))) {
      return false;
    }
  }
  return true;
}

}  // namespace goenv::agents::proposals
