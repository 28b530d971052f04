// One test per simulator rule (core/simulator.h lists them), each on a tiny graph
// and a test cluster whose numbers make every expected time exact: 1 GFLOP/s,
// 1 MB/s memory, links of 1 KB/s (1000 bytes = 1 s). Then property tests over
// ~200 random DAGs on the presets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "core/error.h"
#include "core/lower_bound.h"
#include "core/simulator.h"
#include "tests/cpp/test_util.h"

namespace goenv {
namespace {

using test::error_message;
using test::kGflop;
using test::kMbyte;
using test::op;
using test::test_cluster;
using test::test_device;

// Builds a graph from nodes and (src, dst) edges carrying the producer's bytes.
GraphPtr make_graph(const std::vector<NodeSpec>& nodes, const std::vector<std::pair<NodeId, NodeId>>& edges) {
  GraphBuilder b("test");
  for (const NodeSpec& s : nodes) b.add_node(s);
  for (auto [src, dst] : edges) b.add_edge(src, dst);
  return std::move(b).build();
}

SimulationResult run(const GraphPtr& g, const Cluster& c, const std::vector<std::int32_t>& placement = {},
                     const std::vector<double>& priority = {}) {
  Decisions d;
  if (!placement.empty()) d.placement = placement.data();
  if (!priority.empty()) d.priority = priority.data();
  return simulate(g, c, d);
}

Device with_launch(Device d, double launch) {
  d.launch_overhead = launch;
  return d;
}
Device with_gap(Device d, double gap) {
  d.op_gap = gap;
  return d;
}
Device with_capacity(Device d, double bytes) {
  d.memory_bytes = bytes;
  return d;
}

void expect_span(const SimulationResult& r, NodeId v, double start, double finish) {
  EXPECT_DOUBLE_EQ(r.start[v], start) << "start of node " << v;
  EXPECT_DOUBLE_EQ(r.finish[v], finish) << "finish of node " << v;
}

void expect_transfer(const Transfer& t, NodeId node, int src, int dst, double bytes, double start, double end) {
  EXPECT_EQ(t.node, node);
  EXPECT_EQ(t.src, src);
  EXPECT_EQ(t.dst, dst);
  EXPECT_DOUBLE_EQ(t.bytes, bytes);
  EXPECT_DOUBLE_EQ(t.start, start);
  EXPECT_DOUBLE_EQ(t.end, end);
}

// Every field, exactly (bitwise-equal doubles).
void expect_same_result(const SimulationResult& a, const SimulationResult& b) {
  EXPECT_EQ(a.runtime, b.runtime);
  EXPECT_EQ(a.device_busy, b.device_busy);
  EXPECT_EQ(a.peak_memory, b.peak_memory);
  EXPECT_EQ(a.oom, b.oom);
  EXPECT_EQ(a.invalid, b.invalid);
  EXPECT_EQ(a.invalid_reason, b.invalid_reason);
  EXPECT_EQ(a.bytes_moved, b.bytes_moved);
  EXPECT_EQ(a.start, b.start);
  EXPECT_EQ(a.finish, b.finish);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.critical, b.critical);
  ASSERT_EQ(a.transfers.size(), b.transfers.size());
  for (std::size_t i = 0; i < a.transfers.size(); ++i) {
    const Transfer &x = a.transfers[i], &y = b.transfers[i];
    EXPECT_EQ(x.node, y.node);
    EXPECT_EQ(x.src, y.src);
    EXPECT_EQ(x.dst, y.dst);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.start, y.start);
    EXPECT_EQ(x.end, y.end);
  }
}

// ---------------------------------------------------------------- cost model

TEST(SimulatorCost, OneDeviceRuntimeIsSumOfRooflineCostsPlusLaunchOverhead) {
  // a: compute-bound, 2 s of FLOPs vs 0.5 s of bytes.
  // b: memory-bound, 0.5 s of FLOPs vs (0.5 MB in + 1.5 MB out) = 2 s.
  // c: memory-bound through its params alone: 1 MB = 1 s.
  const auto g = make_graph({op("a", 2 * kGflop, kMbyte / 2), op("b", 0.5 * kGflop, 3 * kMbyte / 2),
                             op("c", 0, 0, kMbyte)},
                            {{0, 1}});
  const Cluster cluster = test_cluster(2, with_launch(test_device(), 0.25));
  Simulator sim(g, cluster);
  EXPECT_DOUBLE_EQ(sim.cost(0, 0), 2.25);
  EXPECT_DOUBLE_EQ(sim.cost(1, 0), 2.25);
  EXPECT_DOUBLE_EQ(sim.cost(2, 0), 1.25);

  const SimulationResult& r = sim.run({});  // default placement: everything on device 0
  EXPECT_EQ(r.device, (std::vector<std::int32_t>{0, 0, 0}));
  EXPECT_DOUBLE_EQ(r.runtime, 5.75);
  EXPECT_DOUBLE_EQ(r.device_busy[0], 5.75);
  EXPECT_DOUBLE_EQ(r.device_busy[1], 0);
  EXPECT_TRUE(r.transfers.empty());
  EXPECT_EQ(r.bytes_moved, 0);
  // FIFO: a and c are ready at 0 (a has the lower id); at 2.25 c (ready since 0)
  // goes before b (ready at 2.25).
  expect_span(r, 0, 0, 2.25);
  expect_span(r, 2, 2.25, 3.5);
  expect_span(r, 1, 3.5, 5.75);
}

