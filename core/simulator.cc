#include "core/simulator.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/cost_model.h"
#include "core/error.h"

// How the hot loop is laid out (tests/benchmarks/simulator_floor.py
// measures it against a bare list scheduler):
//  * Everything immutable per (graph, cluster) is flattened once into Tables and
//    shared by copies: costs device-major (a device runs nodes in roughly
//    increasing id order, so its costs are read nearly sequentially), int32
//    consumers and double bytes per out-edge, producers per in-edge, link
//    constants per pair.
//  * Events live in a hand-written binary heap keyed by (time bits, kind, id):
//    times are never negative, so their IEEE bits order like the values.
//  * Without priorities (FIFO) a device's ready kernels form a queue, not a heap:
//    ready times never decrease, so only the nodes readied at the current time
//    need sorting (by id), and they mostly arrive sorted.
//  * Memory is tracked online. Each tensor counts its remaining uses and the
//    last one frees it; a device's live bytes are sampled into its peak when an
//    epoch (a distinct event time) in which it allocated is over, which is the
//    first later allocation or release on it (or the end of the run).
//  * Only devices that may start a kernel (one just finished, its op gap ended
//    or it got a ready kernel) are visited after each batch of events.

namespace goenv {

namespace {

enum EventKind : std::uint64_t { kFinish = 0, kArrival = 1, kDeviceFree = 2 };

std::uint64_t time_bits(double t) {
  std::uint64_t bits;
  std::memcpy(&bits, &t, sizeof bits);
  return bits;
}

double bits_time(std::uint64_t bits) {
  double t;
  std::memcpy(&t, &bits, sizeof t);
  return t;
}

}  // namespace

struct Simulator::Tables {
  int num_devices = 0, num_channels = 0;
  bool has_colocation = false, has_kind_limits = false;  // any colocation group; any allowed-kinds mask
  FlatGraph flat;                              // the graph: adjacency, bytes, costs
  std::vector<double> op_gap;                  // per device
  std::vector<std::int32_t> channel;           // per src * D + dst
  std::vector<double> latency, bandwidth;      // per src * D + dst
};

struct Simulator::Workspace {
  struct Event {
    std::uint64_t time;  // bits of the (non-negative) time
    std::uint64_t key;   // kind << 32 | id
  };
  struct Ready {
    double priority, ready_time;
    NodeId node;
  };

  Workspace(int num_nodes, const Tables& tables);
  void run(const FlatGraph& g, const Decisions& decisions, SimulationResult& r);

