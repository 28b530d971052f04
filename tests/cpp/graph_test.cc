// Graph construction and validation (core/graph.h): what loaders reject, how
// edges are merged and indexed, topological order, depth and dense ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "core/error.h"
#include "core/graph.h"
#include "tests/cpp/test_util.h"

namespace goenv {
namespace {

using test::error_message;
using test::op;
using Edge = std::array<std::int64_t, 3>;  // src, dst, bytes

std::vector<NodeSpec> ops(std::initializer_list<const char*> names) {
  std::vector<NodeSpec> nodes;
  for (const char* name : names) nodes.push_back(op(name, 1.0, 8));
  return nodes;
}

// The message of the InvalidGraph that building these nodes and edges throws.
std::string rejection(std::vector<NodeSpec> nodes, std::vector<Edge> edges = {}) {
  return error_message<InvalidGraph>([&] { Graph::from_specs("bad", std::move(nodes), std::move(edges)); });
}

// The message when one node spec, alone in a graph, is rejected.
template <typename Mutate>
std::string node_rejection(Mutate mutate) {
  NodeSpec s = op("victim", 1.0, 8);
  mutate(s);
  return rejection({s});
}

// ---------------------------------------------------------------- rejection

TEST(GraphValidation, CycleRejectedNamingItsNodes) {
  // outside -> alpha -> beta -> gamma -> alpha, plus a tail off the cycle.
  const std::string msg =
      rejection(ops({"outside", "alpha", "beta", "gamma", "tail"}), {{0, 1, 8}, {1, 2, 8}, {2, 3, 8}, {3, 1, 8}, {3, 4, 8}});
  EXPECT_HAS(msg, "cycle");
  EXPECT_HAS(msg, "alpha");
  EXPECT_HAS(msg, "beta");
  EXPECT_HAS(msg, "gamma");
  EXPECT_EQ(msg.find("outside"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("tail"), std::string::npos) << msg;
}

TEST(GraphValidation, TwoNodeCycleRejected) {
  EXPECT_HAS(rejection(ops({"x", "y"}), {{0, 1, 8}, {1, 0, 8}}), "cycle");
}

TEST(GraphValidation, SelfLoopRejected) {
  EXPECT_HAS(rejection(ops({"a", "loopy"}), {{0, 1, 8}, {1, 1, 8}}), "self-loop on node 1");
}

TEST(GraphValidation, DanglingEdgesRejected) {
  EXPECT_HAS(rejection(ops({"a", "b"}), {{0, 2, 8}}), "dangling edge 0 -> 2");
  EXPECT_HAS(rejection(ops({"a", "b"}), {{-1, 1, 8}}), "dangling edge -1 -> 1");
  // The builder refuses them as soon as they are added.
  GraphBuilder b;
  b.add_node(op("a", 1));
  EXPECT_THROW(b.add_edge(0, 1), InvalidGraph);
  EXPECT_THROW(b.add_edge(-1, 0), InvalidGraph);
  EXPECT_THROW(b.node(3), InvalidArgument);
}

TEST(GraphValidation, NegativeOrNonFiniteFlopsRejected) {
  for (double bad : {-1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()}) {
    const std::string msg = node_rejection([&](NodeSpec& s) { s.flops = bad; });
    EXPECT_HAS(msg, "flops");
    EXPECT_HAS(msg, "victim");
  }
}

TEST(GraphValidation, NegativeBytesRejected) {
  EXPECT_HAS(node_rejection([](NodeSpec& s) { s.output_bytes = -1; }), "output_bytes");
  EXPECT_HAS(node_rejection([](NodeSpec& s) { s.param_bytes = -5; }), "param_bytes");
  EXPECT_HAS(rejection(ops({"a", "b"}), {{0, 1, -3}}), "bytes must be >= 0");
}

TEST(GraphValidation, BadOpTypeRejected) {
  EXPECT_HAS(node_rejection([](NodeSpec& s) { s.op_type = num_op_types(); }), "op type");
  EXPECT_HAS(node_rejection([](NodeSpec& s) { s.op_type = -1; }), "op type");
  EXPECT_THROW(op_type_id("NoSuchOp"), NotFound);
}

TEST(GraphValidation, BadMeasuredCostRejected) {
  for (double bad : {-1e-6, std::numeric_limits<double>::infinity()}) {
    const std::string msg = node_rejection([&](NodeSpec& s) { s.cost[1] = bad; });
    EXPECT_HAS(msg, "measured cost");
  }
  // NaN means "not measured" and zero is a valid measurement.
  NodeSpec s = op("ok", 1);
  s.cost = {0.0, kNoCost, 1e-3};
  EXPECT_NO_THROW(Graph::from_specs("ok", {s}, {}));
}

TEST(GraphValidation, BadIdsAndKindMasksRejected) {
  EXPECT_HAS(node_rejection([](NodeSpec& s) { s.allowed_kinds = 1u << kNumDeviceKinds; }), "unknown bits");
  EXPECT_HAS(node_rejection([](NodeSpec& s) { s.colocation = -2; }), "colocation");
  EXPECT_HAS(node_rejection([](NodeSpec& s) { s.group = -7; }), "group");
}

TEST(GraphValidation, ErrorsAreInvalidGraphAndInvalidArgument) {
  // InvalidGraph is an InvalidArgument is a goenv::Error (the bindings map them).
  try {
    Graph::from_specs("bad", ops({"a"}), {{0, 0, 1}});
    FAIL() << "self loop accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(dynamic_cast<const InvalidGraph*>(&e), nullptr);
  }
}

// ---------------------------------------------------------------- structure

TEST(GraphStructure, DuplicateEdgesMergedKeepingTheLargestBytes) {
  GraphBuilder b;
  const NodeId x = b.add_node(op("x", 1, 100));
  const NodeId y = b.add_node(op("y", 1, 5));
  const NodeId z = b.add_node(op("z", 1));
  b.add_edge(x, y, 10);
  b.add_edge(x, y, 30);
  b.add_edge(x, y, 20);
  b.add_edge(y, z);  // default: the producer's output_bytes
  b.add_edge(x, z, 0);
  const auto g = std::move(b).build();
  ASSERT_EQ(g->num_edges(), 3);
  EXPECT_EQ(g->edge_src(), (std::vector<std::int64_t>{0, 0, 1}));
  EXPECT_EQ(g->edge_dst(), (std::vector<std::int64_t>{1, 2, 2}));
  EXPECT_EQ(g->edge_bytes(), (std::vector<std::int64_t>{30, 0, 5}));
}

TEST(GraphStructure, EdgesSortedBySourceThenDestination) {
  const auto g = Graph::from_specs("g", ops({"a", "b", "c", "d"}), {{2, 3, 1}, {0, 3, 2}, {1, 2, 3}, {0, 1, 4}});
  EXPECT_EQ(g->edge_src(), (std::vector<std::int64_t>{0, 0, 1, 2}));
  EXPECT_EQ(g->edge_dst(), (std::vector<std::int64_t>{1, 3, 2, 3}));
  EXPECT_EQ(g->edge_bytes(), (std::vector<std::int64_t>{4, 2, 3, 1}));  // bytes follow their edge
}

TEST(GraphStructure, TopologicalOrderIsAValidPermutation) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    const auto g = test::random_dag(rng, 1 + trial, 0.2);
    const auto& order = g->topological_order();
    ASSERT_EQ(static_cast<int>(order.size()), g->num_nodes());
    std::vector<int> position(g->num_nodes(), -1);
    for (int i = 0; i < g->num_nodes(); ++i) {
      ASSERT_GE(order[i], 0);
      ASSERT_LT(order[i], g->num_nodes());
      ASSERT_EQ(position[order[i]], -1) << "node listed twice";
      position[order[i]] = i;
    }
    for (int e = 0; e < g->num_edges(); ++e)
      EXPECT_LT(position[g->edge_src()[e]], position[g->edge_dst()[e]]) << "edge " << e;
  }
}

TEST(GraphStructure, DepthIsLongestPathFromASource) {
  // 0 -> 1 -> 2 -> 3, 0 -> 3 (shortcut), 4 -> 3, 5 isolated, 6 <- 4.
  const auto g = Graph::from_specs("g", ops({"a", "b", "c", "d", "e", "f", "g"}),
                                   {{0, 1, 1}, {1, 2, 1}, {2, 3, 1}, {0, 3, 1}, {4, 3, 1}, {4, 6, 1}});
  EXPECT_EQ(g->depth(), (std::vector<std::int32_t>{0, 1, 2, 3, 0, 0, 1}));
}

TEST(GraphStructure, ColocationAndGroupIdsRenumberedDenselyInFirstAppearanceOrder) {
  const std::vector<std::int32_t> colocation = {42, kNone, 7, 42, 100, 7};
  const std::vector<std::int32_t> group = {9, 3, 3, kNone, 0, 9};
  std::vector<NodeSpec> nodes;
  for (std::size_t i = 0; i < colocation.size(); ++i) {
    nodes.push_back(op("n" + std::to_string(i), 1));
    nodes.back().colocation = colocation[i];
    nodes.back().group = group[i];
  }
  const auto g = Graph::from_specs("g", nodes, {});
  EXPECT_EQ(g->colocation(), (std::vector<std::int32_t>{0, kNone, 1, 0, 2, 1}));
  EXPECT_EQ(g->num_colocation_groups(), 3);
  EXPECT_EQ(g->group(), (std::vector<std::int32_t>{0, 1, 1, kNone, 2, 0}));
  EXPECT_EQ(g->num_groups(), 3);
}

TEST(GraphStructure, CsrOffsetsConsistentWithEdgeArrays) {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 30; ++trial) {
    const auto g = test::random_dag(rng, 2 + trial, 0.3);
    const int n = g->num_nodes(), m = g->num_edges();
    const auto &out = g->out_offsets(), &in = g->in_offsets(), &in_edges = g->in_edges();
    ASSERT_EQ(static_cast<int>(out.size()), n + 1);
    ASSERT_EQ(static_cast<int>(in.size()), n + 1);
    EXPECT_EQ(out.front(), 0);
    EXPECT_EQ(out.back(), m);
    EXPECT_EQ(in.front(), 0);
    EXPECT_EQ(in.back(), m);
    ASSERT_EQ(static_cast<int>(in_edges.size()), m);
    for (NodeId v = 0; v < n; ++v) {
      EXPECT_LE(out[v], out[v + 1]);
      for (int e = out[v]; e < out[v + 1]; ++e) EXPECT_EQ(g->edge_src()[e], v);
      for (int i = in[v]; i < in[v + 1]; ++i) EXPECT_EQ(g->edge_dst()[in_edges[i]], v);
    }
    std::vector<int> seen(m, 0);
    for (int e : in_edges) ++seen[e];
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
    for (int e = 1; e < m; ++e) {
      const auto prev = std::make_pair(g->edge_src()[e - 1], g->edge_dst()[e - 1]);
      EXPECT_LT(prev, std::make_pair(g->edge_src()[e], g->edge_dst()[e])) << "edges not sorted and unique";
    }
    // The Boost CSR view agrees with the flat arrays (edge property = edge id).
    const auto& csr = g->csr();
    ASSERT_EQ(static_cast<int>(boost::num_vertices(csr)), n);
    ASSERT_EQ(static_cast<int>(boost::num_edges(csr)), m);
    for (NodeId v = 0; v < n; ++v) {
      EXPECT_EQ(static_cast<int>(boost::out_degree(v, csr)), out[v + 1] - out[v]);
      EXPECT_EQ(static_cast<int>(boost::in_degree(v, csr)), in[v + 1] - in[v]);
      for (auto [it, end] = boost::out_edges(v, csr); it != end; ++it) {
        const int e = csr[*it].index;
        EXPECT_EQ(g->edge_src()[e], v);
        EXPECT_EQ(g->edge_dst()[e], static_cast<std::int64_t>(boost::target(*it, csr)));
      }
    }
  }
}