TEST(SimulatorCost, MeasuredCostOverridesRooflineForItsDeviceKindOnly) {
  NodeSpec s = op("m", 4 * kGflop);
  s.cost[static_cast<int>(DeviceKind::kGpu)] = 0.75;  // used as is: no launch overhead added
  NodeSpec zero = op("z", 8 * kGflop);
  zero.cost[static_cast<int>(DeviceKind::kCpu)] = 0;   // a measured zero is a cost, not "absent"
  const auto g = make_graph({s, zero}, {});
  const Cluster cluster = test_cluster(
      {with_launch(test_device(DeviceKind::kCpu), 0.25), with_launch(test_device(DeviceKind::kGpu), 0.25)});
  Simulator sim(g, cluster);
  EXPECT_DOUBLE_EQ(sim.cost(0, 1), 0.75);  // gpu: measured
  EXPECT_DOUBLE_EQ(sim.cost(0, 0), 4.25);  // cpu: roofline + launch
  EXPECT_DOUBLE_EQ(sim.cost(1, 0), 0.0);   // cpu: measured zero
  EXPECT_DOUBLE_EQ(sim.cost(1, 1), 8.25);  // gpu: roofline + launch

  const SimulationResult& r = sim.run({std::vector<std::int32_t>{1, 0}.data(), nullptr});
  expect_span(r, 0, 0, 0.75);
  expect_span(r, 1, 0, 0);
  EXPECT_DOUBLE_EQ(r.runtime, 0.75);
}

// ---------------------------------------------------------------- op gap

TEST(SimulatorOpGap, DeviceIdlesAfterNonzeroCostOpsOnly) {
  // a (1 s) -> z (zero cost) -> b (1 s) with a 0.5 s gap: a [0, 1), gap to 1.5,
  // z at 1.5 (no gap after it), b [1.5, 2.5).
  const auto g = make_graph({op("a", kGflop), op("z", 0), op("b", kGflop)}, {{0, 1}, {1, 2}});
  const auto r = run(g, test_cluster(1, with_gap(test_device(), 0.5)));
  expect_span(r, 0, 0, 1);
  expect_span(r, 1, 1.5, 1.5);
  expect_span(r, 2, 1.5, 2.5);
  EXPECT_DOUBLE_EQ(r.runtime, 2.5);        // no trailing gap in the makespan
  EXPECT_DOUBLE_EQ(r.device_busy[0], 2.0);  // gaps are idle time, not busy time
}

TEST(SimulatorOpGap, GapDelaysReadyKernels) {
  // Two independent 1 s sources: the second waits out the gap after the first.
  const auto g = make_graph({op("a", kGflop), op("b", kGflop)}, {});
  const auto r = run(g, test_cluster(1, with_gap(test_device(), 0.25)));
  expect_span(r, 0, 0, 1);
  expect_span(r, 1, 1.25, 2.25);
}

// ---------------------------------------------------------------- transfers

TEST(SimulatorTransfers, SerializeOnOneLinkChannel) {
  // p0, p1 on device 0 (1 s each, 1000-byte outputs); c0, c1 on device 1.
  // Each transfer: 0.5 s latency + 1 s. T0 [1, 2.5); T1 requested at 2 but the
  // channel is busy until 2.5: [2.5, 4).
  const auto g = make_graph({op("p0", kGflop, 1000), op("p1", kGflop, 1000), op("c0", kGflop), op("c1", kGflop)},
                            {{0, 2}, {1, 3}});
  const auto r = run(g, test_cluster(2, test_device(), 1e3, 0.5), {0, 0, 1, 1});
  ASSERT_EQ(r.transfers.size(), 2u);
  expect_transfer(r.transfers[0], 0, 0, 1, 1000, 1, 2.5);
  expect_transfer(r.transfers[1], 1, 0, 1, 1000, 2.5, 4);
  expect_span(r, 2, 2.5, 3.5);
  expect_span(r, 3, 4, 5);
  EXPECT_DOUBLE_EQ(r.runtime, 5);
  EXPECT_DOUBLE_EQ(r.bytes_moved, 2000);
}

