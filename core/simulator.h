// The event-driven simulator (DESIGN §2): a pure function of (graph, cluster,
// decisions), deterministic, O((N + E) log N).
//
// Rules, each tested in tests/cpp/simulator_test.cc and mirrored line by line by
// the plain-Python reference in tests/python/reference_simulator.py:
//  * A device runs one kernel at a time, non-preemptively. Whenever it is idle it
//    starts the ready kernel of highest priority; ties go to the earliest ready
//    time, then the lowest node id. With no priorities given that is FIFO.
//  * A kernel is ready on its device when every input is there: inputs from the
//    same device when their producer finishes, others when their transfer arrives.
//  * After a kernel of nonzero cost the device idles `op_gap` seconds.
//  * When a node finishes, its output is sent once to every other device that
//    consumes it (destinations in increasing order; size = the largest bytes of
//    the edges to that device). Transfers on one link channel run one at a time,
//    first come first served; each takes latency + bytes / bandwidth.
//  * Events at one time are handled together (finishes by node id), then idle
//    devices pick their next kernels in device order.
//  * Memory per device: params of the nodes placed there for the whole run; each
//    output from its producer's start until its last local consumer and its last
//    outgoing transfer have finished (or its own finish if neither exists); each
//    received copy from its transfer's start until its last consumer there
//    finishes. Intervals are half-open: memory freed at t is reusable at t.
//    OOM = the peak exceeds the device's capacity (the run is still simulated).
//  * Invalid = a colocation group split over devices, or a node on a device kind
//    it does not allow (the run is still simulated; callers decide the penalty).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"

namespace goenv {

struct Transfer {
  NodeId node;        // producer whose output moves
  int src, dst;       // devices
  double bytes;
  double start, end;  // seconds
};

struct SimulationResult {
  double runtime = 0;                 // makespan, seconds
  std::vector<double> device_busy;    // seconds of kernels per device
  std::vector<double> peak_memory;    // bytes per device
  bool oom = false;
  bool invalid = false;
  std::string invalid_reason;         // empty when valid
  double bytes_moved = 0;
  std::vector<double> start, finish;  // per node, seconds
  std::vector<std::int32_t> device;   // per node
  std::vector<std::uint8_t> critical; // per node: on the path that sets the makespan
  std::vector<std::int32_t> kernel;   // per node: kernel id (fused nodes share one); empty = one kernel per node
  std::vector<Transfer> transfers;
};

// Decisions handed to the simulator; a null pointer means the default.
struct Decisions {
  const std::int32_t* placement = nullptr;  // device per node; default: all on device 0
  const double* priority = nullptr;         // higher runs first; default: all equal (FIFO)
};

// Checks ranges (throws InvalidAction for a device outside the cluster or a
// non-finite priority) and returns why the decisions are invalid (a split
// colocation group, a forbidden device kind), or "" when they are valid.
std::string validate_decisions(const Graph& graph, const Cluster& cluster, const std::int32_t* placement,
                               const double* priority);

// Reusable workspace: construct once per (graph, cluster), call run() per step
// without allocating after the first call. Not thread-safe; use one per thread.
class Simulator {
 public:
  Simulator(GraphPtr graph, Cluster cluster);
  const SimulationResult& run(const Decisions& decisions);
  const Graph& graph() const { return *graph_; }
  const Cluster& cluster() const { return cluster_; }
  double cost(NodeId v, int device) const;  // seconds of node v on a device

 private:
  struct Event {
    double time;
    int kind;  // 0 = node finish, 1 = transfer arrival, 2 = device free
    std::int32_t id;
    bool operator>(const Event& o) const {
      if (time != o.time) return time > o.time;
      if (kind != o.kind) return kind > o.kind;
      return id > o.id;
    }
  };
  struct Ready {
    double priority, ready_time;
    NodeId node;
  };
  struct MemoryChange {
    int device;
    double bytes;  // + allocation, - release
  };
  void check_and_flag(const Decisions& d);
  void make_ready(NodeId v, double t, NodeId because);
  void compute_memory();
  void mark_critical_path();

  GraphPtr graph_;
  Cluster cluster_;
  std::vector<NodeId> in_source_;  // producer of each in-edge, in in_edges() order (one lookup, not two)
  // cost(v, d) for every node and device, node-major; immutable, so copies of a
  // simulator (the envs of a VectorEnv) share it.
  std::shared_ptr<const std::vector<double>> cost_table_;
  SimulationResult result_;
  // Workspace.
  const double* priority_ = nullptr;
  std::vector<std::int32_t> pending_;
  std::vector<double> ready_time_;
  std::vector<NodeId> binding_;  // what made each node ready or start last
  std::vector<std::vector<Ready>> ready_;
  std::vector<std::uint8_t> running_;
  std::vector<NodeId> last_on_device_;
  std::vector<double> free_at_, channel_free_;
  std::vector<Event> events_;
  std::vector<double> send_bytes_;
  std::vector<std::int32_t> send_stamp_;
  std::vector<std::int32_t> transfer_of_;  // per (node * D + dst): transfer id or -1
  std::vector<std::int32_t> group_node_;   // validation scratch: first node of each colocation group
  // Memory bookkeeping in epochs: epoch k is the k-th distinct event time, so
  // comparing epochs compares times exactly and the memory sweep is a counting
  // sort instead of a comparison sort.
  std::int32_t epoch_ = 0;
  std::vector<std::int32_t> start_epoch_, use_epoch_;  // per node: start; end of local uses and sends
  std::vector<std::int32_t> arrival_epoch_;            // per transfer
  std::vector<std::int32_t> transfer_start_epoch_;     // per transfer; -1: the arrival of transfer_after_
  std::vector<std::int32_t> transfer_after_;           // per transfer: the one it queued behind, or -1
  std::vector<std::int32_t> remote_use_epoch_;         // per transfer: last consumer finish on dst
  std::vector<std::int32_t> channel_last_;             // per channel: last transfer scheduled
  std::vector<std::int32_t> bucket_;                   // counting sort offsets, per epoch
  std::vector<MemoryChange> changes_;
  std::vector<double> live_, peak_;
};

// One-shot convenience: builds a Simulator and runs it.
SimulationResult simulate(GraphPtr graph, const Cluster& cluster, const Decisions& decisions);

}  // namespace goenv
