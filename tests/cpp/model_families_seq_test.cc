// Sequence model families (rnnlm-*, gnmt-*, wavenet-*) and the seeded random families.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>

#include "core/error.h"
#include "datasets/registry.h"
#include "datasets/training_graph.h"

namespace goenv {
namespace {

int count_forward(const Graph& g, const char* op) {
  int n = 0;
  for (NodeId v = 0; v < g.num_nodes(); ++v)
    n += g.op_type()[v] == op_type_id(op) && training_phase(g.names()[v]) == TrainingPhase::kForward;
  return n;
}

int count_op(const Graph& g, const char* op) {
  int n = 0;
  for (int t : g.op_type()) n += t == op_type_id(op);
  return n;
}

double forward_flops(const Graph& g) {
  double flops = 0;
  for (NodeId v = 0; v < g.num_nodes(); ++v)
    if (training_phase(g.names()[v]) == TrainingPhase::kForward) flops += g.flops()[v];
  return flops;
}

double params(const Graph& g) { return static_cast<double>(g.total_param_bytes()) / 4; }

bool same_graph(const Graph& a, const Graph& b) {
  return a.names() == b.names() && a.op_type() == b.op_type() && a.flops() == b.flops() &&
         a.output_bytes() == b.output_bytes() && a.param_bytes() == b.param_bytes() && a.edge_src() == b.edge_src() &&
         a.edge_dst() == b.edge_dst() && a.edge_bytes() == b.edge_bytes();
}

void expect_variables_colocated_only_with_updates(const Graph& g) {
  std::map<int, std::map<int, int>> ops_by_colocation;  // colocation -> op type -> count
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    const bool is_state = g.op_type()[v] == op_type_id("Variable") || g.op_type()[v] == op_type_id("ApplyGradient");
    EXPECT_EQ(g.colocation()[v] != kNone, is_state) << g.names()[v];
    if (g.colocation()[v] != kNone) ++ops_by_colocation[g.colocation()[v]][g.op_type()[v]];
  }
  EXPECT_EQ(static_cast<int>(ops_by_colocation.size()), count_op(g, "Variable"));
  for (const auto& [id, ops] : ops_by_colocation) {
    ASSERT_EQ(ops.size(), 2u) << g.name() << ": colocation " << id;
    EXPECT_EQ(ops.at(op_type_id("Variable")), 1);
    EXPECT_EQ(ops.at(op_type_id("ApplyGradient")), 1);
  }
}

void expect_batch_scales_forward_flops(const std::string& name, double batch) {
  const double base = forward_flops(*build_graph(name));
  const GraphPtr doubled = build_graph(name, {{"batch_size", 2 * batch}});
  EXPECT_NEAR(forward_flops(*doubled) / base, 2.0, 1e-9) << name;
  EXPECT_EQ(doubled->num_nodes(), build_graph(name)->num_nodes()) << name;
}

std::string family(const char* stem, int n) { return std::string(stem) + "-" + std::to_string(n); }

// Parameters of an LSTM layer reading `in` features: kernel (in + h, 4h) and bias 4h.
double lstm_params(double in, double h) { return 4 * h * (in + h) + 4 * h; }

// ---- rnnlm: embedding, L LSTM layers, per-step softmax; 64 x 40 steps, h 2048, vocab 32768 ----

TEST(Rnnlm, RegisteredWithOneGpuPerLayer) {
  for (int layers : {2, 4, 8}) {
    const GraphFamily& f = graph_family(family("rnnlm", layers));
    EXPECT_EQ(f.default_cluster, std::to_string(layers) + "xgpu-nvlink");
    EXPECT_EQ(f.defaults.size(), 4u);
    for (const char* key : {"batch_size", "seq_len", "hidden", "vocab"}) EXPECT_TRUE(f.defaults.count(key)) << key;
  }
}

TEST(Rnnlm, StructureCountsAndParams) {
  const int steps = 40;
  const double h = 2048, vocab = 32768;
  for (int layers : {2, 4, 8}) {
    SCOPED_TRACE(layers);
    const GraphPtr g = build_graph(family("rnnlm", layers));
    // Per layer and step: 11 forward ops (Concat, MatMul, 4 gates, 2 Mul, Add, Tanh, Mul) and ~13 backward.
    EXPECT_GE(g->num_nodes(), 24 * layers * steps);
    EXPECT_LE(g->num_nodes(), 26 * layers * steps + 10 * steps + 100);
    EXPECT_GE(g->num_edges(), 2 * g->num_nodes());
    EXPECT_LE(g->num_edges(), 3 * g->num_nodes());
    EXPECT_EQ(count_forward(*g, "MatMul"), (layers + 1) * steps);  // gates per layer + the projection
    EXPECT_EQ(count_forward(*g, "Sigmoid"), 3 * layers * steps);
    EXPECT_EQ(count_forward(*g, "Tanh"), 2 * layers * steps);
    EXPECT_EQ(count_forward(*g, "Embedding"), steps);
    EXPECT_EQ(count_op(*g, "CrossEntropy"), steps);
    EXPECT_EQ(count_op(*g, "Variable"), 2 * layers + 3);
    EXPECT_EQ(count_op(*g, "ApplyGradient"), 2 * layers + 3);
    EXPECT_EQ(g->num_groups(), layers + 2);
    EXPECT_DOUBLE_EQ(params(*g), vocab * h + layers * lstm_params(h, h) + h * vocab + vocab);
    expect_variables_colocated_only_with_updates(*g);
  }
}

TEST(Rnnlm, GateMatMulFlops) {
  const GraphPtr g = build_graph("rnnlm-2", {{"batch_size", 8}, {"hidden", 16}, {"seq_len", 3}, {"vocab", 50}});
  for (NodeId v = 0; v < g->num_nodes(); ++v)
    if (g->names()[v] == "fwd/lstm_1/t2/matmul") {
      EXPECT_DOUBLE_EQ(g->flops()[v], 2.0 * 4 * 16 * (16 + 16) * 8 + 4 * 16 * 8);  // + the bias
      return;
    }
  ADD_FAILURE() << "no fwd/lstm_1/t2/matmul";
}

TEST(Rnnlm, BatchSizeScalesForwardFlopsAndBadParamsRaise) {
  expect_batch_scales_forward_flops("rnnlm-2", 64);
  EXPECT_THROW(build_graph("rnnlm-4", {{"layers", 3}}), InvalidArgument);
  EXPECT_THROW(build_graph("rnnlm-4", {{"seq_len", 0}}), InvalidArgument);
  EXPECT_THROW(build_graph("rnnlm-4", {{"hidden", 1.5}}), InvalidArgument);
}

// ---- gnmt: bidirectional + residual encoder, attention, decoder; 128 x 180 steps, h 1024, vocab 32000 ----

double gnmt_params(int layers) {
  const double h = 1024, vocab = 32000;
  double p = 2 * vocab * h + h * vocab + vocab;  // two embeddings, the projection
  p += 2 * lstm_params(h, h) + lstm_params(2 * h, h) + (layers - 2) * lstm_params(h, h);  // encoder
  p += h * h;                                                                           // attention keys
  p += layers * lstm_params(2 * h, h);  // decoder layers read [x, context]
  return p;
}

TEST(Gnmt, StructureCountsAndParams) {
  const int steps = 180;
  for (int layers : {2, 4, 8}) {
    SCOPED_TRACE(layers);
    const std::string name = family("gnmt", layers);
    EXPECT_EQ(graph_family(name).default_cluster, std::to_string(layers) + "xgpu-nvlink");
    const GraphPtr g = build_graph(name);
    const int cells = 2 * layers + 1;  // the first encoder layer runs both ways
    EXPECT_GE(g->num_nodes(), 24 * cells * steps);
    EXPECT_LE(g->num_nodes(), 28 * cells * steps + 30 * steps);
    EXPECT_GE(g->num_edges(), 2 * g->num_nodes());
    EXPECT_LE(g->num_edges(), 3 * g->num_nodes());
    EXPECT_EQ(count_forward(*g, "Sigmoid"), 3 * cells * steps);
    EXPECT_EQ(count_forward(*g, "Softmax"), steps);          // attention
    EXPECT_EQ(count_forward(*g, "BatchMatMul"), 2 * steps);  // scores and contexts
    EXPECT_EQ(count_op(*g, "CrossEntropy"), steps);
    // c = c f + i j in every cell, plus the residual connections from the third layer on, both sides.
    EXPECT_EQ(count_forward(*g, "Add"), cells * steps + 2 * (layers - 2) * steps);
    EXPECT_EQ(g->num_groups(), 2 * layers + 4);
    EXPECT_DOUBLE_EQ(params(*g), gnmt_params(layers));
    expect_variables_colocated_only_with_updates(*g);
  }
}

// How fast it builds is goenv_bench's BM_BuildGraph (a timed test fails under load).
TEST(Gnmt, Gnmt8IsTheLargestGraph) {
  const GraphPtr g = build_graph("gnmt-8");
  EXPECT_GE(g->num_nodes(), 80000);
  for (const std::string& name : graph_family_names()) {
    if (name != "gnmt-8") {
      EXPECT_LT(build_graph(name)->num_nodes(), g->num_nodes()) << name;
    }
  }
}

TEST(Gnmt, BatchSizeScalesForwardFlopsAndBadParamsRaise) {
  expect_batch_scales_forward_flops("gnmt-2", 128);
  EXPECT_THROW(build_graph("gnmt-2", {{"heads", 8}}), InvalidArgument);
  EXPECT_THROW(build_graph("gnmt-2", {{"vocab", 1}}), InvalidArgument);
  EXPECT_NO_THROW(build_graph("gnmt-4", {{"seq_len", 1}, {"batch_size", 1}, {"hidden", 8}, {"vocab", 16}}));
}

// ---- wavenet: stacks x 9 dilated layers; batch 4 x 16000 samples, 256 channels ----

TEST(Wavenet, StructureCountsAndParams) {
  const double c = 256, levels = 256;
  for (int stacks : {2, 4}) {
    SCOPED_TRACE(stacks);
    const std::string name = family("wavenet", stacks);
    EXPECT_EQ(graph_family(name).default_cluster, std::to_string(stacks) + "xgpu-nvlink");
    const GraphPtr g = build_graph(name);
    const int layers = 9 * stacks;
    // Per layer: 8 forward ops, 4 variables, 4 updates, 13 backward ops (4 convs x 2, 3 gate grads, 2 AddN).
    EXPECT_GE(g->num_nodes(), 28 * layers);
    EXPECT_LE(g->num_nodes(), 30 * layers + 40);
    EXPECT_GE(g->num_edges(), g->num_nodes());
    EXPECT_LE(g->num_edges(), 2 * g->num_nodes());
    // 4 per layer but the last (no residual conv: nothing reads it), the input conv, two output 1x1 convs.
    const int convs = 4 * layers - 1 + 3;
    EXPECT_EQ(count_op(*g, "Conv1D"), convs);
    EXPECT_EQ(count_op(*g, "Conv2DBackpropFilter"), convs);
    EXPECT_EQ(count_op(*g, "Conv2DBackpropInput"), convs - 1);  // none for the input conv: it reads data
    EXPECT_EQ(count_forward(*g, "Tanh"), layers);
    EXPECT_EQ(count_forward(*g, "Sigmoid"), layers);
    EXPECT_EQ(count_forward(*g, "AddN"), 1);  // the skip sum
    EXPECT_EQ(g->num_groups(), layers + 2);
    // Input causal conv (kernel 2); per layer 2 dilated convs (kernel 2) and 2 1x1 convs, less the last residual
    // conv; two output 1x1 convs.
    const double per_layer = 2 * 2 * c * c + 2 * c * c;
    EXPECT_DOUBLE_EQ(params(*g), 2 * levels * c + layers * per_layer - c * c + (c * c + c * levels));
    expect_variables_colocated_only_with_updates(*g);
  }
}

TEST(Wavenet, BatchSizeScalesForwardFlopsAndBadParamsRaise) {
  expect_batch_scales_forward_flops("wavenet-2", 4);
  EXPECT_THROW(build_graph("wavenet-2", {{"dilations", 10}}), InvalidArgument);
  EXPECT_THROW(build_graph("wavenet-4", {{"channels", 0}}), InvalidArgument);
}

// ---- random families ----

const char* const kRandomFamilies[] = {"random-layered", "random-series-parallel", "enas-cnn", "enas-rnn"};

TEST(RandomFamilies, SameSeedSameGraphDifferentSeedsDiffer) {
  for (const char* name : kRandomFamilies) {
    SCOPED_TRACE(name);
    const GraphPtr a = build_graph(name, {{"seed", 7}});
    EXPECT_TRUE(same_graph(*a, *build_graph(name, {{"seed", 7}})));
    EXPECT_FALSE(same_graph(*a, *build_graph(name, {{"seed", 8}})));
    EXPECT_TRUE(same_graph(*build_graph(name), *build_graph(name, {{"seed", 0}})));
  }
}

TEST(RandomFamilies, AlwaysADagOver50Seeds) {
  for (const char* name : kRandomFamilies)
    for (int seed = 0; seed < 50; ++seed) {
      const GraphPtr g = build_graph(name, {{"seed", seed}});  // built = validated acyclic
      ASSERT_EQ(static_cast<int>(g->topological_order().size()), g->num_nodes()) << name << " seed " << seed;
      ASSERT_GT(g->num_edges(), 0);
      // Training graphs: no dead weights (every Variable is on a path to the loss, so it gets an update).
      ASSERT_EQ(count_op(*g, "Variable"), count_op(*g, "ApplyGradient")) << name << " seed " << seed;
    }
}

TEST(RandomFamilies, LayeredSizesFollowParams) {
  for (auto [layers, width] : {std::pair{1, 1}, {5, 3}, {20, 10}, {50, 40}}) {
    const GraphPtr g = build_graph("random-layered", {{"seed", 3}, {"num_layers", layers}, {"width", width}});
    EXPECT_EQ(g->num_nodes(), layers * width);
    EXPECT_EQ(g->num_groups(), layers);
    for (NodeId v = width; v < g->num_nodes(); ++v)  // every node past the first layer has an input
      EXPECT_GT(g->in_offsets()[v + 1] - g->in_offsets()[v], 0);
  }
  const GraphParams dense = {{"num_layers", 10}, {"width", 20}, {"edge_probability", 1}};
  EXPECT_GE(build_graph("random-layered", dense)->num_edges(), 9 * 20 * 20);
  EXPECT_EQ(build_graph("random-layered", {{"edge_probability", 0}})->num_edges(), 19 * 10);
  EXPECT_THROW(build_graph("random-layered", {{"edge_probability", 1.5}}), InvalidArgument);
  EXPECT_THROW(build_graph("random-layered", {{"seed", -1}}), InvalidArgument);
}

TEST(RandomFamilies, SeriesParallelSizesFollowParams) {
  for (int n : {1, 2, 3, 4, 5, 17, 200, 5000}) {
    const GraphPtr g = build_graph("random-series-parallel", {{"seed", n}, {"num_nodes", n}});
    EXPECT_EQ(g->num_nodes(), n);
    // One source and one sink: the composition has a single entry and exit.
    int sources = 0, sinks = 0;
    for (NodeId v = 0; v < n; ++v) {
      sources += g->in_offsets()[v + 1] == g->in_offsets()[v];
      sinks += g->out_offsets()[v + 1] == g->out_offsets()[v];
    }
    EXPECT_EQ(sources, 1);
    EXPECT_EQ(sinks, 1);
  }
  EXPECT_THROW(build_graph("random-series-parallel", {{"num_nodes", 0}}), InvalidArgument);
}

TEST(RandomFamilies, EnasSizesFollowParams) {
  const auto cnn = [](int cells, int nodes) {
    return build_graph("enas-cnn", {{"seed", 1}, {"num_cells", cells}, {"nodes_per_cell", nodes}});
  };
  for (int cells : {1, 4, 8}) {
    const GraphPtr g = cnn(cells, 5);
    EXPECT_EQ(g->num_groups(), cells + 2);  // stem, cells, head
    EXPECT_EQ(count_forward(*g, "Add"), 5 * cells);
    expect_variables_colocated_only_with_updates(*g);
  }
  EXPECT_LT(cnn(4, 5)->num_nodes(), cnn(8, 5)->num_nodes());
  EXPECT_LT(cnn(4, 2)->num_nodes(), cnn(4, 7)->num_nodes());

  const auto rnn = [](int steps, int nodes) {
    return build_graph("enas-rnn", {{"seed", 1}, {"seq_len", steps}, {"nodes_per_cell", nodes}});
  };
  const int n10 = rnn(10, 8)->num_nodes(), n20 = rnn(20, 8)->num_nodes(), n30 = rnn(30, 8)->num_nodes();
  EXPECT_EQ(n30 - n20, n20 - n10);  // the same cell every step
  const GraphPtr g = rnn(10, 6);
  EXPECT_EQ(count_forward(*g, "MatMul"), 10 * (6 + 1));  // a matmul per cell node, the projection
  EXPECT_EQ(count_op(*g, "Variable"), 2 * 6 + 3);
  expect_variables_colocated_only_with_updates(*g);
  EXPECT_THROW(build_graph("enas-rnn", {{"num_cells", 3}}), InvalidArgument);
}

TEST(RandomFamilies, BatchSizeScalesForwardFlops) {
  expect_batch_scales_forward_flops("enas-cnn", 64);
  expect_batch_scales_forward_flops("enas-rnn", 64);
}

}  // namespace
}  // namespace goenv