TEST(SimulatorTransfers, DifferentChannelsOverlap) {
  // One link per ordered pair: p's output goes to devices 1 and 2 at once, and
  // q's output crosses 1 -> 0 while p's crosses 0 -> 1.
  const auto g = make_graph({op("p", kGflop, 1000), op("c1", kGflop), op("c2", kGflop), op("q", kGflop, 1000),
                             op("c0", kGflop)},
                            {{0, 1}, {0, 2}, {3, 4}});
  const auto r = run(g, test_cluster(3, test_device(), 1e3, 0.5), {0, 1, 2, 1, 0});
  ASSERT_EQ(r.transfers.size(), 3u);
  std::map<std::pair<int, int>, Transfer> by_link;
  for (const Transfer& t : r.transfers) by_link[{t.src, t.dst}] = t;
  ASSERT_EQ(by_link.size(), 3u);
  expect_transfer(by_link[{0, 1}], 0, 0, 1, 1000, 1, 2.5);
  expect_transfer(by_link[{0, 2}], 0, 0, 2, 1000, 1, 2.5);
  expect_transfer(by_link[{1, 0}], 3, 1, 0, 1000, 1, 2.5);
  // Device 1 ran q [0, 1); c1 arrives at 2.5.
  expect_span(r, 1, 2.5, 3.5);
  expect_span(r, 2, 2.5, 3.5);
  expect_span(r, 4, 2.5, 3.5);
}

TEST(SimulatorTransfers, SharedBusSendsToDestinationsInIncreasingDeviceOrder) {
  // Placeto-style: one outgoing bus per source device (channel = src). The
  // consumer on device 2 has the lower node id, yet device 1 is served first.
  const auto g = make_graph({op("p", kGflop, 1000), op("on2", kGflop), op("on1", kGflop)}, {{0, 1}, {0, 2}});
  const auto r = run(g, test_cluster(3, test_device(), 1e3, 0.5, [](int s, int) { return s; }), {0, 2, 1});
  ASSERT_EQ(r.transfers.size(), 2u);
  expect_transfer(r.transfers[0], 0, 0, 1, 1000, 1, 2.5);
  expect_transfer(r.transfers[1], 0, 0, 2, 1000, 2.5, 4);
  expect_span(r, 2, 2.5, 3.5);
  expect_span(r, 1, 4, 5);
}

TEST(SimulatorTransfers, TensorCrossesOncePerDestinationDeviceWithItsLargestEdge) {
  // p (device 0) feeds a, b on device 1 (edges of 600 and 1000 bytes), c on
  // device 2 (250 bytes) and d on device 0 (local, no transfer).
  GraphBuilder b("fanout");
  const NodeId p = b.add_node(op("p", kGflop, 1000));
  const NodeId a = b.add_node(op("a", kGflop));
  const NodeId bb = b.add_node(op("b", kGflop));
  const NodeId c = b.add_node(op("c", kGflop));
  const NodeId d = b.add_node(op("d", kGflop));
  b.add_edge(p, a, 600);
  b.add_edge(p, bb, 1000);
  b.add_edge(p, c, 250);
  b.add_edge(p, d);
  const auto g = std::move(b).build();
  const auto r = run(g, test_cluster(3), {0, 1, 1, 2, 0});
  ASSERT_EQ(r.transfers.size(), 2u);
  expect_transfer(r.transfers[0], p, 0, 1, 1000, 1, 2);
  expect_transfer(r.transfers[1], p, 0, 2, 250, 1, 1.25);
  EXPECT_DOUBLE_EQ(r.bytes_moved, 1250);
  expect_span(r, a, 2, 3);  // both consumers on device 1 wait for the one copy
  expect_span(r, bb, 3, 4);
  expect_span(r, c, 1.25, 2.25);
  expect_span(r, d, 1, 2);
}

TEST(SimulatorTransfers, ZeroLatencyZeroByteTransferArrivesAtOnce) {
  const auto g = make_graph({op("p", kGflop, 0), op("c", kGflop)}, {{0, 1}});
  const auto r = run(g, test_cluster(2), {0, 1});
  ASSERT_EQ(r.transfers.size(), 1u);
  expect_transfer(r.transfers[0], 0, 0, 1, 0, 1, 1);
  expect_span(r, 1, 1, 2);
}

// ---------------------------------------------------------------- memory

TEST(SimulatorMemory, ParamsResidentOutputsFreedAfterLastLocalConsumerHalfOpen) {
  // Chain a -> b -> c, 1 s each. Outputs: a 1000 bytes [0, 2), b 1 byte [1, 3),
  // c 1000 bytes [2, 3) (no consumers: until its own finish). a is freed at 2 and
  // c allocated at 2: half-open, so they never coexist. Params 100 + 50 resident.
  // Live: [0,1) 1000, [1,2) 1001, [2,3) 1001 -> peak 150 + 1001.
  const auto g = make_graph({op("a", kGflop, 1000, 100), op("b", kGflop, 1), op("c", kGflop, 1000, 50)},
                            {{0, 1}, {1, 2}});
  const auto r = run(g, test_cluster(1));
  EXPECT_DOUBLE_EQ(r.peak_memory[0], 1151);
  EXPECT_FALSE(r.oom);
}

TEST(SimulatorMemory, OutputLivesUntilItsLastLocalConsumerFinishes) {
  // a (1000 bytes) feeds b and d; b -> x; x has priority so it runs before d:
  // a [0,1), b [1,2), x [2,3) allocating 300, d [3,4). a lives until 4 -> peak 1300.
  const auto g = make_graph({op("a", kGflop, 1000), op("b", kGflop), op("d", kGflop), op("x", kGflop, 300)},
                            {{0, 1}, {0, 2}, {1, 3}});
  const auto r = run(g, test_cluster(1), {}, {0, 0, 0, 1});
  expect_span(r, 3, 2, 3);
  expect_span(r, 2, 3, 4);
  EXPECT_DOUBLE_EQ(r.peak_memory[0], 1300);
}

