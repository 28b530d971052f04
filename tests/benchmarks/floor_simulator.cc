#include "tests/benchmarks/floor_simulator.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <tuple>

#include "core/cost_model.h"

namespace goenv::bench {

FloorSimulator::FloorSimulator(GraphPtr graph, const Cluster& cluster)
    : graph_(std::move(graph)), cluster_(cluster), num_devices_(cluster.num_devices()) {
  const Graph& g = *graph_;
  const std::vector<double> touched = bytes_touched(g);
  cost_.resize(static_cast<std::size_t>(g.num_nodes()) * num_devices_);
  for (NodeId v = 0; v < g.num_nodes(); ++v)
    for (int d = 0; d < num_devices_; ++d)
      cost_[static_cast<std::size_t>(v) * num_devices_ + d] = op_cost(g, touched, v, cluster_.device(d));
  in_degree_.resize(g.num_nodes());
  for (NodeId v = 0; v < g.num_nodes(); ++v) in_degree_[v] = g.in_offsets()[v + 1] - g.in_offsets()[v];
  for (int d = 0; d < num_devices_; ++d) op_gap_.push_back(cluster_.device(d).op_gap);
  channel_.assign(static_cast<std::size_t>(num_devices_) * num_devices_, 0);
  latency_.assign(channel_.size(), 0);
  bandwidth_.assign(channel_.size(), 1);
  for (const Link& l : cluster_.links()) {
    channel_[l.src * num_devices_ + l.dst] = l.channel;
    latency_[l.src * num_devices_ + l.dst] = l.latency;
    bandwidth_[l.src * num_devices_ + l.dst] = l.bandwidth;
  }
}

double FloorSimulator::run(const std::int32_t* placement) {
  const Graph& g = *graph_;
  const int n = g.num_nodes(), num_devices = num_devices_;
  // Ready ops per device: earliest ready first, then lowest id.
  using Ready = std::pair<double, NodeId>;
  std::vector<std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>>> ready(num_devices);
  // Events: (time, kind, id); kind 0 = op finish (id = node), 1 = transfer arrival
  // (id = node * D + dst), 2 = device free after its op gap (id = device).
  using Event = std::tuple<double, int, std::int64_t>;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
  std::vector<int> pending(in_degree_);
  std::vector<char> running(num_devices, 0);
  std::vector<double> free_at(num_devices, 0.0), channel_free(cluster_.num_channels(), 0.0);
  std::vector<double> send_bytes(num_devices, -1.0);
  double makespan = 0;

  for (NodeId v = 0; v < n; ++v)
    if (pending[v] == 0) ready[placement[v]].push({0.0, v});
  double t = 0;
  while (true) {
    // Idle devices start their next ready op.
    for (int d = 0; d < num_devices; ++d) {
      if (running[d] || free_at[d] > t || ready[d].empty()) continue;
      const NodeId v = ready[d].top().second;
      ready[d].pop();
      running[d] = 1;
      events.push({t + cost_[static_cast<std::size_t>(v) * num_devices + d], 0, v});
    }
    if (events.empty()) break;
    t = std::get<0>(events.top());
    // Every event at time t, then dispatch again.
    while (!events.empty() && std::get<0>(events.top()) == t) {
      const auto [time, kind, id] = events.top();
      events.pop();
      if (kind == 0) {
        const auto v = static_cast<NodeId>(id);
        const int d = placement[v];
        makespan = std::max(makespan, t);
        running[d] = 0;
        if (cost_[static_cast<std::size_t>(v) * num_devices + d] > 0 && op_gap_[d] > 0) {
          free_at[d] = t + op_gap_[d];
          events.push({free_at[d], 2, d});
        }
        for (int e = g.out_offsets()[v]; e < g.out_offsets()[v + 1]; ++e) {
          const auto w = static_cast<NodeId>(g.edge_dst()[e]);
          if (placement[w] == d) {
            if (--pending[w] == 0) ready[d].push({t, w});
          } else {
            double& bytes = send_bytes[placement[w]];
            bytes = std::max(bytes, static_cast<double>(g.edge_bytes()[e]));
          }
        }
        for (int dst = 0; dst < num_devices; ++dst) {
          if (send_bytes[dst] < 0) continue;
          const int link = d * num_devices + dst;
          const double start = std::max(t, channel_free[channel_[link]]);
          const double end = start + (latency_[link] + send_bytes[dst] / bandwidth_[link]);
          channel_free[channel_[link]] = end;
          send_bytes[dst] = -1.0;
          events.push({end, 1, static_cast<std::int64_t>(v) * num_devices + dst});
        }
      } else if (kind == 1) {
        const auto v = static_cast<NodeId>(id / num_devices);
        const int dst = static_cast<int>(id % num_devices);
        for (int e = g.out_offsets()[v]; e < g.out_offsets()[v + 1]; ++e) {
          const auto w = static_cast<NodeId>(g.edge_dst()[e]);
          if (placement[w] == dst && --pending[w] == 0) ready[dst].push({t, w});
        }
      }
    }
  }
  return makespan;
}

}  // namespace goenv::bench