TEST(GraphStructure, ColumnsAndNodeSpecRoundTrip) {
  NodeSpec s = op("conv", 2.5e9, 1024, 4096);
  s.op_type = op_type_id("Relu");
  s.shape = {8, 3, 224, 224};
  s.group = 4;       // renumbered to 0
  s.colocation = 9;  // renumbered to 0
  s.allowed_kinds = 0b110;
  s.cost = {kNoCost, 1e-4, kNoCost};
  NodeSpec t = op("plain", 1e9, 10);
  const auto g = Graph::from_specs("named", {s, t}, {{0, 1, 512}});
  EXPECT_EQ(g->name(), "named");
  EXPECT_EQ(g->total_flops(), 3.5e9);
  EXPECT_EQ(g->total_param_bytes(), 4096);
  EXPECT_EQ(g->fusible(0), FusibleKind::kElementwise);
  EXPECT_EQ(g->fusible(1), FusibleKind::kOpaque);
  EXPECT_FALSE(g->allows(0, DeviceKind::kCpu));
  EXPECT_TRUE(g->allows(0, DeviceKind::kGpu));
  EXPECT_TRUE(g->allows(0, DeviceKind::kTpu));
  EXPECT_TRUE(g->allows(1, DeviceKind::kCpu));  // mask 0 = anywhere

  const NodeSpec back = g->node_spec(0);
  EXPECT_EQ(back.name, "conv");
  EXPECT_EQ(back.op_type, s.op_type);
  EXPECT_EQ(back.flops, 2.5e9);
  EXPECT_EQ(back.output_bytes, 1024);
  EXPECT_EQ(back.param_bytes, 4096);
  EXPECT_EQ(back.shape, s.shape);
  EXPECT_EQ(back.group, 0);
  EXPECT_EQ(back.colocation, 0);
  EXPECT_EQ(back.allowed_kinds, 0b110);
  EXPECT_TRUE(std::isnan(back.cost[0]));
  EXPECT_EQ(back.cost[1], 1e-4);
  EXPECT_TRUE(std::isnan(back.cost[2]));
  EXPECT_EQ(g->cost().size(), 2u * kNumDeviceKinds);
  EXPECT_EQ(g->cost()[0 * kNumDeviceKinds + 1], 1e-4);
}

