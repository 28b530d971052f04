#include "core/simulator.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/cost_model.h"
#include "core/error.h"

namespace goenv {

namespace {

enum EventKind { kFinish = 0, kArrival = 1, kDeviceFree = 2 };

}  // namespace

Simulator::Simulator(GraphPtr graph, Cluster cluster)
    : graph_(std::move(graph)), cluster_(std::move(cluster)) {
  GOENV_CHECK(graph_ != nullptr, InvalidArgument, "simulator needs a graph");
  touched_ = bytes_touched(*graph_);
  const int n = graph_->num_nodes(), d = cluster_.num_devices();
  pending_.resize(n);
  ready_time_.resize(n);
  binding_.resize(n);
  last_use_.resize(n);
  ready_.resize(d);
  running_.resize(d);
  last_on_device_.resize(d);
  free_at_.resize(d);
  send_bytes_.resize(d);
  send_stamp_.resize(d);
  transfer_of_.assign(static_cast<std::size_t>(n) * d, -1);
}

double Simulator::cost(NodeId v, int device) const {
  return op_cost(*graph_, touched_, v, cluster_.device(device));
}

std::string validate_decisions(const Graph& g, const Cluster& cluster, const std::int32_t* placement,
                               const double* priority) {
  const int n = g.num_nodes(), num_devices = cluster.num_devices();
  for (int v = 0; v < n; ++v)
    GOENV_CHECK(placement[v] >= 0 && placement[v] < num_devices, InvalidAction,
                "placement of node " << v << " is device " << placement[v] << ", outside [0, " << num_devices << ")");
  if (priority)
    for (int v = 0; v < n; ++v)
      GOENV_CHECK(std::isfinite(priority[v]), InvalidAction,
                  "priority of node " << v << " is " << priority[v] << "; priorities must be finite");
  std::vector<std::int32_t> group_node(g.num_colocation_groups(), kNone);
  for (NodeId v = 0; v < n; ++v) {
    const Device& dev = cluster.device(placement[v]);
    if (!g.allows(v, dev.kind))
      return "node " + std::to_string(v) + " ('" + g.names()[v] + "') may not run on " + device_kind_name(dev.kind) +
             " device " + dev.name;
    const std::int32_t c = g.colocation()[v];
    if (c == kNone) continue;
    if (group_node[c] == kNone) {
      group_node[c] = v;
    } else if (placement[group_node[c]] != placement[v]) {
      return "colocation group " + std::to_string(c) + " is split: node '" + g.names()[group_node[c]] +
             "' on device " + std::to_string(placement[group_node[c]]) + ", node '" + g.names()[v] + "' on device " +
             std::to_string(placement[v]);
    }
  }
  return "";
}

void Simulator::check_and_flag(const Decisions& decisions) {
  auto& r = result_;
  r.device.assign(graph_->num_nodes(), 0);
  if (decisions.placement) std::copy(decisions.placement, decisions.placement + graph_->num_nodes(), r.device.begin());
  r.invalid_reason = validate_decisions(*graph_, cluster_, r.device.data(), decisions.priority);
  r.invalid = !r.invalid_reason.empty();
  r.kernel.clear();
}

void Simulator::make_ready(NodeId v, double t, NodeId because) {
  ready_time_[v] = t;
  binding_[v] = because;
  auto& heap = ready_[result_.device[v]];
  heap.push_back({priority_ ? priority_[v] : 0.0, t, v});
  std::push_heap(heap.begin(), heap.end(), [](const Ready& a, const Ready& b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.ready_time != b.ready_time) return a.ready_time > b.ready_time;
    return a.node > b.node;
  });
}

