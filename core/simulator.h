// The event-driven simulator (docs/simulator.md): a pure function of (graph, cluster,
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

// A graph as the event loop reads it: flat CSR arrays and a device-major cost
// table. Simulator builds one per (graph, cluster); the fusion pass fills one per
// step for its kernel graph (core/fusion.h) instead of building a Graph.
struct FlatGraph {
  int num_nodes = 0;
  std::vector<std::int32_t> in_offsets, out_offsets;  // num_nodes + 1 each
  std::vector<NodeId> in_source;                      // producer of each in-edge, grouped by consumer
  std::vector<NodeId> out_target;                     // consumer of each out-edge, grouped by producer
  std::vector<double> out_bytes;                      // per out-edge
  std::vector<double> node_bytes;                     // output bytes per node
  std::vector<std::int64_t> param_bytes;              // resident weights per node
  std::vector<std::int32_t> in_degree;
  std::vector<double> cost;                           // seconds, device * num_nodes + node
};

// Reusable workspace: construct once per (graph, cluster), call run() per step
// without allocating after the first call. Not thread-safe; use one per thread.
// Copies share the immutable tables (costs, flat adjacency) and own their scratch.
class Simulator {
 public:
  Simulator(GraphPtr graph, Cluster cluster);
  Simulator(const Simulator& other);
  Simulator& operator=(const Simulator& other);
  Simulator(Simulator&& other) noexcept;
  Simulator& operator=(Simulator&& other) noexcept;
  ~Simulator();
  const SimulationResult& run(const Decisions& decisions);
  const Graph& graph() const { return *graph_; }
  const Cluster& cluster() const { return cluster_; }
  double cost(NodeId v, int device) const;  // seconds of node v on a device
  // The checks run() makes: throws InvalidAction for a device outside the cluster or
  // a non-finite priority; returns why the decisions are invalid, or "".
  std::string validate(const std::int32_t* placement, const double* priority);
  // Runs another graph of at most graph().num_nodes() nodes on this cluster with
  // this simulator's scratch: the fusion pass's kernel graph. Decisions index its
  // nodes and are not validated; the result has no invalid flag or kernel column.
  const SimulationResult& run_flat(const FlatGraph& flat, const Decisions& decisions);

 private:
  struct Tables;     // immutable per (graph, cluster), shared by copies (simulator.cc)
  struct Workspace;  // per-run scratch (simulator.cc)
  const SimulationResult& run_on(const FlatGraph& flat, const Decisions& decisions);
  GraphPtr graph_;
  Cluster cluster_;
  std::shared_ptr<const Tables> tables_;
  std::unique_ptr<Workspace> work_;
  SimulationResult result_;
};

// One-shot convenience: builds a Simulator and runs it.
SimulationResult simulate(GraphPtr graph, const Cluster& cluster, const Decisions& decisions);

}  // namespace goenv