TEST(SimulatorMemory, OutputKeptUntilTransferEndsReceivedCopyFreedAfterLastConsumer) {
  // Device 0: p [0,1) (1000 bytes), q [1,2) (200 bytes). p -> device 1: [1, 2).
  // Device 1: c1 [2,3) (100-byte output) and c2 [3,4) read p's copy; d [4,5)
  // (after c2) allocates 300.
  // Device 0: p lives until its transfer ends (2), overlapping q: peak 1200.
  // Device 1: the copy lives [1, 4), so it overlaps c1's output but not d's:
  // peak 1100 (1000 if freed at arrival, 1300 if never freed).
  const auto g = make_graph({op("p", kGflop, 1000), op("q", kGflop, 200), op("c1", kGflop, 100), op("c2", kGflop),
                             op("d", kGflop, 300)},
                            {{0, 2}, {0, 3}, {3, 4}});
  const auto r = run(g, test_cluster(2), {0, 0, 1, 1, 1});
  ASSERT_EQ(r.transfers.size(), 1u);
  expect_transfer(r.transfers[0], 0, 0, 1, 1000, 1, 2);
  expect_span(r, 2, 2, 3);
  expect_span(r, 3, 3, 4);
  expect_span(r, 4, 4, 5);
  EXPECT_DOUBLE_EQ(r.peak_memory[0], 1200);
  EXPECT_DOUBLE_EQ(r.peak_memory[1], 1100);
}

TEST(SimulatorMemory, ReceivedCopyIsAllocatedWhenItsTransferStarts) {
  // x on device 1 runs [0, 2) with a 500-byte output; p's 1000-byte copy starts
  // arriving at 1 on device 1 and overlaps x's output: peak 1500 on device 1.
  const auto g = make_graph({op("p", kGflop, 1000), op("x", 2 * kGflop, 500), op("c", kGflop)},
                            {{0, 2}});
  const auto r = run(g, test_cluster(2), {0, 1, 1});
  expect_span(r, 1, 0, 2);
  EXPECT_DOUBLE_EQ(r.peak_memory[1], 1500);
}

TEST(SimulatorMemory, OomWhenPeakExceedsCapacityAndRunIsStillSimulated) {
  const auto g = make_graph({op("a", kGflop, 1000, 100), op("b", kGflop, 1), op("c", kGflop, 1000, 50)},
                            {{0, 1}, {1, 2}});
  const auto fits = run(g, test_cluster(1, with_capacity(test_device(), 1151)));
  EXPECT_FALSE(fits.oom);  // peak == capacity is not an excess
  const auto over = run(g, test_cluster(1, with_capacity(test_device(), 1150)));
  EXPECT_TRUE(over.oom);
  EXPECT_DOUBLE_EQ(over.peak_memory[0], 1151);
  EXPECT_DOUBLE_EQ(over.runtime, 3);
  EXPECT_FALSE(over.invalid);  // OOM is its own flag
}

TEST(SimulatorMemory, OomOnAnyDeviceSetsTheFlag) {
  // Device 1 holds 2000 bytes of params but has room for 1999.
  const auto g = make_graph({op("a", kGflop), op("w", kGflop, 0, 2000)}, {});
  const Cluster cluster = test_cluster({test_device(), with_capacity(test_device(), 1999)});
  EXPECT_FALSE(run(g, cluster, {1, 0}).oom);
  const auto r = run(g, cluster, {0, 1});
  EXPECT_TRUE(r.oom);
  EXPECT_DOUBLE_EQ(r.peak_memory[1], 2000);
}

// ---------------------------------------------------------------- scheduling

TEST(SimulatorPriority, HigherPriorityRunsFirst) {
  const auto g = make_graph({op("a", kGflop), op("b", kGflop), op("c", kGflop)}, {});
  const auto r = run(g, test_cluster(1), {}, {1, 3, 2});
  EXPECT_DOUBLE_EQ(r.start[1], 0);
  EXPECT_DOUBLE_EQ(r.start[2], 1);
  EXPECT_DOUBLE_EQ(r.start[0], 2);
  const auto negative = run(g, test_cluster(1), {}, {-1, -3, -2});
  EXPECT_DOUBLE_EQ(negative.start[0], 0);
  EXPECT_DOUBLE_EQ(negative.start[2], 1);
  EXPECT_DOUBLE_EQ(negative.start[1], 2);
}

TEST(SimulatorPriority, TiesGoToEarliestReadyThenLowestNodeId) {
  // s (priority 5) runs first. Then late (id 1, ready at 1), e1 (id 2) and e2
  // (id 3, both ready at 0) share priority 1: earliest ready beats the lower id,
  // and among equally ready nodes the lower id wins.
  const auto g = make_graph({op("s", kGflop), op("late", kGflop), op("e1", kGflop), op("e2", kGflop)}, {{0, 1}});
  const auto r = run(g, test_cluster(1), {}, {5, 1, 1, 1});
  EXPECT_DOUBLE_EQ(r.start[0], 0);
  EXPECT_DOUBLE_EQ(r.start[2], 1);
  EXPECT_DOUBLE_EQ(r.start[3], 2);
  EXPECT_DOUBLE_EQ(r.start[1], 3);
}