const SimulationResult& Simulator::run(const Decisions& decisions) {
  const Graph& g = *graph_;
  const int n = g.num_nodes(), num_devices = cluster_.num_devices();
  check_and_flag(decisions);
  priority_ = decisions.priority;
  auto& r = result_;
  const auto& device = r.device;

  // Reset the workspace (no allocation after the first run).
  for (const Transfer& tr : r.transfers) transfer_of_[static_cast<std::size_t>(tr.node) * num_devices + tr.dst] = -1;
  r.transfers.clear();
  remote_last_use_.clear();
  r.start.assign(n, 0);
  r.finish.assign(n, 0);
  r.device_busy.assign(num_devices, 0);
  r.bytes_moved = 0;
  for (NodeId v = 0; v < n; ++v) pending_[v] = g.in_offsets()[v + 1] - g.in_offsets()[v];
  for (int d = 0; d < num_devices; ++d) {
    ready_[d].clear();
    running_[d] = 0;
    last_on_device_[d] = kNone;
    free_at_[d] = 0;
    send_stamp_[d] = -1;
  }
  channel_free_.assign(cluster_.num_channels(), 0);
  events_.clear();
  const auto later = std::greater<Event>();
  auto push_event = [&](double time, int kind, std::int32_t id) {
    events_.push_back({time, kind, id});
    std::push_heap(events_.begin(), events_.end(), later);
  };
  const auto worse = [](const Ready& a, const Ready& b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.ready_time != b.ready_time) return a.ready_time > b.ready_time;
    return a.node > b.node;
  };

  for (NodeId v = 0; v < n; ++v)
    if (pending_[v] == 0) make_ready(v, 0.0, kNone);

  auto dispatch = [&](double t) {
    for (int d = 0; d < num_devices; ++d) {
      if (running_[d] || free_at_[d] > t || ready_[d].empty()) continue;
      std::pop_heap(ready_[d].begin(), ready_[d].end(), worse);
      const NodeId v = ready_[d].back().node;
      ready_[d].pop_back();
      const double c = cost(v, d);
      r.start[v] = t;
      r.finish[v] = t + c;
      r.device_busy[d] += c;
      if (t > ready_time_[v]) binding_[v] = last_on_device_[d];
      last_on_device_[d] = v;
      running_[d] = 1;
      push_event(r.finish[v], kFinish, v);
    }
  };

  auto finish = [&](NodeId v, double t) {
    const int d = device[v];
    running_[d] = 0;
    const double gap = r.finish[v] > r.start[v] ? cluster_.device(d).op_gap : 0.0;
    free_at_[d] = t + gap;
    if (gap > 0) push_event(free_at_[d], kDeviceFree, d);
    last_use_[v] = t;
    // This kernel was a consumer: extend the life of its inputs.
    for (int i = g.in_offsets()[v]; i < g.in_offsets()[v + 1]; ++i) {
      const NodeId u = static_cast<NodeId>(g.edge_src()[g.in_edges()[i]]);
      if (device[u] == d) {
        last_use_[u] = std::max(last_use_[u], t);
      } else {
        double& until = remote_last_use_[transfer_of_[static_cast<std::size_t>(u) * num_devices + d]];
        until = std::max(until, t);
      }
    }
    // Local consumers get the output now; remote devices get one transfer each.
    for (int e = g.out_offsets()[v]; e < g.out_offsets()[v + 1]; ++e) {
      const NodeId w = static_cast<NodeId>(g.edge_dst()[e]);
      const int dw = device[w];
      if (dw == d) {
        if (--pending_[w] == 0) make_ready(w, t, v);
      } else {
        const double bytes = static_cast<double>(g.edge_bytes()[e]);
        if (send_stamp_[dw] != v) {
          send_stamp_[dw] = v;
          send_bytes_[dw] = bytes;
        } else {
          send_bytes_[dw] = std::max(send_bytes_[dw], bytes);
        }
      }
    }
    for (int dst = 0; dst < num_devices; ++dst) {
      if (send_stamp_[dst] != v) continue;
      send_stamp_[dst] = -1;
      const Link& link = cluster_.link(d, dst);
      const double start = std::max(t, channel_free_[link.channel]);
      const double end = start + cluster_.transfer_time(d, dst, send_bytes_[dst]);
      channel_free_[link.channel] = end;
      const auto id = static_cast<std::int32_t>(r.transfers.size());
      r.transfers.push_back({v, d, dst, send_bytes_[dst], start, end});
      r.bytes_moved += send_bytes_[dst];
      transfer_of_[static_cast<std::size_t>(v) * num_devices + dst] = id;
      remote_last_use_.push_back(end);
      last_use_[v] = std::max(last_use_[v], end);
      push_event(end, kArrival, id);
    }
  };

  auto arrive = [&](std::int32_t id, double t) {
    const Transfer& tr = r.transfers[id];
    for (int e = g.out_offsets()[tr.node]; e < g.out_offsets()[tr.node + 1]; ++e) {
      const NodeId w = static_cast<NodeId>(g.edge_dst()[e]);
      if (device[w] == tr.dst && --pending_[w] == 0) make_ready(w, t, tr.node);
    }
  };

  dispatch(0.0);
  while (!events_.empty()) {
    const double t = events_.front().time;
    while (!events_.empty() && events_.front().time == t) {
      std::pop_heap(events_.begin(), events_.end(), later);
      const Event ev = events_.back();
      events_.pop_back();
      if (ev.kind == kFinish) finish(ev.id, t);
      else if (ev.kind == kArrival) arrive(ev.id, t);
    }
    dispatch(t);
  }

  r.runtime = 0;
  for (NodeId v = 0; v < n; ++v) r.runtime = std::max(r.runtime, r.finish[v]);
  compute_memory();
  mark_critical_path();
  return r;
}

