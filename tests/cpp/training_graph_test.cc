#include "datasets/training_graph.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/error.h"

namespace goenv {
namespace {

NodeId find(const Graph& g, const std::string& name) {
  for (NodeId v = 0; v < g.num_nodes(); ++v)
    if (g.names()[v] == name) return v;
  ADD_FAILURE() << "no node named " << name;
  return kNone;
}

bool has_edge(const Graph& g, NodeId src, NodeId dst) {
  for (int e = g.out_offsets()[src]; e < g.out_offsets()[src + 1]; ++e)
    if (g.edge_dst()[e] == dst) return true;
  return false;
}

int count_op(const Graph& g, const char* op) {
  int n = 0;
  for (int t : g.op_type()) n += t == op_type_id(op);
  return n;
}

// input(8, 16) -> dense 32 -> relu -> dense 10 -> softmax cross-entropy.
GraphPtr mlp() {
  TrainingGraphBuilder t("mlp");
  Tensor x = t.input({8, 16});
  x = t.relu(t.dense(x, 32, 0), 0);
  t.softmax_cross_entropy(t.dense(x, 10, 1), 1);
  return std::move(t).finish();
}

TEST(TrainingGraph, MlpNodeAndEdgeCounts) {
  GraphPtr g = mlp();
  // Forward: input, matmul, bias_add, relu, matmul, bias_add, labels, loss (8);
  // 4 variables, 4 updates; backward: loss grad, 2 bias grads, relu grad,
  // 2 weight grads, 1 input grad (the first matmul's input is data) (7).
  EXPECT_EQ(g->num_nodes(), 23);
  EXPECT_EQ(g->num_edges(), 32);
  std::map<TrainingPhase, int> phases;
  for (const auto& name : g->names()) ++phases[training_phase(name)];
  EXPECT_EQ(phases[TrainingPhase::kForward], 8);
  EXPECT_EQ(phases[TrainingPhase::kVariable], 4);
  EXPECT_EQ(phases[TrainingPhase::kUpdate], 4);
  EXPECT_EQ(phases[TrainingPhase::kBackward], 7);
  EXPECT_EQ(count_op(*g, "MatMul"), 5);
  EXPECT_EQ(count_op(*g, "AddN"), 0);
  EXPECT_EQ(g->total_param_bytes(), 4 * (16 * 32 + 32 + 32 * 10 + 10));
}

TEST(TrainingGraph, MatMulFlopsAndBytes) {
  GraphPtr g = mlp();
  const NodeId matmul = find(*g, "fwd/dense");
  EXPECT_EQ(g->op_type()[matmul], op_type_id("MatMul"));
  EXPECT_DOUBLE_EQ(g->flops()[matmul], 2.0 * 8 * 16 * 32);
  EXPECT_EQ(g->output_bytes()[matmul], 4 * 8 * 32);
  EXPECT_EQ(g->shapes()[matmul], (Shape{8, 32}));
  EXPECT_DOUBLE_EQ(g->flops()[find(*g, "bwd/dense/weight_grad")], 2.0 * 8 * 16 * 32);
  EXPECT_DOUBLE_EQ(g->flops()[find(*g, "bwd/dense_1/input_grad")], 2.0 * 8 * 32 * 10);
  // Variables hold the weights; their outputs add no bytes, their edges carry them.
  const NodeId w = find(*g, "var/dense/weights");
  EXPECT_EQ(g->param_bytes()[w], 4 * 16 * 32);
  EXPECT_EQ(g->output_bytes()[w], 0);
  for (int e = g->out_offsets()[w]; e < g->out_offsets()[w + 1]; ++e) EXPECT_EQ(g->edge_bytes()[e], 4 * 16 * 32);
}

TEST(TrainingGraph, VariableSharesColocationOnlyWithItsUpdate) {
  GraphPtr g = mlp();
  EXPECT_EQ(g->num_colocation_groups(), 4);
  for (const char* weight : {"dense/weights", "dense/bias_add/biases", "dense_1/weights", "dense_1/bias_add/biases"}) {
    const NodeId var = find(*g, std::string("var/") + weight);
    const NodeId update = find(*g, std::string("update/") + weight);
    ASSERT_NE(g->colocation()[var], kNone);
    EXPECT_EQ(g->colocation()[var], g->colocation()[update]);
    EXPECT_EQ(g->op_type()[update], op_type_id("ApplyGradient"));
    EXPECT_TRUE(has_edge(*g, var, update));
    int members = 0;
    for (NodeId v = 0; v < g->num_nodes(); ++v) members += g->colocation()[v] == g->colocation()[var];
    EXPECT_EQ(members, 2) << weight;
  }
}

TEST(TrainingGraph, BackwardReadsForwardActivationsAndStartsAtLoss) {
  GraphPtr g = mlp();
  const NodeId loss_grad = find(*g, "bwd/loss/grad");
  EXPECT_TRUE(has_edge(*g, find(*g, "fwd/loss"), loss_grad));
  EXPECT_TRUE(has_edge(*g, find(*g, "fwd/dense_1/bias_add"), loss_grad));  // logits
  // BiasAdd passes the gradient straight through to the matmul's backward ops.
  EXPECT_TRUE(has_edge(*g, loss_grad, find(*g, "bwd/dense_1/input_grad")));
  EXPECT_TRUE(has_edge(*g, loss_grad, find(*g, "bwd/dense_1/bias_add/bias_grad")));
  EXPECT_TRUE(has_edge(*g, find(*g, "fwd/relu"), find(*g, "bwd/dense_1/weight_grad")));
  EXPECT_TRUE(has_edge(*g, find(*g, "var/dense_1/weights"), find(*g, "bwd/dense_1/input_grad")));
  EXPECT_TRUE(has_edge(*g, find(*g, "fwd/relu"), find(*g, "bwd/relu/grad")));
  EXPECT_TRUE(has_edge(*g, find(*g, "bwd/dense_1/input_grad"), find(*g, "bwd/relu/grad")));
  EXPECT_TRUE(has_edge(*g, find(*g, "fwd/input"), find(*g, "bwd/dense/weight_grad")));
  EXPECT_TRUE(has_edge(*g, find(*g, "bwd/dense/weight_grad"), find(*g, "update/dense/weights")));
  // Groups: forward, backward, variables and updates carry their layer's group.
  EXPECT_EQ(g->group()[find(*g, "bwd/dense/weight_grad")], g->group()[find(*g, "fwd/dense")]);
  EXPECT_EQ(g->group()[find(*g, "update/dense/weights")], g->group()[find(*g, "fwd/dense")]);
  EXPECT_NE(g->group()[find(*g, "fwd/dense")], g->group()[find(*g, "fwd/dense_1")]);
}

TEST(TrainingGraph, FanOutGradientsAreSummedAndSharedWeightsUpdatedOnce) {
  TrainingGraphBuilder t("fan-out");
  Tensor x = t.input({4, 8});
  Weight w = t.variable("shared", {8, 8}, 0);
  Tensor h = t.matmul(t.matmul(x, w, 0), w, 0);  // the same weight twice
  Tensor y = t.add(t.relu(h, 0), t.relu(h, 0), 0);
  t.softmax_cross_entropy(y, 0);
  GraphPtr g = std::move(t).finish();
  const NodeId sum = find(*g, "bwd/matmul_1/grad_sum");
  EXPECT_EQ(g->op_type()[sum], op_type_id("AddN"));
  EXPECT_TRUE(has_edge(*g, find(*g, "bwd/relu/grad"), sum));
  EXPECT_TRUE(has_edge(*g, find(*g, "bwd/relu_1/grad"), sum));
  EXPECT_DOUBLE_EQ(g->flops()[sum], 4 * 8);
  EXPECT_EQ(count_op(*g, "ApplyGradient"), 1);
  EXPECT_EQ(count_op(*g, "AddN"), 2);  // the activation and the shared weight
  EXPECT_TRUE(has_edge(*g, find(*g, "bwd/shared/grad_sum"), find(*g, "update/shared")));
}

TEST(TrainingGraph, ConvShapesAndErrors) {
  TrainingGraphBuilder t("conv");
  Tensor x = t.input({2, 299, 299, 3});
  Tensor y = t.conv2d(x, 32, 3, 3, 2, "valid", 0);
  EXPECT_EQ(y.shape, (Shape{2, 149, 149, 32}));
  EXPECT_EQ(t.conv2d(y, 8, 1, 7, 2, "same", 0).shape, (Shape{2, 75, 75, 8}));
  EXPECT_EQ(t.maxpool(y, 3, 2, "valid", 0).shape, (Shape{2, 74, 74, 32}));
  EXPECT_THROW(t.conv2d(x, 8, 3, 3, 1, "full", 0), InvalidArgument);
  EXPECT_THROW(t.conv2d(x, 8, 300, 3, 1, "valid", 0), InvalidArgument);
  EXPECT_THROW(t.add(x, y, 0), InvalidArgument);
  EXPECT_THROW(t.relu(Tensor{12345, {1}}, 0), InvalidArgument);
  EXPECT_THROW(std::move(t).finish(), InvalidArgument);  // no loss
}

}  // namespace
}  // namespace goenv