TEST(SimulatorPriority, DefaultIsFifoByReadyTime) {
  // a -> b, c independent. FIFO: c (ready at 0) before b (ready at 1) despite ids.
  const auto g = make_graph({op("a", kGflop), op("b", kGflop), op("c", kGflop)}, {{0, 1}});
  const auto fifo = run(g, test_cluster(1));
  expect_span(fifo, 0, 0, 1);
  expect_span(fifo, 2, 1, 2);
  expect_span(fifo, 1, 2, 3);
  expect_same_result(fifo, run(g, test_cluster(1), {}, {0, 0, 0}));  // equal priorities = FIFO
  const auto prioritized = run(g, test_cluster(1), {}, {0, 1, 0});
  expect_span(prioritized, 1, 1, 2);
  expect_span(prioritized, 2, 2, 3);
}

TEST(SimulatorPriority, KernelsAreNotPreempted) {
  // low (2 s) starts at 0 on device 0; urgent becomes ready there at 1 (its input
  // comes from device 1, zero bytes, zero latency) and must wait until 2.
  const auto g = make_graph({op("low", 2 * kGflop), op("x", kGflop, 0), op("urgent", kGflop)}, {{1, 2}});
  const auto r = run(g, test_cluster(2), {0, 1, 0}, {0, 0, 100});
  expect_span(r, 0, 0, 2);
  expect_span(r, 2, 2, 3);
}

TEST(SimulatorPriority, PrioritiesAreChosenPerDevice) {
  // A high priority on device 1 does not hold back device 0.
  const auto g = make_graph({op("a", kGflop), op("b", kGflop), op("c", kGflop)}, {});
  const auto r = run(g, test_cluster(2), {0, 1, 1}, {0, 1, 2});
  expect_span(r, 0, 0, 1);
  expect_span(r, 2, 0, 1);
  expect_span(r, 1, 1, 2);
}

// ---------------------------------------------------------------- validity

TEST(SimulatorValidity, SplitColocationGroupIsInvalidButStillSimulated) {
  std::vector<NodeSpec> nodes = {op("ca", kGflop), op("free", kGflop), op("cb", kGflop)};
  nodes[0].colocation = 5;  // renumbered to group 0
  nodes[2].colocation = 5;
  const auto g = make_graph(nodes, {});
  const Cluster cluster = test_cluster(2);

  const auto split = run(g, cluster, {0, 0, 1});
  EXPECT_TRUE(split.invalid);
  EXPECT_HAS(split.invalid_reason, "colocation group 0");
  EXPECT_HAS(split.invalid_reason, "'ca'");
  EXPECT_HAS(split.invalid_reason, "'cb'");
  EXPECT_DOUBLE_EQ(split.runtime, 2);  // ca and free share device 0
  EXPECT_FALSE(split.oom);

  const auto together = run(g, cluster, {1, 0, 1});
  EXPECT_FALSE(together.invalid);
  EXPECT_TRUE(together.invalid_reason.empty());
}

TEST(SimulatorValidity, NodeOnDisallowedDeviceKindIsInvalid) {
  std::vector<NodeSpec> nodes = {op("cpu_only", kGflop), op("any", kGflop)};
  nodes[0].allowed_kinds = 1u << static_cast<int>(DeviceKind::kCpu);
  const auto g = make_graph(nodes, {});
  Simulator sim(g, test_cluster({test_device(DeviceKind::kCpu), test_device(DeviceKind::kGpu)}));

  const std::vector<std::int32_t> on_gpu = {1, 1};
  const SimulationResult& bad = sim.run({on_gpu.data(), nullptr});
  EXPECT_TRUE(bad.invalid);
  EXPECT_HAS(bad.invalid_reason, "cpu_only");
  EXPECT_HAS(bad.invalid_reason, "gpu");
  EXPECT_DOUBLE_EQ(bad.runtime, 2);

  // The same (reused) simulator clears the flag on a valid decision.
  const std::vector<std::int32_t> on_cpu = {0, 1};
  const SimulationResult& good = sim.run({on_cpu.data(), nullptr});
  EXPECT_FALSE(good.invalid);
  EXPECT_TRUE(good.invalid_reason.empty());
}

// ---------------------------------------------------------------- critical path

TEST(SimulatorCriticalPath, FlagsTheChainThatSetsTheMakespan) {
  // a (device 0) -> transfer [1, 2) -> b (device 1) [2, 3) ends last; x runs
  // [1, 1.5) on device 0 off the critical path.
  const auto g = make_graph({op("a", kGflop, 1000), op("x", 0.5 * kGflop), op("b", kGflop)}, {{0, 2}});
  const auto r = run(g, test_cluster(2), {0, 0, 1});
  EXPECT_DOUBLE_EQ(r.runtime, 3);
  EXPECT_EQ(r.critical, (std::vector<std::uint8_t>{1, 0, 1}));
}