TEST(GraphStructure, RebuildingFromNodeSpecsGivesTheSameGraph) {
  std::mt19937 rng(23);
  const auto g = test::random_dag(rng, 40, 0.15, /*rich=*/true);
  std::vector<NodeSpec> nodes;
  for (NodeId v = 0; v < g->num_nodes(); ++v) nodes.push_back(g->node_spec(v));
  std::vector<Edge> edges;
  for (int e = 0; e < g->num_edges(); ++e) edges.push_back({g->edge_src()[e], g->edge_dst()[e], g->edge_bytes()[e]});
  const auto h = Graph::from_specs(g->name(), nodes, edges);
  EXPECT_EQ(h->colocation(), g->colocation());
  EXPECT_EQ(h->group(), g->group());
  EXPECT_EQ(h->edge_bytes(), g->edge_bytes());
  EXPECT_EQ(h->topological_order(), g->topological_order());
  EXPECT_EQ(h->depth(), g->depth());
}

TEST(GraphStructure, GraphWithoutEdges) {
  const auto g = Graph::from_specs("flat", ops({"a", "b", "c"}), {});
  EXPECT_EQ(g->num_edges(), 0);
  EXPECT_EQ(g->depth(), (std::vector<std::int32_t>{0, 0, 0}));
  EXPECT_EQ(g->out_offsets(), (std::vector<std::int32_t>{0, 0, 0, 0}));
  EXPECT_EQ(g->topological_order().size(), 3u);
}

}  // namespace
}  // namespace goenv
