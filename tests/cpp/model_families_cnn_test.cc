// The ResNet-50, AmoebaNet and transformer training graphs against their papers:
// size, structure, forward multiply-accumulates (MACs; a graph's flops count a MAC
// as 2 FLOPs) and parameter counts.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "datasets/registry.h"
#include "datasets/training_graph.h"

namespace goenv {
namespace {

struct Family {
  const char* name;
  const char* cluster;
  int groups;
  int min_nodes, max_nodes;
  int min_edges, max_edges;
  double params;  // published; Transformer-XL's by hand (its published check is separate)
};

// Node counts follow from the DSL: a conv/matmul layer is its forward op, Variable,
// ApplyGradient and 2 backward ops (5); batchnorm/layer norm with gamma and beta 6; an
// elementwise op 2; AddN where a tensor has several readers. Edge ranges are the
// counts at the defaults (in brackets) within about 5%.
const Family kFamilies[] = {
    // 53 conv+bn units x 11 - 1 (no input grad for the first conv) + 49 ReLUs x 2
    // + 16 Adds + 16 AddNs (each block input feeds the shortcut and the branch)
    // + stem pool, input, avgpool, reshape, dense, labels, loss (19) = 731.
    {"resnet50", "2xgpu-nvlink", 18, 700, 760, 1180, 1300 /*1242*/, 25.6e6},
    // Cells of 150-250 nodes (one separable op alone is 2 x 18); 4452 at N=6.
    {"amoebanet", "4xgpu-nvlink", 24, 4230, 4680, 7170, 7920 /*7546*/, 86.7e6},
    // 94 nodes per layer (7 MatMuls, 3 BatchMatMuls, ...) + 25 for embedding and softmax.
    // Parameters: tied table and softmax bias 32000 x 513, 2 x 512 position biases,
    // 3.41 M per layer (5 d^2 projections, FFN 2 x 512 x 2048 + biases, 2 LayerNorms).
    {"transformer-xl-2", "2xgpu-nvlink", 4, 203, 223, 308, 340 /*324*/, 16.418e6 + 2 * 3.412e6},
    {"transformer-xl-4", "4xgpu-nvlink", 6, 381, 421, 587, 649 /*618*/, 16.418e6 + 4 * 3.412e6},
    {"transformer-xl-8", "8xgpu-nvlink", 10, 738, 816, 1146, 1266 /*1206*/, 16.418e6 + 8 * 3.412e6},
    // 88 nodes per layer + 82 for embeddings and the two pre-training heads = 1138.
    {"bert-base", "4xgpu-nvlink", 14, 1081, 1195, 1642, 1814 /*1728*/, 110e6},
    // 89 per layer (one more AddN than BERT: pre-LN) + 26 = 1094.
    {"gpt2-small", "4xgpu-nvlink", 14, 1039, 1149, 1576, 1742 /*1659*/, 124e6},
};

const GraphPtr& default_graph(const std::string& name) {
  static std::map<std::string, GraphPtr> cache;
  GraphPtr& g = cache[name];
  if (!g) g = build_graph(name);
  return g;
}

int count_op(const Graph& g, const char* op) {
  int n = 0;
  for (int t : g.op_type()) n += t == op_type_id(op);
  return n;
}

NodeId find(const Graph& g, const std::string& name) {
  for (NodeId v = 0; v < g.num_nodes(); ++v)
    if (g.names()[v] == name) return v;
  ADD_FAILURE() << "no node named " << name;
  return kNone;
}

std::vector<NodeId> consumers(const Graph& g, NodeId v) {
  std::vector<NodeId> out;
  for (int e = g.out_offsets()[v]; e < g.out_offsets()[v + 1]; ++e) out.push_back(static_cast<NodeId>(g.edge_dst()[e]));
  return out;
}

// Forward MACs of the given op types.
double forward_macs(const Graph& g, const std::vector<const char*>& ops) {
  double flops = 0;
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    if (training_phase(g.names()[v]) != TrainingPhase::kForward) continue;
    for (const char* op : ops) flops += g.op_type()[v] == op_type_id(op) ? g.flops()[v] : 0;
  }
  return flops / 2;
}

double params(const Graph& g) { return static_cast<double>(g.total_param_bytes()) / kBytesPerElement; }

class ModelFamilies : public ::testing::TestWithParam<Family> {};

// How fast each builds is goenv_bench's BM_BuildGraph (a timed test fails under load).
TEST_P(ModelFamilies, RegisteredAndBuilds) {
  const Family& f = GetParam();
  const GraphFamily& family = graph_family(f.name);
  EXPECT_EQ(family.default_cluster, f.cluster);
  EXPECT_TRUE(family.defaults.count("batch_size"));
  const GraphPtr g = build_graph(f.name);
  EXPECT_EQ(g->name(), f.name);
}

TEST_P(ModelFamilies, SizeAndStructure) {
  const Family& f = GetParam();
  const Graph& g = *default_graph(f.name);  // built, so a validated DAG
  EXPECT_EQ(static_cast<int>(g.topological_order().size()), g.num_nodes());
  EXPECT_GE(g.num_nodes(), f.min_nodes);
  EXPECT_LE(g.num_nodes(), f.max_nodes);
  EXPECT_GE(g.num_edges(), f.min_edges);
  EXPECT_LE(g.num_edges(), f.max_edges);
  EXPECT_EQ(g.num_groups(), f.groups);
  std::map<TrainingPhase, int> phases;
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    EXPECT_NE(g.group()[v], kNone) << g.names()[v];
    ++phases[training_phase(g.names()[v])];
  }
  EXPECT_EQ(phases[TrainingPhase::kOther], 0);
  EXPECT_EQ(phases[TrainingPhase::kVariable], phases[TrainingPhase::kUpdate]);
  EXPECT_GT(phases[TrainingPhase::kBackward], phases[TrainingPhase::kForward]);
}

