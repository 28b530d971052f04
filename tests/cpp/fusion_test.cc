// The fusion rules of docs/simulator.md: convexity, fusible kinds, size limit, no
// cross-device fusion, one launch per kernel, only boundary bytes touch memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/fusion.h"
#include "core/error.h"
#include "core/simulator.h"
#include "tests/cpp/test_util.h"

namespace goenv {
namespace {

using test::kGflop;
using test::kMbyte;

NodeSpec typed(const std::string& name, const char* type, double flops, std::int64_t bytes) {
  NodeSpec s = test::op(name, flops, bytes);
  s.op_type = op_type_id(type);
  return s;
}

std::vector<std::int32_t> all(int n, std::int32_t value) { return std::vector<std::int32_t>(n, value); }

// A chain of ops of these types (node i -> node i + 1), each 1 GFLOP with 1 MB out.
GraphPtr chain(const std::vector<const char*>& types) {
  GraphBuilder b("chain");
  for (std::size_t i = 0; i < types.size(); ++i) {
    b.add_node(typed(types[i] + std::to_string(i), types[i], kGflop, kMbyte));
    if (i > 0) b.add_edge(static_cast<NodeId>(i - 1), static_cast<NodeId>(i));
  }
  return std::move(b).build();
}

// Is every group convex: no path leaves it and comes back?
bool groups_are_convex(const Graph& g, const FusionPlan& plan) {
  for (int k = 0; k < plan.num_groups; ++k) {
    // Nodes reachable from the group through outside nodes.
    std::vector<char> seen(g.num_nodes(), 0);
    std::vector<NodeId> stack;
    for (NodeId v = 0; v < g.num_nodes(); ++v)
      if (plan.group[v] == k)
        for (int e = g.out_offsets()[v]; e < g.out_offsets()[v + 1]; ++e)
          if (plan.group[g.edge_dst()[e]] != k) stack.push_back(static_cast<NodeId>(g.edge_dst()[e]));
    while (!stack.empty()) {
      const NodeId x = stack.back();
      stack.pop_back();
      if (seen[x]) continue;
      seen[x] = 1;
      if (plan.group[x] == k) return false;
      for (int e = g.out_offsets()[x]; e < g.out_offsets()[x + 1]; ++e) stack.push_back(static_cast<NodeId>(g.edge_dst()[e]));
    }
  }
  return true;
}

TEST(Fusion, ElementwiseChainFusesIntoOneKernelWithOneLaunch) {
  // relu -> add -> mul, each 1 GFLOP, 1 MB out; device: 1 GFLOP/s, 1 MB/s, 1 s launch.
  const auto g = chain({"Relu", "Add", "Mul"});
  const NodeId r = 0, m = 2;
  Device d = test::test_device();
  d.launch_overhead = 1;
  const Cluster cluster = test::test_cluster(1, d);

  const auto unfused = simulate(g, cluster, {});
  // Each op: max(1 s compute, touched bytes / 1 MB/s) + 1 s launch.
  // relu touches 1 MB (out) = 1 s; add and mul touch 2 MB = 2 s. Sum = (1+1)+(2+1)+(2+1) = 8.
  EXPECT_DOUBLE_EQ(unfused.runtime, 8.0);

  const auto priorities = all(3, 1);
  FusionPlan plan;
  const auto fused = simulate_fused(g, cluster, {}, priorities.data(), 16, &plan);
  EXPECT_EQ(plan.num_groups, 1);
  EXPECT_EQ(plan.num_fused_nodes, 3);
  // One kernel: 3 GFLOP = 3 s compute; only mul's output leaves (1 MB = 1 s); one launch.
  EXPECT_DOUBLE_EQ(fused.runtime, 4.0);
  EXPECT_EQ(fused.kernel, std::vector<std::int32_t>({0, 0, 0}));
  EXPECT_DOUBLE_EQ(fused.start[m], fused.start[r]);
}

TEST(Fusion, PriorityZeroMeansAlone) {
  GraphBuilder b("chain");
  const auto r = b.add_node(typed("relu", "Relu", kGflop, kMbyte));
  const auto a = b.add_node(typed("add", "Add", kGflop, kMbyte));
  b.add_edge(r, a);
  auto g = std::move(b).build();
  const auto none = all(2, 0);
  EXPECT_EQ(plan_fusion(*g, all(2, 0).data(), none.data(), 16).num_groups, 2);
}

// Priority 0 keeps a node out of every group, also as a producer a consumer would join
// (docs/simulator.md: "priority 0 = do not fuse"); the others fuse as they would.
TEST(Fusion, PriorityZeroKeepsAProducerAloneToo) {
  const auto g = chain({"Add", "Relu", "Mul"});
  const auto single = all(3, 0);
  const std::vector<std::int32_t> middle_only{0, 1, 0}, first_alone{0, 1, 1}, last_alone{1, 1, 0};
  EXPECT_EQ(plan_fusion(*g, single.data(), middle_only.data(), 16).group, std::vector<std::int32_t>({0, 1, 2}));
  EXPECT_EQ(plan_fusion(*g, single.data(), first_alone.data(), 16).group, std::vector<std::int32_t>({0, 1, 1}));
  EXPECT_EQ(plan_fusion(*g, single.data(), last_alone.data(), 16).group, std::vector<std::int32_t>({0, 0, 1}));
}

// The window (fusion.h: part of the pass's definition): a merge of two groups more than
// max_window topological slots apart is refused, whatever lies between them.
TEST(Fusion, AMergeBeyondTheWindowIsRefused) {
  GraphBuilder b("far");
  const auto first = b.add_node(typed("add", "Add", kGflop, kMbyte));
  for (int i = 0; i < 5; ++i) b.add_node(typed("c" + std::to_string(i), "Conv2D", kGflop, kMbyte));  // slots 1-5
  const auto last = b.add_node(typed("relu", "Relu", kGflop, kMbyte));
  b.add_edge(first, last);
  auto g = std::move(b).build();
  const auto& order = g->topological_order();
  const int apart = static_cast<int>(std::find(order.begin(), order.end(), last) -
                                     std::find(order.begin(), order.end(), first));  // the slots between them
  ASSERT_GE(apart, 1);
  const auto single = all(7, 0), fuse = all(7, 1);
  EXPECT_EQ(plan_fusion(*g, single.data(), fuse.data(), 16, /*max_window=*/apart).group[last], 0);
  EXPECT_EQ(plan_fusion(*g, single.data(), fuse.data(), 16, /*max_window=*/apart - 1).group[last], 6);
  EXPECT_EQ(plan_fusion(*g, single.data(), fuse.data(), 16).num_fused_nodes, 2);  // kFusionWindow = 4096
}

TEST(Fusion, OpaqueOpsNeverFuse) {
  GraphBuilder b("conv-relu");
  const auto c = b.add_node(typed("conv", "Conv2D", kGflop, kMbyte));
  const auto r = b.add_node(typed("relu", "Relu", kGflop, kMbyte));
  b.add_edge(c, r);
  auto g = std::move(b).build();
  EXPECT_EQ(plan_fusion(*g, all(2, 0).data(), all(2, 1).data(), 16).num_groups, 2);
}

TEST(Fusion, ReductionOnlyAsTheLastOpOfAGroup) {
  // sum -> relu: relu may not join the reduction's group (the reduction would not be a sink).
  GraphBuilder b("reduce");
  const auto x = b.add_node(typed("x", "Add", kGflop, kMbyte));
  const auto s = b.add_node(typed("sum", "Sum", kGflop, kMbyte));
  const auto r = b.add_node(typed("relu", "Relu", kGflop, kMbyte));
  b.add_edge(x, s);
  b.add_edge(s, r);
  auto g = std::move(b).build();
  const auto plan = plan_fusion(*g, all(3, 0).data(), all(3, 1).data(), 16);
  EXPECT_EQ(plan.group[x], plan.group[s]);  // elementwise into reduction: fine
  EXPECT_NE(plan.group[s], plan.group[r]);
}

TEST(Fusion, SizeLimit) {
  GraphBuilder b("long");
  NodeId prev = b.add_node(typed("n0", "Add", kGflop, kMbyte));
  for (int i = 1; i < 10; ++i) {
    const NodeId next = b.add_node(typed("n" + std::to_string(i), "Add", kGflop, kMbyte));
    b.add_edge(prev, next);
    prev = next;
  }
  auto g = std::move(b).build();
  const auto plan = plan_fusion(*g, all(10, 0).data(), all(10, 1).data(), 4);
  std::vector<int> size(plan.num_groups, 0);
  for (auto k : plan.group) ++size[k];
  for (int s : size) EXPECT_LE(s, 4);
  EXPECT_EQ(plan.num_groups, 3);  // 4 + 4 + 2
  EXPECT_THROW(plan_fusion(*g, all(10, 0).data(), all(10, 1).data(), 0), InvalidArgument);
}

TEST(Fusion, OpsOnDifferentDevicesNeverFuse) {
  GraphBuilder b("split");
  const auto r = b.add_node(typed("relu", "Relu", kGflop, kMbyte));
  const auto a = b.add_node(typed("add", "Add", kGflop, kMbyte));
  b.add_edge(r, a);
  auto g = std::move(b).build();
  const std::vector<std::int32_t> same = {0, 0}, split = {0, 1};
  EXPECT_EQ(plan_fusion(*g, same.data(), all(2, 1).data(), 16).num_groups, 1);
  EXPECT_EQ(plan_fusion(*g, split.data(), all(2, 1).data(), 16).num_groups, 2);
}

TEST(Fusion, NonConvexMergeRefused) {
  // a -> b -> c and a -> conv -> c: {a, c} would be left and re-entered through conv.
  GraphBuilder b("diamond");
  const auto a = b.add_node(typed("a", "Add", kGflop, kMbyte));
  const auto conv = b.add_node(typed("conv", "Conv2D", kGflop, kMbyte));
  const auto c = b.add_node(typed("c", "Add", kGflop, kMbyte));
  b.add_edge(a, conv);
  b.add_edge(conv, c);
  b.add_edge(a, c, 10 * kMbyte);  // the largest producer edge of c is a's
  auto g = std::move(b).build();
  const auto plan = plan_fusion(*g, all(3, 0).data(), all(3, 1).data(), 16);
  EXPECT_NE(plan.group[a], plan.group[c]);
}

TEST(Fusion, BoundaryBytesOnlyInMemory) {
  // relu (1 MB) -> add (1 MB) -> conv: fused, relu's output never materializes.
  GraphBuilder b("mem");
  const auto r = b.add_node(typed("relu", "Relu", kGflop, kMbyte));
  const auto a = b.add_node(typed("add", "Add", kGflop, kMbyte));
  const auto c = b.add_node(typed("conv", "Conv2D", kGflop, 0));
  b.add_edge(r, a);
  b.add_edge(a, c);
  auto g = std::move(b).build();
  const Cluster cluster = test::test_cluster(1);
  const auto unfused = simulate(g, cluster, {});
  const auto fused = simulate_fused(g, cluster, {}, all(3, 1).data(), 16);
  EXPECT_DOUBLE_EQ(unfused.peak_memory[0], 2.0 * kMbyte);  // relu's output lives while add runs
  EXPECT_DOUBLE_EQ(fused.peak_memory[0], 1.0 * kMbyte);
}

TEST(Fusion, RandomGraphsStayAcyclicConvexAndLegal) {
  std::mt19937 rng(7);
  const Cluster cluster = test::test_cluster(3);
  int fused_somewhere = 0;
  for (int trial = 0; trial < 300; ++trial) {
    auto g = test::random_dag(rng, 2 + static_cast<int>(rng() % 60), 0.05 + (rng() % 30) / 100.0);
    const int n = g->num_nodes();
    std::vector<std::int32_t> placement(n), priority(n);
    for (int v = 0; v < n; ++v) {
      placement[v] = trial % 3 == 0 ? 0 : static_cast<std::int32_t>(rng() % 3);
      priority[v] = static_cast<std::int32_t>(rng() % 4);
    }
    const int limit = 1 + static_cast<int>(rng() % 8);
    FusionPlan plan;
    SimulationResult r;
    ASSERT_NO_THROW(r = simulate_fused(g, cluster, {placement.data(), nullptr}, priority.data(), limit, &plan))
        << "trial " << trial;
    ASSERT_TRUE(groups_are_convex(*g, plan)) << "trial " << trial;
    std::vector<int> size(plan.num_groups, 0);
    std::vector<std::int32_t> device(plan.num_groups, -1);
    for (NodeId v = 0; v < n; ++v) {
      const auto k = plan.group[v];
      ++size[k];
      if (device[k] == -1) device[k] = placement[v];
      EXPECT_EQ(device[k], placement[v]) << "cross-device fusion in trial " << trial;
      if (size[k] > 1) EXPECT_NE(g->fusible(v), FusibleKind::kOpaque);
    }
    for (int s : size) EXPECT_LE(s, limit);
    fused_somewhere += plan.num_fused_nodes > 0;
    // Same decisions, same answer.
    const auto again = simulate_fused(g, cluster, {placement.data(), nullptr}, priority.data(), limit);
    EXPECT_EQ(again.runtime, r.runtime);
  }
  EXPECT_GT(fused_somewhere, 50);
}

}  // namespace
}  // namespace goenv
