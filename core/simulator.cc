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
  const std::vector<double> touched = bytes_touched(*graph_);
  const int num_devices = cluster_.num_devices();
  auto table = std::make_shared<std::vector<double>>(static_cast<std::size_t>(graph_->num_nodes()) * num_devices);
  for (NodeId v = 0; v < graph_->num_nodes(); ++v)
    for (int d = 0; d < num_devices; ++d)
      (*table)[static_cast<std::size_t>(v) * num_devices + d] = op_cost(*graph_, touched, v, cluster_.device(d));
  cost_table_ = std::move(table);
  in_source_.resize(graph_->num_edges());
  for (int i = 0; i < graph_->num_edges(); ++i)
    in_source_[i] = static_cast<NodeId>(graph_->edge_src()[graph_->in_edges()[i]]);
  const int n = graph_->num_nodes(), d = cluster_.num_devices();
  pending_.resize(n);
  ready_time_.resize(n);
  binding_.resize(n);
  start_epoch_.resize(n);
  use_epoch_.resize(n);
  ready_.resize(d);
  running_.resize(d);
  last_on_device_.resize(d);
  free_at_.resize(d);
  send_bytes_.resize(d);
  send_stamp_.resize(d);
  transfer_of_.assign(static_cast<std::size_t>(n) * d, -1);
}

double Simulator::cost(NodeId v, int device) const {
  return (*cost_table_)[static_cast<std::size_t>(v) * cluster_.num_devices() + device];
}