TEST_P(ModelFamilies, ParameterCountMatchesPublished) {
  const Family& f = GetParam();
  EXPECT_NEAR(params(*default_graph(f.name)), f.params, 0.1 * f.params);
}

TEST_P(ModelFamilies, EveryVariableColocatesWithExactlyItsUpdate) {
  const Graph& g = *default_graph(GetParam().name);
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

// Every forward op scales with the batch except Transformer-XL's projection of the
// relative position encoding, which is shared by the batch.
double per_example_forward_flops(const Graph& g) {
  double flops = 0;
  for (NodeId v = 0; v < g.num_nodes(); ++v)
    if (training_phase(g.names()[v]) == TrainingPhase::kForward &&
        g.names()[v].find("/attention/position/") == std::string::npos)
      flops += g.flops()[v];
  return flops;
}

TEST_P(ModelFamilies, BatchSizeScalesForwardFlopsLinearly) {
  const Family& f = GetParam();
  const double batch = graph_family(f.name).defaults.at("batch_size");
  const GraphPtr half = build_graph(f.name, {{"batch_size", batch / 2}});
  EXPECT_NEAR(per_example_forward_flops(*default_graph(f.name)) / per_example_forward_flops(*half), 2.0, 1e-9);
  EXPECT_EQ(half->num_nodes(), default_graph(f.name)->num_nodes());
  EXPECT_EQ(half->total_param_bytes(), default_graph(f.name)->total_param_bytes());
}

TEST_P(ModelFamilies, BadParametersRaise) {
  const Family& f = GetParam();
  EXPECT_THROW(build_graph(f.name, {{"depth", 3}}), InvalidArgument);
  EXPECT_THROW(build_graph(f.name, {{"batch_size", 0}}), InvalidArgument);
  EXPECT_THROW(build_graph(f.name, {{"batch_size", 2.5}}), InvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(ModelFamilies, ModelFamilies, ::testing::ValuesIn(kFamilies),
                         [](const ::testing::TestParamInfo<Family>& param) {
                           std::string name = param.param.name;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

// He et al. (2016) report 3.8 G multiply-adds for ResNet-50 v1; v1.5's strided 3x3
// conv raises that to about 4.1 G (torchvision's resnet50: 4.09 GMACs, 25.56 M params).
TEST(ModelFamiliesResNet50, MacsPerImageMatchPublished) {
  const Graph& g = *default_graph("resnet50");
  EXPECT_EQ(count_op(g, "Conv2D"), 53);  // 1 + 16 x 3 + 4 projection shortcuts
  EXPECT_EQ(count_op(g, "Conv2DBackpropInput"), 52);
  EXPECT_EQ(count_op(g, "Add"), 16);
  const double macs = forward_macs(g, {"Conv2D", "MatMul"}) / 64;
  EXPECT_NEAR(macs, 4.1e9, 0.2 * 4.1e9);
}

// Real et al. (2019), Tables 2 and 3: AmoebaNet-A (N=6, F=190) at 331x331 has 86.7 M
// parameters and 23.1 G multiply-adds; the mobile AmoebaNet-A (N=4, F=50) at 224x224
// 5.1 M and 555 M.
TEST(ModelFamiliesAmoebaNet, MacsAndParametersMatchPublished) {
  const auto macs = [](const Graph& g) { return forward_macs(g, {"Conv2D", "DepthwiseConv2D", "MatMul"}); };
  const GraphPtr large = build_graph("amoebanet", {{"batch_size", 1}, {"image_size", 331}});
  EXPECT_NEAR(macs(*large), 23.1e9, 0.2 * 23.1e9);
  EXPECT_NEAR(params(*large), 86.7e6, 0.1 * 86.7e6);
  const GraphPtr mobile = build_graph("amoebanet", {{"batch_size", 1}, {"num_cells", 4}, {"filters", 50}});
  EXPECT_NEAR(macs(*mobile), 555e6, 0.2 * 555e6);
  EXPECT_NEAR(params(*mobile), 5.1e6, 0.1 * 5.1e6);
}

TEST(ModelFamiliesAmoebaNet, CellStructure) {
  const Graph& g = *default_graph("amoebanet");
  // 4 separable ops (2 depthwise+pointwise layers each) per cell, normal or
  // reduction; 18 normal + 2 stem + 2 reduction cells.
  EXPECT_EQ(count_op(g, "DepthwiseConv2D"), 2 * 4 * 22);
  // Every cell concatenates its unused states; 4 factorized reductions concatenate
  // their two paths (stem cell 1 and the first cell of each stack).
  EXPECT_EQ(count_op(g, "Concat"), 22 + 4);
  EXPECT_EQ(count_op(g, "Pad"), 4);
  for (const char* cell : {"cell_stem_0", "cell_stem_1", "reduction_cell_0", "cell_0", "cell_17"}) {
    const NodeId out = find(g, std::string("fwd/") + cell + "/concat");
    EXPECT_EQ(g.group()[out], g.group()[find(g, std::string("fwd/") + cell + "/depthwise_conv2d")]) << cell;
  }
  // 224 -> 111 (stem conv) -> 56 -> 28 (stem cells) -> 14 -> 7; a normal cell outputs 4F, a reduction cell 5F.
  EXPECT_EQ(g.shapes()[find(g, "fwd/cell_5/concat")], (Shape{64, 28, 28, 4 * 190}));
  EXPECT_EQ(g.shapes()[find(g, "fwd/reduction_cell_1/concat")], (Shape{64, 7, 7, 5 * 4 * 190}));
  EXPECT_THROW(build_graph("amoebanet", {{"filters", 4}}), InvalidArgument);
}

// Per-layer forward ops of the shared layer at their real granularity.
std::map<std::string, int> forward_ops_of(const Graph& g, const std::string& layer) {
  std::map<std::string, int> ops;
  for (NodeId v = 0; v < g.num_nodes(); ++v)
    if (g.names()[v].rfind("fwd/" + layer + "/", 0) == 0) ++ops[std::string(op_type_info(g.op_type()[v]).name)];
  return ops;
}

// The shared (vocab, d) table is read by the embedding lookup and the output MatMul;
// its two gradients are summed into one update.
void expect_tied(const Graph& g, const std::string& variable) {
  const NodeId var = find(g, "var/" + variable);
  std::map<int, int> readers;
  for (NodeId c : consumers(g, var)) ++readers[g.op_type()[c]];
  EXPECT_EQ(readers[op_type_id("Embedding")], 1);
  EXPECT_EQ(readers[op_type_id("ApplyGradient")], 1);
  EXPECT_GE(readers[op_type_id("MatMul")], 1);  // forward logits and the backward input gradient
  const NodeId sum = find(g, "bwd/" + variable + "/grad_sum");
  EXPECT_EQ(g.op_type()[sum], op_type_id("AddN"));
  EXPECT_EQ(consumers(g, sum), std::vector<NodeId>{find(g, "update/" + variable)});
}

// Devlin et al. (2019): BERT-base has 110 M parameters. MobileBERT (Sun et al., 2020,
// Table 2) puts BERT-base at 22.5 G FLOPs = 11.25 G MACs for 128 tokens; Kaplan et
// al.'s (2020) count agrees: 85 M non-embedding params x 128 tokens + attention
// 12 layers x 128^2 x 768 = 10.9 + 0.15 G. The graph adds the masked-LM head on 20
// positions (0.5 G) and counts full (unmasked) score and context products (0.3 G).
TEST(ModelFamiliesBert, MacsPerSequenceMatchPublished) {
  const Graph& g = *default_graph("bert-base");
  const double macs = forward_macs(g, {"MatMul", "BatchMatMul"}) / 32;
  EXPECT_NEAR(macs, 11.25e9, 0.2 * 11.25e9);
  const std::map<std::string, int> layer = {{"Add", 2}, {"BatchMatMul", 2}, {"BiasAdd", 6}, {"Gelu", 1},
                                            {"LayerNorm", 2}, {"MatMul", 6},  {"Softmax", 1}, {"Transpose", 4}};
  EXPECT_EQ(forward_ops_of(g, "layer_3"), layer);
  expect_tied(g, "embeddings/word_embeddings");
  EXPECT_EQ(count_op(g, "CrossEntropy"), 2);  // masked LM + next sentence
  EXPECT_THROW(build_graph("bert-base", {{"seq_len", 513}}), InvalidArgument);  // 512 positions
}

// Radford et al. (2019): GPT-2 small has 124 M parameters. Each parameter of the
// projections (and of the tied embedding, used once as the output layer) does one MAC
// per token, so its MatMuls do ~124 M MACs per token (Kaplan et al.: 2N FLOPs);
// attention's BatchMatMuls come on top.
TEST(ModelFamiliesGpt2, MatMulMacsPerTokenMatchParameters) {
  const Graph& g = *default_graph("gpt2-small");
  const double macs = forward_macs(g, {"MatMul"}) / (8 * 1024);
  EXPECT_NEAR(macs, 124e6, 0.2 * 124e6);
  std::map<std::string, int> layer = {{"Add", 2}, {"BatchMatMul", 2}, {"BiasAdd", 6}, {"Gelu", 1},
                                      {"LayerNorm", 2}, {"MatMul", 6},  {"Softmax", 1}, {"Transpose", 4}};
  EXPECT_EQ(forward_ops_of(g, "layer_11"), layer);
  // Pre-LN: the attention reads the LayerNorm of the layer input, not the input itself.
  const NodeId query = find(g, "fwd/layer_0/attention/query/dense");
  EXPECT_EQ(g.op_type()[find(g, "fwd/layer_0/layer_norm")], op_type_id("LayerNorm"));
  bool reads_norm = false;
  for (NodeId c : consumers(g, find(g, "fwd/layer_0/layer_norm"))) reads_norm |= c == query;
  EXPECT_TRUE(reads_norm);
  expect_tied(g, "embedding/wte");
  EXPECT_EQ(count_op(g, "Variable"), 2 + 12 * 16 + 2);  // wte, wpe; 16 per layer; final LayerNorm
  EXPECT_THROW(build_graph("gpt2-small", {{"seq_len", 1025}}), InvalidArgument);  // 1024 positions
}

// No published MAC count fits this configuration, so the reference is counted by hand
// from the paper's equations: per layer, the query projection on the L segment
// tokens, key and value projections on memory ++ segment (M + L), the projection of
// the M + L position encodings (once per batch), the output projection and the FFN;
// three attention products of L x (M + L) per head (content, position, context);
// then the softmax layer over the vocabulary.
TEST(ModelFamiliesTransformerXl, MacsMatchHandCount) {
  const double b = 32, l = 128, m = 128, d = 512, inner = 2048, vocab = 32000;
  for (int layers : {2, 4, 8}) {
    const Graph& g = *default_graph("transformer-xl-" + std::to_string(layers));
    const double per_layer = b * l * d * d + 2 * b * (m + l) * d * d + (m + l) * d * d + b * l * d * d +
                             2 * b * l * d * inner + 3 * b * l * (m + l) * d;
    EXPECT_NEAR(forward_macs(g, {"MatMul", "BatchMatMul"}), layers * per_layer + b * l * d * vocab,
                1e-9 * (layers * per_layer + b * l * d * vocab))
        << layers;
    EXPECT_EQ(count_op(g, "Input"), 2 + layers);  // tokens, labels, one memory per layer
    EXPECT_EQ(g.shapes()[find(g, "fwd/layer_1/memory")], (Shape{32, 128, 512}));
    // The next segment's memory is an output: nothing reads it and it gets no gradient.
    EXPECT_TRUE(consumers(g, find(g, "fwd/layer_1/new_memory")).empty());
    expect_tied(g, "embedding/table");
  }
  const std::map<std::string, int> layer = {{"Add", 3},    {"BatchMatMul", 3}, {"BiasAdd", 4},  {"Concat", 1},
                                            {"Input", 1},  {"LayerNorm", 2},   {"MatMul", 7},   {"Relu", 1},
                                            {"Slice", 2},  {"Softmax", 1},     {"Transpose", 5}};
  EXPECT_EQ(forward_ops_of(*default_graph("transformer-xl-2"), "layer_0"), layer);
  EXPECT_THROW(build_graph("transformer-xl-2", {{"num_heads", 7}}), InvalidArgument);  // 512 % 7 != 0
  EXPECT_NO_THROW(build_graph("transformer-xl-2", {{"memory_length", 0}}));
}

// Dai et al. (2019): the 12-layer enwik8 base model (d 512, 8 heads, d_inner 2048,
// 204 characters) has 41 M parameters. Layers here differ only in count, so a layer's
// parameters are (P(8 layers) - P(4 layers)) / 4.
TEST(ModelFamiliesTransformerXl, ParametersPerLayerMatchPublished) {
  const GraphParams enwik8 = {{"vocab_size", 204}};
  const double p4 = params(*build_graph("transformer-xl-4", enwik8));
  const double p8 = params(*build_graph("transformer-xl-8", enwik8));
  const double twelve_layers = p4 + 8 * (p8 - p4) / 4;
  EXPECT_NEAR(twelve_layers, 41e6, 0.1 * 41e6);
}

}  // namespace
}  // namespace goenv