  static bool before(const Event& a, const Event& b) { return a.time != b.time ? a.time < b.time : a.key < b.key; }
  static bool worse(const Ready& a, const Ready& b) {  // heap order: highest priority, earliest ready, lowest id
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.ready_time != b.ready_time) return a.ready_time > b.ready_time;
    return a.node > b.node;
  }
  void push_event(double time, std::uint64_t kind, std::int32_t id) {
    const Event e{time_bits(time), kind << 32 | static_cast<std::uint32_t>(id)};
    std::size_t i = events.size();
    events.push_back(e);
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (!before(e, events[parent])) break;
      events[i] = events[parent];
      i = parent;
    }
    events[i] = e;
  }
  Event pop_event() {
    const Event top = events[0];
    const Event last = events.back();
    events.pop_back();
    const std::size_t n = events.size();
    if (n > 0) {
      std::size_t i = 0;
      while (true) {
        std::size_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && before(events[child + 1], events[child])) ++child;
        if (!before(events[child], last)) break;
        events[i] = events[child];
        i = child;
      }
      events[i] = last;
    }
    return top;
  }
  void wake(int d) {
    if (!candidate[d]) {
      candidate[d] = 1;
      candidates.push_back(d);
    }
  }
  void sample_peak(int d) {
    peak[d] = std::max(peak[d], live[d]);
    alloc_epoch[d] = -1;
  }
  void allocate(int d, double bytes) {
    if (bytes == 0) return;
    if (alloc_epoch[d] >= 0 && alloc_epoch[d] != epoch) sample_peak(d);
    live[d] += bytes;
    alloc_epoch[d] = epoch;
  }
  void release(int d, double bytes) {
    if (alloc_epoch[d] >= 0 && alloc_epoch[d] != epoch) sample_peak(d);
    live[d] -= bytes;
  }
  inline __attribute__((always_inline)) void make_ready(NodeId v, int d, double t, NodeId because);
  void sort_new_ready(int d);
  void dispatch(double t, SimulationResult& r);
  void finish(NodeId v, double t, SimulationResult& r);
  void arrive(std::int32_t id, double t, SimulationResult& r);

  const FlatGraph* flat = nullptr;  // the graph of the current run
  const Tables* tables = nullptr;
  int num_devices = 0;
  const double* priority = nullptr;
  const std::int32_t* placement = nullptr;  // = the result's device column
  std::vector<std::int32_t> pending;        // per node: inputs not yet there
  std::vector<double> ready_time;
  std::vector<NodeId> binding;              // what made each node ready or start last
  std::vector<std::vector<Ready>> heap;     // with priorities: per device
  std::vector<NodeId> queue;                // without: per device a slice, in (ready time, id) order
  std::vector<std::int32_t> head, tail, same_time_begin, per_device;
  std::vector<double> last_ready;           // per device: time of the last append
  std::vector<std::uint8_t> running, candidate, unsorted;
  std::vector<double> run_cost;             // per device: the cost of the kernel it runs
  std::vector<std::int32_t> candidates, unsorted_list;
  std::vector<NodeId> last_on_device;
  std::vector<double> free_at, channel_free;
  std::vector<std::int32_t> channel_last;   // per channel: last transfer scheduled
  std::vector<Event> events;
  std::vector<double> send_bytes;           // per destination device: largest edge to it; -1 = none
  std::vector<std::int32_t> send_edges, send_list;
  std::vector<std::int32_t> first_transfer;  // per node: id of its first transfer (its others follow, by dst)
  std::vector<std::int32_t> group_node;     // validation scratch
  NodeId last_finisher = kNone;             // latest finish; the lowest id among equal ones
  double last_finish_time = 0;
  std::vector<std::int32_t> uses_left;           // per node: local consumer edges + transfers not done
  std::vector<std::int32_t> transfer_uses_left;  // per transfer: its arrival + consumer edges on dst not done
  std::vector<std::int32_t> queued_next;         // per transfer: the one queued behind it, or -1
  std::vector<double> live, peak;
  std::vector<std::int32_t> alloc_epoch;         // per device: epoch of the last allocation not yet sampled, or -1
  std::int32_t epoch = 0;
};

// Sized for `num_nodes`: a run may use fewer (a kernel graph), never more.
Simulator::Workspace::Workspace(int num_nodes, const Tables& t) : tables(&t), num_devices(t.num_devices) {
  const int n = num_nodes, d = t.num_devices;
  pending.resize(n);
  ready_time.resize(n);
  binding.resize(n);
  uses_left.resize(n);
  queue.resize(n);
  heap.resize(d);
  for (auto* v : {&head, &tail, &same_time_begin, &per_device, &send_edges, &alloc_epoch}) v->resize(d);
  for (auto* v : {&running, &candidate, &unsorted}) v->resize(d);
  run_cost.resize(d);
  last_ready.resize(d);
  last_on_device.resize(d);
  free_at.resize(d);
  send_bytes.assign(d, -1.0);
  live.resize(d);
  peak.resize(d);
  first_transfer.resize(n);
}