TEST(SimulatorCriticalPath, WaitingForTheDeviceFollowsThePreviousKernel) {
  // p, q are independent on device 0: q starts at 1 only because p held the
  // device, so both are critical; r (device 1, 0.5 s) is not.
  const auto g = make_graph({op("p", kGflop), op("q", kGflop), op("r", 0.5 * kGflop)}, {});
  const auto r = run(g, test_cluster(2), {0, 0, 1});
  EXPECT_EQ(r.critical, (std::vector<std::uint8_t>{1, 1, 0}));
}

// ---------------------------------------------------------------- errors

TEST(SimulatorErrors, PlacementOutOfRangeThrowsInvalidAction) {
  const auto g = make_graph({op("a", kGflop), op("b", kGflop)}, {{0, 1}});
  Simulator sim(g, test_cluster(2));
  const std::vector<std::int32_t> too_big = {0, 2}, negative = {-1, 0};
  EXPECT_HAS(error_message<InvalidAction>([&] { sim.run({too_big.data(), nullptr}); }), "node 1");
  EXPECT_HAS(error_message<InvalidAction>([&] { sim.run({negative.data(), nullptr}); }), "node 0");
  // The simulator is still usable after a rejected decision.
  const std::vector<std::int32_t> ok = {0, 1};
  expect_same_result(sim.run({ok.data(), nullptr}), run(g, test_cluster(2), ok));
}

TEST(SimulatorErrors, NonFinitePriorityThrowsInvalidAction) {
  const auto g = make_graph({op("a", kGflop), op("b", kGflop)}, {});
  Simulator sim(g, test_cluster(1));
  const std::vector<double> nan = {0, std::numeric_limits<double>::quiet_NaN()};
  const std::vector<double> inf = {std::numeric_limits<double>::infinity(), 0};
  EXPECT_HAS(error_message<InvalidAction>([&] { sim.run({nullptr, nan.data()}); }), "priority of node 1");
  EXPECT_HAS(error_message<InvalidAction>([&] { sim.run({nullptr, inf.data()}); }), "priority of node 0");
}

// ---------------------------------------------------------------- determinism

std::vector<std::int32_t> random_placement(std::mt19937& rng, int n, int num_devices) {
  std::uniform_int_distribution<int> pick(0, num_devices - 1);
  std::vector<std::int32_t> p(n);
  for (auto& d : p) d = pick(rng);
  return p;
}

std::vector<double> random_priority(std::mt19937& rng, int n) {
  std::uniform_int_distribution<int> level(0, 3);  // few levels: plenty of ties
  std::vector<double> p(n);
  for (auto& x : p) x = level(rng);
  return p;
}

TEST(SimulatorDeterminism, SameInputsGiveIdenticalResults) {
  std::mt19937 rng(7);
  const Cluster cluster = Cluster::preset("placeto-k80");
  for (int trial = 0; trial < 10; ++trial) {
    const auto g = test::random_dag(rng, 60, 0.08);
    const auto placement = random_placement(rng, g->num_nodes(), cluster.num_devices());
    const auto priority = random_priority(rng, g->num_nodes());
    expect_same_result(run(g, cluster, placement, priority), run(g, cluster, placement, priority));
  }
}

TEST(SimulatorDeterminism, ReusedSimulatorMatchesFreshOne) {
  std::mt19937 rng(11);
  for (const char* preset : {"4xgpu-nvlink", "placeto-k80", "cpu+2xgpu"}) {
    const Cluster cluster = Cluster::preset(preset);
    const auto g = test::random_dag(rng, 50, 0.1);
    Simulator reused(g, cluster);
    for (int step = 0; step < 6; ++step) {
      const auto placement = random_placement(rng, g->num_nodes(), cluster.num_devices());
      const auto priority = step % 2 ? random_priority(rng, g->num_nodes()) : std::vector<double>{};
      Decisions d{placement.data(), priority.empty() ? nullptr : priority.data()};
      SCOPED_TRACE(std::string(preset) + " step " + std::to_string(step));
      expect_same_result(reused.run(d), simulate(g, cluster, d));
    }
  }
}

// ---------------------------------------------------------------- properties

// How much of the interesting behaviour the random runs exercised (so the
// property test cannot pass vacuously).
struct Coverage {
  int transfers = 0, queued_transfers = 0, waiting_kernels = 0, zero_cost_kernels = 0, ooms = 0;
};

