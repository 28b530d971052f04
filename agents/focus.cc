#include "agents/focus.h"

#include <algorithm>
#include <limits>
#include <vector>

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

}  // namespace goenv::agents::proposals