void Simulator::compute_memory() {
  const Graph& g = *graph_;
  const int n = g.num_nodes(), num_devices = cluster_.num_devices();
  auto& r = result_;
  intervals_.clear();
  for (NodeId v = 0; v < n; ++v)
    intervals_.push_back({r.device[v], r.start[v], last_use_[v], static_cast<double>(g.output_bytes()[v])});
  for (std::size_t i = 0; i < r.transfers.size(); ++i)
    intervals_.push_back({r.transfers[i].dst, r.transfers[i].start, remote_last_use_[i], r.transfers[i].bytes});

  r.peak_memory.assign(num_devices, 0);
  for (NodeId v = 0; v < n; ++v) r.peak_memory[r.device[v]] += static_cast<double>(g.param_bytes()[v]);
  // Sweep per device: at each time, frees before allocations; record after each time.
  struct Change {
    int device;
    double time;
    int alloc;  // 0 = free, 1 = alloc
    double bytes;
  };
  std::vector<Change> changes;
  changes.reserve(intervals_.size() * 2);
  for (const Interval& iv : intervals_) {
    if (iv.bytes == 0 || !(iv.free > iv.alloc)) continue;  // half-open: empty intervals hold nothing
    changes.push_back({iv.device, iv.alloc, 1, iv.bytes});
    changes.push_back({iv.device, iv.free, 0, iv.bytes});
  }
  std::sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    if (a.device != b.device) return a.device < b.device;
    if (a.time != b.time) return a.time < b.time;
    return a.alloc < b.alloc;
  });
  double live = 0, peak = 0;
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const Change& c = changes[i];
    live += c.alloc ? c.bytes : -c.bytes;
    const bool last_of_time = i + 1 == changes.size() || changes[i + 1].device != c.device ||
                              changes[i + 1].time != c.time;
    if (last_of_time) peak = std::max(peak, live);
    if (i + 1 == changes.size() || changes[i + 1].device != c.device) {
      r.peak_memory[c.device] += peak;
      live = peak = 0;
    }
  }
  r.oom = false;
  for (int d = 0; d < num_devices; ++d)
    if (r.peak_memory[d] > cluster_.device(d).memory_bytes) r.oom = true;
}

void Simulator::mark_critical_path() {
  auto& r = result_;
  const int n = graph_->num_nodes();
  r.critical.assign(n, 0);
  NodeId last = kNone;
  for (NodeId v = 0; v < n; ++v)
    if (last == kNone || r.finish[v] > r.finish[last]) last = v;
  for (NodeId v = last; v != kNone && !r.critical[v]; v = binding_[v]) r.critical[v] = 1;
}

SimulationResult simulate(GraphPtr graph, const Cluster& cluster, const Decisions& decisions) {
  Simulator simulator(std::move(graph), cluster);
  return simulator.run(decisions);
}

}  // namespace goenv