// Checks every rule that can be checked from the outside on one run.
void check_schedule_invariants(const Graph& g, const Cluster& cluster, const Simulator& sim,
                               const SimulationResult& r, const std::vector<double>& priority,
                               Coverage& seen) {
  const int n = g.num_nodes(), num_devices = cluster.num_devices();
  const double eps = 1e-12 * std::max(1e-9, r.runtime);

  // Costs and busy time.
  std::vector<double> busy(num_devices, 0);
  for (NodeId v = 0; v < n; ++v) {
    EXPECT_NEAR(r.finish[v] - r.start[v], sim.cost(v, r.device[v]), eps) << "node " << v;
    busy[r.device[v]] += sim.cost(v, r.device[v]);
  }
  for (int d = 0; d < num_devices; ++d) EXPECT_NEAR(r.device_busy[d], busy[d], eps) << "device " << d;

  // Transfers: exactly one per (producer, remote consumer device), sized by the
  // largest edge, started after the producer finished, timed by the link.
  std::map<std::pair<NodeId, int>, double> expected_bytes;
  for (int e = 0; e < g.num_edges(); ++e) {
    const NodeId u = static_cast<NodeId>(g.edge_src()[e]), w = static_cast<NodeId>(g.edge_dst()[e]);
    if (r.device[u] == r.device[w]) continue;
    double& b = expected_bytes[{u, r.device[w]}];
    b = std::max(b, static_cast<double>(g.edge_bytes()[e]));
  }
  std::map<std::pair<NodeId, int>, const Transfer*> transfer_of;
  double moved = 0;
  for (const Transfer& t : r.transfers) {
    EXPECT_TRUE(transfer_of.emplace(std::make_pair(t.node, t.dst), &t).second) << "duplicate transfer";
    EXPECT_EQ(t.src, r.device[t.node]);
    EXPECT_GE(t.start, r.finish[t.node]);
    EXPECT_NEAR(t.end - t.start, cluster.transfer_time(t.src, t.dst, t.bytes), eps);
    moved += t.bytes;
    ++seen.transfers;
    seen.queued_transfers += t.start > r.finish[t.node];
  }
  EXPECT_EQ(transfer_of.size(), expected_bytes.size());
  for (const auto& [key, bytes] : expected_bytes) {
    auto it = transfer_of.find(key);
    ASSERT_NE(it, transfer_of.end()) << "missing transfer of node " << key.first << " to " << key.second;
    EXPECT_EQ(it->second->bytes, bytes);
  }
  EXPECT_NEAR(r.bytes_moved, moved, 1e-9 * std::max(1.0, moved));

  // Dependencies: a node starts after its inputs are on its device.
  std::vector<double> ready(n, 0);
  for (int e = 0; e < g.num_edges(); ++e) {
    const NodeId u = static_cast<NodeId>(g.edge_src()[e]), w = static_cast<NodeId>(g.edge_dst()[e]);
    const double available =
        r.device[u] == r.device[w] ? r.finish[u] : transfer_of.at({u, r.device[w]})->end;
    EXPECT_GE(r.start[w], available) << "node " << w << " started before input " << u << " arrived";
    ready[w] = std::max(ready[w], available);
  }
  for (NodeId v = 0; v < n; ++v) {
    seen.waiting_kernels += r.start[v] > ready[v];
    seen.zero_cost_kernels += r.finish[v] == r.start[v];
  }

  // Devices: one kernel at a time, op_gap after nonzero-cost kernels.
  std::vector<std::vector<NodeId>> on(num_devices);
  for (NodeId v = 0; v < n; ++v) on[r.device[v]].push_back(v);
  for (int d = 0; d < num_devices; ++d) {
    auto& seq = on[d];
    std::sort(seq.begin(), seq.end(), [&](NodeId a, NodeId b) {
      return r.start[a] != r.start[b] ? r.start[a] < r.start[b] : r.finish[a] < r.finish[b];
    });
    const double gap = cluster.device(d).op_gap;
    std::vector<std::pair<double, double>> idle;  // when the device could have started a kernel
    double free_at = 0;
    for (NodeId v : seq) {
      EXPECT_GE(r.start[v], free_at) << "device " << d << ": node " << v << " overlaps the previous kernel";
      if (r.start[v] > free_at) idle.push_back({free_at, r.start[v]});
      free_at = r.finish[v] + (r.finish[v] > r.start[v] ? gap : 0.0);
    }
    // Work conservation and the pick rule: no ready kernel waits while the
    // device is idle, and no kernel that was ready (strictly) before another's
    // start and ranks higher starts after it.
    for (NodeId v : seq) {
      for (const auto& [from, to] : idle)
        EXPECT_FALSE(from < r.start[v] && to > ready[v] && std::min(to, r.start[v]) - std::max(from, ready[v]) > eps)
            << "device " << d << " idle in [" << from << ", " << to << ") while node " << v
            << " was ready at " << ready[v] << " (started " << r.start[v] << ")";
      for (NodeId w : seq) {
        if (!(ready[w] < r.start[v] && r.start[w] > r.start[v])) continue;
        const double pv = priority.empty() ? 0 : priority[v], pw = priority.empty() ? 0 : priority[w];
        const bool w_ranks_higher =
            pw != pv ? pw > pv : (ready[w] != ready[v] ? ready[w] < ready[v] : w < v);
        EXPECT_FALSE(w_ranks_higher) << "device " << d << " picked node " << v << " over node " << w;
      }
    }
  }

  // Channels: one transfer at a time.
  std::map<int, std::vector<const Transfer*>> by_channel;
  for (const Transfer& t : r.transfers) by_channel[cluster.link(t.src, t.dst).channel].push_back(&t);
  for (auto& [channel, ts] : by_channel) {
    std::sort(ts.begin(), ts.end(), [](const Transfer* a, const Transfer* b) {
      return a->start != b->start ? a->start < b->start : a->end < b->end;
    });
    for (std::size_t i = 1; i < ts.size(); ++i)
      EXPECT_GE(ts[i]->start, ts[i - 1]->end) << "channel " << channel << " carries two transfers at once";
  }

  // Makespan, memory bounds and the lower bound.
  double makespan = 0;
  for (NodeId v = 0; v < n; ++v) makespan = std::max(makespan, r.finish[v]);
  EXPECT_EQ(r.runtime, makespan);
  std::vector<double> params(num_devices, 0), everything(num_devices, 0);
  for (NodeId v = 0; v < n; ++v) {
    params[r.device[v]] += static_cast<double>(g.param_bytes()[v]);
    everything[r.device[v]] += static_cast<double>(g.param_bytes()[v] + g.output_bytes()[v]);
  }
  for (const Transfer& t : r.transfers) everything[t.dst] += t.bytes;
  bool oom = false;
  for (int d = 0; d < num_devices; ++d) {
    EXPECT_GE(r.peak_memory[d], params[d]);
    EXPECT_LE(r.peak_memory[d], everything[d] * (1 + 1e-12));
    oom = oom || r.peak_memory[d] > cluster.device(d).memory_bytes;
  }
  EXPECT_EQ(r.oom, oom);
  seen.ooms += oom;
  EXPECT_FALSE(r.invalid);
  const LowerBound lb = lower_bound(g, cluster);
  EXPECT_GE(r.runtime, lb.value * (1 - 1e-12)) << "runtime below the lower bound";

  // The critical path ends at a node finishing at the makespan.
  bool ends_last = false;
  for (NodeId v = 0; v < n; ++v) ends_last = ends_last || (r.critical[v] && r.finish[v] == r.runtime);
  EXPECT_TRUE(n == 0 || ends_last);
}