Simulator::Simulator(GraphPtr graph, Cluster cluster) : graph_(std::move(graph)), cluster_(std::move(cluster)) {
  GOENV_CHECK(graph_ != nullptr, InvalidArgument, "simulator needs a graph");
  const Graph& g = *graph_;
  const int n = g.num_nodes(), num_devices = cluster_.num_devices();
  auto t = std::make_shared<Tables>();
  t->num_devices = num_devices;
  t->num_channels = cluster_.num_channels();
  const std::vector<double> touched = bytes_touched(g);
  FlatGraph& f = t->flat;
  f.num_nodes = n;
  f.cost.resize(static_cast<std::size_t>(n) * num_devices);
  for (int d = 0; d < num_devices; ++d) {
    t->op_gap.push_back(cluster_.device(d).op_gap);
    for (NodeId v = 0; v < n; ++v)
      f.cost[static_cast<std::size_t>(d) * n + v] = op_cost(g, touched, v, cluster_.device(d));
  }
  f.in_offsets = g.in_offsets();
  f.out_offsets = g.out_offsets();
  f.in_source.resize(g.num_edges());
  for (int i = 0; i < g.num_edges(); ++i) f.in_source[i] = static_cast<NodeId>(g.edge_src()[g.in_edges()[i]]);
  f.out_target.assign(g.edge_dst().begin(), g.edge_dst().end());
  f.out_bytes.assign(g.edge_bytes().begin(), g.edge_bytes().end());
  f.node_bytes.assign(g.output_bytes().begin(), g.output_bytes().end());
  f.param_bytes = g.param_bytes();
  f.in_degree.resize(n);
  for (NodeId v = 0; v < n; ++v) f.in_degree[v] = g.in_offsets()[v + 1] - g.in_offsets()[v];
  t->has_colocation = g.num_colocation_groups() > 0;
  t->has_kind_limits =
      std::any_of(g.allowed_kinds().begin(), g.allowed_kinds().end(), [](std::uint8_t k) { return k != 0; });
  const std::size_t pairs = static_cast<std::size_t>(num_devices) * num_devices;
  t->channel.assign(pairs, 0);
  t->latency.assign(pairs, 0);
  t->bandwidth.assign(pairs, 1);
  for (int s = 0; s < num_devices; ++s)
    for (int d = 0; d < num_devices; ++d) {
      if (s == d) continue;
      const Link& link = cluster_.link(s, d);
      t->channel[s * num_devices + d] = link.channel;
      t->latency[s * num_devices + d] = link.latency;
      t->bandwidth[s * num_devices + d] = link.bandwidth;
    }
  tables_ = std::move(t);
  work_ = std::make_unique<Workspace>(n, *tables_);
}

Simulator::Simulator(const Simulator& other)
    : graph_(other.graph_),
      cluster_(other.cluster_),
      tables_(other.tables_),
      work_(std::make_unique<Workspace>(graph_->num_nodes(), *tables_)),
      result_(other.result_) {}

Simulator& Simulator::operator=(const Simulator& other) {
  if (this != &other) *this = Simulator(other);
  return *this;
}

Simulator::Simulator(Simulator&& other) noexcept = default;
Simulator& Simulator::operator=(Simulator&& other) noexcept = default;
Simulator::~Simulator() = default;

double Simulator::cost(NodeId v, int device) const {
  return tables_->flat.cost[static_cast<std::size_t>(device) * graph_->num_nodes() + v];
}

