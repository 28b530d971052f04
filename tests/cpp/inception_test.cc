#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/error.h"
#include "datasets/registry.h"
#include "datasets/training_graph.h"

namespace goenv {
namespace {

int count_op(const Graph& g, const char* op) {
  int n = 0;
  for (int t : g.op_type()) n += t == op_type_id(op);
  return n;
}

double forward_conv_matmul_flops(const Graph& g) {
  double flops = 0;
  for (NodeId v = 0; v < g.num_nodes(); ++v)
    if (training_phase(g.names()[v]) == TrainingPhase::kForward &&
        (g.op_type()[v] == op_type_id("Conv2D") || g.op_type()[v] == op_type_id("MatMul")))
      flops += g.flops()[v];
  return flops;
}

const GraphPtr& inception() {
  static const GraphPtr g = build_graph("inception");
  return g;
}

TEST(Inception, Registered) {
  const GraphFamily& family = graph_family("inception");
  EXPECT_EQ(family.default_cluster, "2xgpu-nvlink");
  EXPECT_EQ(family.defaults.at("batch_size"), 64);
  EXPECT_EQ(family.defaults.at("image_size"), 299);
  EXPECT_EQ(family.defaults.at("num_classes"), 1000);
}

TEST(Inception, SizeAndStructure) {
  const Graph& g = *inception();  // built, so a validated DAG
  // 94 conv+bn+relu layers at 11 nodes each, plus pools, concats, AddNs, logits.
  EXPECT_GE(g.num_nodes(), 1000);
  EXPECT_LE(g.num_nodes(), 1300);
  EXPECT_EQ(static_cast<int>(g.topological_order().size()), g.num_nodes());
  EXPECT_EQ(count_op(g, "Conv2D"), 94);
  EXPECT_EQ(count_op(g, "Conv2DBackpropFilter"), 94);
  EXPECT_EQ(count_op(g, "Conv2DBackpropInput"), 93);  // not for the first conv: its input is data
  EXPECT_EQ(count_op(g, "BatchNormGrad"), 94);
  EXPECT_EQ(count_op(g, "Concat"), 15);  // 11 blocks + 2 inner concats in each of Mixed_7b/c
  EXPECT_EQ(count_op(g, "Split"), 15);
  EXPECT_GE(count_op(g, "AddN"), 11);  // every block input feeds several branches
  // 7 stem end points, 11 Mixed blocks, logits.
  EXPECT_EQ(g.num_groups(), 19);
  std::map<std::string, int> group_of_block;
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    EXPECT_NE(g.group()[v], kNone) << g.names()[v];
    const std::string& name = g.names()[v];
    if (name.rfind("fwd/Mixed_", 0) == 0) {
      const std::string block = name.substr(4, 8);
      auto [it, inserted] = group_of_block.emplace(block, g.group()[v]);
      EXPECT_EQ(it->second, g.group()[v]) << name;
    }
  }
  EXPECT_EQ(group_of_block.size(), 11u);
}

TEST(Inception, MultiplyAccumulatesPerImageMatchPublished) {
  const double macs = forward_conv_matmul_flops(*inception()) / 2 / 64;
  EXPECT_NEAR(macs, 5.7e9, 0.2 * 5.7e9);
}

TEST(Inception, ParameterCountMatchesPublished) {
  const double params = static_cast<double>(inception()->total_param_bytes()) / 4;
  EXPECT_NEAR(params, 23.8e6, 0.1 * 23.8e6);
}

TEST(Inception, EveryVariableColocatesWithExactlyItsUpdate) {
  const Graph& g = *inception();
  std::map<int, std::map<int, int>> ops_by_colocation;  // colocation -> op type -> count
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    const bool is_state = g.op_type()[v] == op_type_id("Variable") || g.op_type()[v] == op_type_id("ApplyGradient");
    EXPECT_EQ(g.colocation()[v] != kNone, is_state) << g.names()[v];
    if (g.colocation()[v] != kNone) ++ops_by_colocation[g.colocation()[v]][g.op_type()[v]];
  }
  EXPECT_EQ(static_cast<int>(ops_by_colocation.size()), count_op(g, "Variable"));
  for (const auto& [id, ops] : ops_by_colocation) {
    EXPECT_EQ(ops.size(), 2u) << "colocation " << id;
    EXPECT_EQ(ops.at(op_type_id("Variable")), 1);
    EXPECT_EQ(ops.at(op_type_id("ApplyGradient")), 1);
  }
}

TEST(Inception, BatchSizeScalesForwardFlopsLinearly) {
  const double f64 = forward_conv_matmul_flops(*inception());
  const double f16 = forward_conv_matmul_flops(*build_graph("inception", {{"batch_size", 16}}));
  EXPECT_NEAR(f64 / f16, 4.0, 1e-9);
  EXPECT_EQ(build_graph("inception", {{"batch_size", 16}})->num_nodes(), inception()->num_nodes());
}

TEST(Inception, BadParametersRaise) {
  EXPECT_THROW(build_graph("inception", {{"depth", 3}}), InvalidArgument);
  EXPECT_THROW(build_graph("inception", {{"batch_size", 0}}), InvalidArgument);
  EXPECT_THROW(build_graph("inception", {{"image_size", 32}}), InvalidArgument);
  EXPECT_NO_THROW(build_graph("inception", {{"batch_size", 1}, {"image_size", 75}, {"num_classes", 10}}));
}

}  // namespace
}  // namespace goenv
