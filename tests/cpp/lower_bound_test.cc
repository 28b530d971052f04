// lower_bound (core/lower_bound.h): max(critical path at the fastest allowed
// device with free communication, total fastest work / number of devices), on
// small graphs with exact costs (test_device: 1 GFLOP = 1 s).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/fusion.h"
#include "core/lower_bound.h"
#include "core/simulator.h"
#include "tests/cpp/test_util.h"

namespace goenv {
namespace {

using test::kGflop;
using test::op;
using test::test_cluster;
using test::test_device;

// Nodes costing `seconds[i]` on test_device, with (src, dst) edges.
GraphPtr timed_graph(const std::vector<double>& seconds, const std::vector<std::pair<NodeId, NodeId>>& edges) {
  GraphBuilder b("lb");
  for (std::size_t i = 0; i < seconds.size(); ++i) b.add_node(op("n" + std::to_string(i), seconds[i] * kGflop));
  for (auto [src, dst] : edges) b.add_edge(src, dst);
  return std::move(b).build();
}

void expect_bound(const LowerBound& lb, double critical_path, double work) {
  EXPECT_DOUBLE_EQ(lb.critical_path, critical_path);
  EXPECT_DOUBLE_EQ(lb.work, work);
  EXPECT_DOUBLE_EQ(lb.value, std::max(critical_path, work));
}

TEST(LowerBound, ChainIsBoundByItsCriticalPath) {
  const auto g = timed_graph({1, 2, 3}, {{0, 1}, {1, 2}});
  expect_bound(lower_bound(*g, test_cluster(2)), 6, 3);
}

TEST(LowerBound, WideGraphIsBoundByWorkOverDevices) {
  const auto g = timed_graph({1, 1, 1, 1, 1, 1}, {});
  expect_bound(lower_bound(*g, test_cluster(3)), 1, 2);
  expect_bound(lower_bound(*g, test_cluster(1)), 1, 6);
}

TEST(LowerBound, DiamondTakesTheLongerBranch) {
  // a(1) -> b(2) -> d(1), a -> c(3) -> d.
  const auto g = timed_graph({1, 2, 3, 1}, {{0, 1}, {1, 3}, {0, 2}, {2, 3}});
  expect_bound(lower_bound(*g, test_cluster(2)), 5, 3.5);
}

TEST(LowerBound, IncludesLaunchOverheadAndMemoryBoundCosts) {
  // a: 1 s of FLOPs; b: 2 MB of output = 2 s of memory traffic; launch 0.25 each.
  GraphBuilder b("lb");
  b.add_node(op("a", kGflop));
  b.add_node(op("b", 0, 2 * test::kMbyte));
  b.add_edge(0, 1);
  const auto g = std::move(b).build();
  Device d = test_device();
  d.launch_overhead = 0.25;
  expect_bound(lower_bound(*g, test_cluster(2, d)), 3.5, 1.75);
}

TEST(LowerBound, UsesTheFastestAllowedDeviceAndMeasuredCosts) {
  // Device 0: cpu at 1 GFLOP/s, device 1: gpu at 4 GFLOP/s.
  Device gpu = test_device(DeviceKind::kGpu);
  gpu.peak_flops = 4e9;
  const Cluster cluster = test_cluster({test_device(DeviceKind::kCpu), gpu});
  std::vector<NodeSpec> nodes = {op("any", 4 * kGflop), op("cpu_only", 4 * kGflop), op("measured", 4 * kGflop)};
  nodes[1].allowed_kinds = 1u << static_cast<int>(DeviceKind::kCpu);
  nodes[2].cost[static_cast<int>(DeviceKind::kCpu)] = 0.25;  // faster than the gpu's roofline 1 s
  GraphBuilder b("lb");
  for (const auto& s : nodes) b.add_node(s);
  b.add_edge(0, 1);
  b.add_edge(1, 2);
  const auto g = std::move(b).build();
  // Fastest: any 1 s (gpu), cpu_only 4 s (cpu), measured 0.25 s (cpu).
  expect_bound(lower_bound(*g, cluster), 5.25, 5.25 / 2);
}

TEST(LowerBound, CommunicationIsFree) {
  // Slow links (1 byte/s) do not change the bound.
  GraphBuilder b("lb");
  b.add_node(op("a", kGflop, 1000000));
  b.add_node(op("b", kGflop));
  b.add_edge(0, 1);
  const auto g = std::move(b).build();
  // Memory traffic: a 1 MB out = 1 s, b 1 MB in = 1 s: both exactly their FLOP time.
  expect_bound(lower_bound(*g, test_cluster(2, test_device(), 1.0, 10.0)), 2, 1);
}

TEST(LowerBound, ChainOnOneDeviceAchievesTheBound) {
  const auto g = timed_graph({0.5, 1.5, 2}, {{0, 1}, {1, 2}});
  const Cluster cluster = test_cluster(2);
  EXPECT_DOUBLE_EQ(simulate(g, cluster, {}).runtime, lower_bound(*g, cluster).value);
}

TEST(LowerBound, NeverAboveSimulatedRuntime) {
  std::mt19937 rng(99);
  const Cluster cluster = Cluster::preset("cpu+2xgpu");
  std::uniform_int_distribution<int> device(0, cluster.num_devices() - 1);
  for (int trial = 0; trial < 50; ++trial) {
    const auto g = test::random_dag(rng, 25, 0.15);
    std::vector<std::int32_t> placement(g->num_nodes());
    for (auto& p : placement) p = device(rng);
    const double runtime = simulate(g, cluster, {placement.data(), nullptr}).runtime;
    EXPECT_LE(lower_bound(*g, cluster).value, runtime * (1 + 1e-12)) << "trial " << trial;
  }
}

// With fusion (the bound of the tasks that decide it): no fused decision beats it either,
// where the unfused bound can be beaten (one launch for a whole fused chain).
TEST(LowerBound, WithFusionNeverAboveAnyFusedRuntime) {
  std::mt19937 rng(7);
  const Cluster cluster = Cluster::preset("cpu+2xgpu");
  std::uniform_int_distribution<int> device(0, cluster.num_devices() - 1), level(0, 3);
  for (int trial = 0; trial < 50; ++trial) {
    const auto g = test::random_dag(rng, 25, 0.15);
    std::vector<std::int32_t> placement(g->num_nodes()), fusion(g->num_nodes());
    for (auto& p : placement) p = trial % 2 ? device(rng) : 0;
    for (auto& f : fusion) f = level(rng);
    const double runtime = simulate_fused(g, cluster, {placement.data(), nullptr}, fusion.data(), 16).runtime;
    const double fused_bound = lower_bound(*g, cluster, /*fusion=*/true).value;
    EXPECT_LE(fused_bound, runtime * (1 + 1e-12)) << "trial " << trial;
    EXPECT_LE(fused_bound, lower_bound(*g, cluster).value);
  }
  GraphBuilder b("relus");  // 16 tiny ReLUs: launch-bound alone, one launch fused
  for (int i = 0; i < 16; ++i) {
    NodeSpec relu = op("r" + std::to_string(i), 1e3);
    relu.op_type = op_type_id("Relu");
    b.add_node(relu);
  }
  for (int i = 1; i < 16; ++i) b.add_edge(i - 1, i);
  const auto chain = std::move(b).build();
  const Cluster gpu = Cluster::preset("1xgpu");
  const std::vector<std::int32_t> on_gpu(16, 0), fuse_all(16, 1);
  const double fused = simulate_fused(chain, gpu, {on_gpu.data(), nullptr}, fuse_all.data(), 16).runtime;
  EXPECT_LT(fused, lower_bound(*chain, gpu).value);  // why the fusion tasks need their own bound
  EXPECT_LE(lower_bound(*chain, gpu, true).value, fused);
}

}  // namespace
}  // namespace goenv