namespace {

// validate_decisions with a caller-owned scratch vector (the simulator's, so a run
// allocates nothing); the device-kind and colocation checks can be skipped for
// graphs with no kind limits or no colocation groups.
std::string validate_with(const Graph& g, const Cluster& cluster, const std::int32_t* placement,
                          const double* priority, std::vector<std::int32_t>& group_node, bool check_kinds = true,
                          bool check_colocation = true) {
  const int n = g.num_nodes(), num_devices = cluster.num_devices();
  for (int v = 0; v < n; ++v)
    GOENV_CHECK(placement[v] >= 0 && placement[v] < num_devices, InvalidAction,
                "placement of node " << v << " is device " << placement[v] << ", outside [0, " << num_devices << ")");
  if (priority)
    for (int v = 0; v < n; ++v)
      GOENV_CHECK(std::isfinite(priority[v]), InvalidAction,
                  "priority of node " << v << " is " << priority[v] << "; priorities must be finite");
  if (!check_kinds && !check_colocation) return "";
  if (check_colocation) group_node.assign(g.num_colocation_groups(), kNone);
  for (NodeId v = 0; v < n; ++v) {
    if (check_kinds) {
      const Device& dev = cluster.device(placement[v]);
      if (!g.allows(v, dev.kind))
        return "node " + std::to_string(v) + " ('" + g.names()[v] + "') may not run on " + device_kind_name(dev.kind) +
               " device " + dev.name;
    }
    if (!check_colocation) continue;
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

inline void Simulator::Workspace::make_ready(NodeId v, int d, double t, NodeId because) {
  ready_time[v] = t;
  binding[v] = because;
  if (priority) {
    heap[d].push_back({priority[v], t, v});
    std::push_heap(heap[d].begin(), heap[d].end(), worse);
  } else {
    // FIFO: ready times never decrease, so only the nodes readied at t need sorting.
    const std::int32_t at = tail[d]++;
    queue[at] = v;
    if (last_ready[d] != t) {
      last_ready[d] = t;
      same_time_begin[d] = at;
    } else if (at > head[d] && queue[at - 1] > v && !unsorted[d]) {
      unsorted[d] = 1;
      unsorted_list.push_back(d);
    }
  }
  wake(d);
}

void Simulator::Workspace::sort_new_ready(int d) {
  unsorted[d] = 0;
  NodeId* first = queue.data() + std::max(same_time_begin[d], head[d]);
  NodeId* last = queue.data() + tail[d];
  if (last - first > 16) {
    std::sort(first, last);
    return;
  }
  for (NodeId* i = first + 1; i < last; ++i)  // insertion sort: the slice is short and mostly sorted
    for (NodeId* j = i; j > first && j[-1] > j[0]; --j) std::swap(j[-1], j[0]);
}

void Simulator::Workspace::dispatch(double t, SimulationResult& r) {
  for (const std::int32_t d : unsorted_list) sort_new_ready(d);
  unsorted_list.clear();
  const double* cost = flat->cost.data();
  const std::size_t num_nodes = flat->num_nodes;
  // Devices start independently of each other, so the order of candidates does not matter.
  for (const std::int32_t d : candidates) {
    candidate[d] = 0;
    if (running[d] || free_at[d] > t) continue;
    NodeId v;
    if (priority) {
      if (heap[d].empty()) continue;
      std::pop_heap(heap[d].begin(), heap[d].end(), worse);
      v = heap[d].back().node;
      heap[d].pop_back();
    } else {
      if (head[d] == tail[d]) continue;
      v = queue[head[d]++];
    }
    const double c = cost[static_cast<std::size_t>(d) * num_nodes + v];
    const double f = t + c;
    r.start[v] = t;
    r.finish[v] = f;
    r.device_busy[d] += c;
    if (t > ready_time[v]) binding[v] = last_on_device[d];
    last_on_device[d] = v;
    running[d] = 1;
    run_cost[d] = c;
    allocate(d, flat->node_bytes[v]);
    push_event(f, kFinish, v);
  }
  candidates.clear();
}

void Simulator::Workspace::finish(NodeId v, double t, SimulationResult& r) {
  const FlatGraph& g = *flat;
  const Tables& tb = *tables;
  const int d = placement[v];
  // The last finisher: latest finish, lowest id among equal ones (a zero-cost kernel
  // started at t finishes at t after higher ids did).
  if (last_finisher == kNone || t > last_finish_time || (t == last_finish_time && v < last_finisher)) {
    last_finisher = v;
    last_finish_time = t;
  }
  running[d] = 0;
  const double gap = run_cost[d] > 0 ? tb.op_gap[d] : 0.0;  // nonzero cost, even if it rounds away
  free_at[d] = t + gap;
  if (gap > 0) push_event(free_at[d], kDeviceFree, d);
  wake(d);
  // This kernel was a consumer: its inputs have one use fewer.
  const std::int32_t* in_offsets = g.in_offsets.data();
  for (int i = in_offsets[v]; i < in_offsets[v + 1]; ++i) {
    const NodeId u = g.in_source[i];
    if (placement[u] == d) {
      if (--uses_left[u] == 0) release(d, g.node_bytes[u]);
    } else {
      std::int32_t id = first_transfer[u];
      while (r.transfers[id].dst != d) ++id;
      if (--transfer_uses_left[id] == 0) release(d, r.transfers[id].bytes);
    }
  }
  // Local consumers get the output now; remote devices get one transfer each.
  std::int32_t uses = 0;
  const std::int32_t* out_offsets = g.out_offsets.data();
  for (int e = out_offsets[v]; e < out_offsets[v + 1]; ++e) {
    const NodeId w = g.out_target[e];
    const int dw = placement[w];
    if (dw == d) {
      ++uses;
      if (--pending[w] == 0) make_ready(w, d, t, v);
    } else {
      if (send_bytes[dw] < 0) send_list.push_back(dw);
      send_bytes[dw] = std::max(send_bytes[dw], g.out_bytes[e]);
      ++send_edges[dw];
    }
  }
  if (send_list.empty()) {
    uses_left[v] = uses;
    if (uses == 0) release(d, g.node_bytes[v]);
    return;
  }
  // Destinations in increasing order (transfers on a shared channel queue in that order).
  for (std::size_t i = 1; i < send_list.size(); ++i)
    for (std::size_t j = i; j > 0 && send_list[j - 1] > send_list[j]; --j) std::swap(send_list[j - 1], send_list[j]);
  for (const std::int32_t dst : send_list) {
    const int pair = d * num_devices + dst, channel = tb.channel[pair];
    const double bytes = send_bytes[dst];
    const double start = std::max(t, channel_free[channel]);
    const double end = start + (tb.latency[pair] + bytes / tb.bandwidth[pair]);
    channel_free[channel] = end;
    const auto id = static_cast<std::int32_t>(r.transfers.size());
    r.transfers.push_back({v, d, dst, bytes, start, end});
    r.bytes_moved += bytes;
    transfer_uses_left.push_back(1 + send_edges[dst]);
    queued_next.push_back(-1);
    // The copy is allocated when the transfer starts: now, or when the one ahead of it arrives.
    if (start == t) allocate(dst, bytes);
    else queued_next[channel_last[channel]] = id;
    channel_last[channel] = id;
    push_event(end, kArrival, id);
    send_bytes[dst] = -1.0;
    send_edges[dst] = 0;
    ++uses;
  }
  first_transfer[v] = static_cast<std::int32_t>(r.transfers.size()) - static_cast<std::int32_t>(send_list.size());
  send_list.clear();
  uses_left[v] = uses;
}

void Simulator::Workspace::arrive(std::int32_t id, double t, SimulationResult& r) {
  const FlatGraph& g = *flat;
  const Transfer tr = r.transfers[id];
  for (int e = g.out_offsets[tr.node]; e < g.out_offsets[tr.node + 1]; ++e) {
    const NodeId w = g.out_target[e];
    if (placement[w] == tr.dst && --pending[w] == 0) make_ready(w, tr.dst, t, tr.node);
  }
  if (--uses_left[tr.node] == 0) release(tr.src, g.node_bytes[tr.node]);
  if (--transfer_uses_left[id] == 0) release(tr.dst, tr.bytes);
  const std::int32_t next = queued_next[id];
  if (next >= 0) allocate(r.transfers[next].dst, r.transfers[next].bytes);
}

void Simulator::Workspace::run(const FlatGraph& g, const Decisions& decisions, SimulationResult& r) {
  const Tables& tb = *tables;
  const int n = g.num_nodes;
  flat = &g;
  priority = decisions.priority;
  placement = r.device.data();

  // Reset (no allocation after the first run).
  r.transfers.clear();
  transfer_uses_left.clear();
  queued_next.clear();
  r.start.resize(n);  // every node runs, so every entry is written
  r.finish.resize(n);
  r.device_busy.assign(num_devices, 0);
  r.peak_memory.assign(num_devices, 0);
  r.bytes_moved = 0;
  std::copy(g.in_degree.begin(), g.in_degree.begin() + n, pending.begin());
  std::fill(per_device.begin(), per_device.end(), 0);
  const std::int64_t* params = g.param_bytes.data();
  for (NodeId v = 0; v < n; ++v) {
    ++per_device[placement[v]];
    r.peak_memory[placement[v]] += static_cast<double>(params[v]);  // params, resident all run
  }
  std::int32_t offset = 0;
  for (int d = 0; d < num_devices; ++d) {
    heap[d].clear();
    head[d] = tail[d] = same_time_begin[d] = offset;
    offset += per_device[d];
    last_ready[d] = -1.0;
    running[d] = 0;
    last_on_device[d] = kNone;
    free_at[d] = 0;
    live[d] = peak[d] = 0;
    alloc_epoch[d] = -1;
  }
  channel_free.assign(tb.num_channels, 0);
  channel_last.assign(tb.num_channels, -1);
  events.clear();
  last_finisher = kNone;
  epoch = 0;

  for (NodeId v = 0; v < n; ++v)
    if (pending[v] == 0) make_ready(v, placement[v], 0.0, kNone);
  dispatch(0.0, r);
  std::uint64_t epoch_time = time_bits(0.0);
  while (!events.empty()) {
    const std::uint64_t now = events.front().time;
    if (now != epoch_time) {  // times only grow
      ++epoch;
      epoch_time = now;
    }
    const double t = bits_time(now);
    while (!events.empty() && events.front().time == now) {
      const Event ev = pop_event();
      const auto kind = ev.key >> 32;
      const auto id = static_cast<std::int32_t>(ev.key & 0xffffffffu);
      if (kind == kFinish) finish(id, t, r);
      else if (kind == kArrival) arrive(id, t, r);
      else wake(id);  // the device's op gap is over
    }
    dispatch(t, r);
  }
  for (int d = 0; d < num_devices; ++d)
    if (alloc_epoch[d] >= 0) sample_peak(d);
  r.runtime = last_finisher == kNone ? 0.0 : last_finish_time;
}

std::string Simulator::validate(const std::int32_t* placement, const double* priority) {
  return validate_with(*graph_, cluster_, placement, priority, work_->group_node, tables_->has_kind_limits,
                       tables_->has_colocation);
}

const SimulationResult& Simulator::run(const Decisions& decisions) {
  const int n = graph_->num_nodes();
  auto& r = result_;
  r.device.resize(n);
  if (decisions.placement) std::copy(decisions.placement, decisions.placement + n, r.device.begin());
  else std::fill(r.device.begin(), r.device.end(), 0);
  r.invalid_reason = validate(r.device.data(), decisions.priority);
  r.invalid = !r.invalid_reason.empty();
  return run_on(tables_->flat, decisions);
}

const SimulationResult& Simulator::run_flat(const FlatGraph& flat, const Decisions& decisions) {
  GOENV_CHECK(flat.num_nodes <= graph_->num_nodes(), InvalidArgument,
              "run_flat: " << flat.num_nodes << " nodes, the simulator holds scratch for " << graph_->num_nodes());
  auto& r = result_;
  r.device.resize(flat.num_nodes);
  if (decisions.placement) std::copy(decisions.placement, decisions.placement + flat.num_nodes, r.device.begin());
  else std::fill(r.device.begin(), r.device.end(), 0);
  r.invalid = false;
  r.invalid_reason.clear();
  return run_on(flat, decisions);
}

// The run itself, after r.device holds the placement.
const SimulationResult& Simulator::run_on(const FlatGraph& flat, const Decisions& decisions) {
  const int n = flat.num_nodes;
  auto& r = result_;
  r.kernel.clear();
  Workspace& w = *work_;
  w.run(flat, decisions, r);
  r.oom = false;
  for (int d = 0; d < cluster_.num_devices(); ++d) {
    r.peak_memory[d] += w.peak[d];
    if (r.peak_memory[d] > cluster_.device(d).memory_bytes) r.oom = true;
  }
  // The critical path: back from the last finisher along what made each node start.
  r.critical.assign(n, 0);
  for (NodeId v = w.last_finisher; v != kNone && !r.critical[v]; v = w.binding[v]) r.critical[v] = 1;
  return r;
}

SimulationResult simulate(GraphPtr graph, const Cluster& cluster, const Decisions& decisions) {
  Simulator simulator(std::move(graph), cluster);
  return simulator.run(decisions);
}

}  // namespace goenv