TEST(SimulatorProperties, RandomDagsOnPresetsObeyEveryRule) {
  std::vector<Cluster> clusters;
  for (const char* name : {"1xgpu", "2xgpu-pcie", "4xgpu-nvlink", "8xgpu-nvlink", "placeto-k80", "cpu+2xgpu"})
    clusters.push_back(Cluster::preset(name));
  // Presets plus an exact test cluster with an op gap, one shared bus for every
  // link and little memory (so some runs go OOM).
  clusters.push_back(test_cluster(3, with_capacity(with_gap(with_launch(test_device(), 1e-3), 2e-3), 1.5e9), 1e9,
                                  1e-4, [](int, int) { return 0; }));

  std::mt19937 rng(2024);
  std::uniform_int_distribution<int> size(1, 40);
  std::uniform_real_distribution<double> density(0.02, 0.4);
  Coverage seen;
  for (int trial = 0; trial < 210; ++trial) {
    const Cluster& cluster = clusters[trial % clusters.size()];
    const auto g = test::random_dag(rng, size(rng), density(rng));
    const auto placement = random_placement(rng, g->num_nodes(), cluster.num_devices());
    const auto priority = trial % 2 ? random_priority(rng, g->num_nodes()) : std::vector<double>{};
    Simulator sim(g, cluster);
    const SimulationResult& r = sim.run({placement.data(), priority.empty() ? nullptr : priority.data()});
    SCOPED_TRACE("trial " + std::to_string(trial) + " on " + cluster.name());
    check_schedule_invariants(*g, cluster, sim, r, priority, seen);
    if (::testing::Test::HasFailure()) break;  // one failing trial is enough to read
  }
  EXPECT_GT(seen.transfers, 1000);
  EXPECT_GT(seen.queued_transfers, 100);
  EXPECT_GT(seen.waiting_kernels, 1000);
  EXPECT_GT(seen.zero_cost_kernels, 50);
  EXPECT_GT(seen.ooms, 0);
}

TEST(SimulatorProperties, SingleDeviceRuntimeIsTotalCostPlusGaps) {
  std::mt19937 rng(5);
  const Cluster cluster = Cluster::preset("placeto-k80-2");
  for (int trial = 0; trial < 30; ++trial) {
    const auto g = test::random_dag(rng, 30, 0.15);
    Simulator sim(g, cluster);
    const SimulationResult& r = sim.run({});
    double expected = 0;
    int nonzero = 0;
    for (NodeId v = 0; v < g->num_nodes(); ++v) {
      expected += sim.cost(v, 0);
      nonzero += sim.cost(v, 0) > 0;
    }
    // A gap follows every nonzero-cost op except possibly the last one.
    const double gap = cluster.device(0).op_gap;
    EXPECT_GE(r.runtime, expected + (nonzero - 1) * gap - 1e-12);
    EXPECT_LE(r.runtime, expected + nonzero * gap + 1e-12);
    EXPECT_TRUE(r.transfers.empty());
  }
}

}  // namespace
}  // namespace goenv