namespace {

// validate_decisions with a caller-owned scratch vector (the simulator's, so a run allocates nothing).
std::string validate_with(const Graph& g, const Cluster& cluster, const std::int32_t* placement,
                          const double* priority, std::vector<std::int32_t>& group_node) {
  const int n = g.num_nodes(), num_devices = cluster.num_devices();
  for (int v = 0; v < n; ++v)
    GOENV_CHECK(placement[v] >= 0 && placement[v] < num_devices, InvalidAction,
                "placement of node " << v << " is device " << placement[v] << ", outside [0, " << num_devices << ")");
  if (priority)
    for (int v = 0; v < n; ++v)
      GOENV_CHECK(std::isfinite(priority[v]), InvalidAction,
                  "priority of node " << v << " is " << priority[v] << "; priorities must be finite");
  group_node.assign(g.num_colocation_groups(), kNone);
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

}  // namespace

std::string validate_decisions(const Graph& g, const Cluster& cluster, const std::int32_t* placement,
                               const double* priority) {
  std::vector<std::int32_t> group_node;
  return validate_with(g, cluster, placement, priority, group_node);
}

void Simulator::check_and_flag(const Decisions& decisions) {
  auto& r = result_;
  r.device.assign(graph_->num_nodes(), 0);
  if (decisions.placement) std::copy(decisions.placement, decisions.placement + graph_->num_nodes(), r.device.begin());
  r.invalid_reason = validate_with(*graph_, cluster_, r.device.data(), decisions.priority, group_node_);
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
  arrival_epoch_.clear();
  transfer_start_epoch_.clear();
  transfer_after_.clear();
  remote_use_epoch_.clear();
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
  channel_last_.assign(cluster_.num_channels(), -1);
  epoch_ = 0;  // the time 0
  double epoch_time = 0.0;
  events_.clear();
  const double* cost_table = cost_table_->data();
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
      const double c = cost_table[static_cast<std::size_t>(v) * num_devices + d];
      r.start[v] = t;
      start_epoch_[v] = epoch_;
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
    const double gap = cost(v, d) > 0 ? cluster_.device(d).op_gap : 0.0;  // nonzero cost, even if it rounds away
    free_at_[d] = t + gap;
    if (gap > 0) push_event(free_at_[d], kDeviceFree, d);
    const std::int32_t epoch = epoch_;
    use_epoch_[v] = epoch;
    // This kernel was a consumer: extend the life of its inputs.
    for (int i = g.in_offsets()[v]; i < g.in_offsets()[v + 1]; ++i) {
      const NodeId u = in_source_[i];
      if (device[u] == d) {
        use_epoch_[u] = std::max(use_epoch_[u], epoch);
      } else {
        std::int32_t& until = remote_use_epoch_[transfer_of_[static_cast<std::size_t>(u) * num_devices + d]];
        until = std::max(until, epoch);
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
      // Starts now, or when the transfer ahead of it on the channel arrives.
      transfer_start_epoch_.push_back(start == t ? epoch_ : -1);
      transfer_after_.push_back(start == t ? -1 : channel_last_[link.channel]);
      channel_last_[link.channel] = id;
      arrival_epoch_.push_back(-1);
      remote_use_epoch_.push_back(-1);
      push_event(end, kArrival, id);
    }
  };

  auto arrive = [&](std::int32_t id, double t) {
    const Transfer& tr = r.transfers[id];
    arrival_epoch_[id] = epoch_;
    for (int e = g.out_offsets()[tr.node]; e < g.out_offsets()[tr.node + 1]; ++e) {
      const NodeId w = static_cast<NodeId>(g.edge_dst()[e]);
      if (device[w] == tr.dst && --pending_[w] == 0) make_ready(w, t, tr.node);
    }
  };

  dispatch(0.0);
  while (!events_.empty()) {
    const double t = events_.front().time;
    if (t > epoch_time) {
      ++epoch_;
      epoch_time = t;
    }
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
  const auto num_transfers = static_cast<std::int32_t>(r.transfers.size());
  // A node's output lives from its start until its last local consumer and its
  // last transfer have finished; a received copy from its transfer's start until
  // its last consumer there finishes (or its arrival). All in epochs.
  for (std::int32_t i = 0; i < num_transfers; ++i) {
    if (transfer_start_epoch_[i] < 0) transfer_start_epoch_[i] = arrival_epoch_[transfer_after_[i]];
    const NodeId v = r.transfers[i].node;
    use_epoch_[v] = std::max(use_epoch_[v], arrival_epoch_[i]);
    remote_use_epoch_[i] = std::max(remote_use_epoch_[i], arrival_epoch_[i]);
  }

  r.peak_memory.assign(num_devices, 0);
  for (NodeId v = 0; v < n; ++v) r.peak_memory[r.device[v]] += static_cast<double>(g.param_bytes()[v]);
  // Counting sort of the allocations and releases by epoch. Half-open intervals:
  // an empty one holds nothing, and memory released at an epoch is reusable in
  // it, so the peak is taken after all of an epoch's changes.
  const std::int32_t epochs = epoch_ + 1;
  bucket_.assign(static_cast<std::size_t>(epochs) + 1, 0);
  auto count = [&](std::int32_t alloc, std::int32_t release, double bytes) {
    if (bytes == 0 || release <= alloc) return;
    ++bucket_[alloc + 1];
    ++bucket_[release + 1];
  };
  for (NodeId v = 0; v < n; ++v) count(start_epoch_[v], use_epoch_[v], static_cast<double>(g.output_bytes()[v]));
  for (std::int32_t i = 0; i < num_transfers; ++i)
    count(transfer_start_epoch_[i], remote_use_epoch_[i], r.transfers[i].bytes);
  for (std::int32_t k = 0; k < epochs; ++k) bucket_[k + 1] += bucket_[k];
  changes_.resize(bucket_[epochs]);
  auto place = [&](int device, std::int32_t alloc, std::int32_t release, double bytes) {
    if (bytes == 0 || release <= alloc) return;
    changes_[bucket_[alloc]++] = {device, bytes};
    changes_[bucket_[release]++] = {device, -bytes};
  };
  for (NodeId v = 0; v < n; ++v)
    place(r.device[v], start_epoch_[v], use_epoch_[v], static_cast<double>(g.output_bytes()[v]));
  for (std::int32_t i = 0; i < num_transfers; ++i)
    place(r.transfers[i].dst, transfer_start_epoch_[i], remote_use_epoch_[i], r.transfers[i].bytes);
  // Byte counts are integers, so the sums are exact whatever the order within an epoch.
  live_.assign(num_devices, 0);
  peak_.assign(num_devices, 0);
  std::int32_t begin = 0;
  for (std::int32_t k = 0; k < epochs; ++k) {
    const std::int32_t end = bucket_[k];  // after the scatter: the end of epoch k
    if (end == begin) continue;
    for (std::int32_t i = begin; i < end; ++i) live_[changes_[i].device] += changes_[i].bytes;
    for (std::int32_t i = begin; i < end; ++i) {
      const int d = changes_[i].device;
      peak_[d] = std::max(peak_[d], live_[d]);
    }
    begin = end;
  }
  r.oom = false;
  for (int d = 0; d < num_devices; ++d) {
    r.peak_memory[d] += peak_[d];
    if (r.peak_memory[d] > cluster_.device(d).memory_bytes) r.oom = true;
  }
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
