// Seeded random DAG families and ENAS samples (Pham et al., "Efficient Neural Architecture Search", ICML 2018).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "datasets/recurrent.h"
#include "datasets/registry.h"

namespace goenv {
namespace {

// The only randomness: a std::mt19937_64 seeded with the `seed` parameter, turned into numbers by hand (std::
// distributions differ between standard libraries), so a seed names the same graph everywhere.
class Random {
 public:
  explicit Random(const GraphParams& params) : engine_(int_param(params, "seed", 0, INT_MAX)) {}
  double unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }  // [0, 1)
  int below(int n) { return static_cast<int>(unit() * n); }                      // [0, n)
  bool chance(double p) { return unit() < p; }
  double log_uniform(double lo, double hi) { return lo * std::pow(hi / lo, unit()); }

 private:
  std::mt19937_64 engine_;
};

// ---- Plain DAGs of ops drawn from a mix like that of TF training graphs ----

struct OpMix {
  const char* op_type;
  int weight;
  bool compute;  // FLOPs drawn on their own; otherwise a few per output element
  bool params;
};
constexpr OpMix kOpMix[] = {
    {"Conv2D", 10, true, true},        {"MatMul", 8, true, true},       {"BatchMatMul", 2, true, false},
    {"DepthwiseConv2D", 2, true, true}, {"Conv1D", 1, true, true},      {"Relu", 10, false, false},
    {"Add", 8, false, false},          {"Mul", 4, false, false},        {"BiasAdd", 5, false, true},
    {"BatchNorm", 6, false, true},     {"LayerNorm", 2, false, true},   {"Tanh", 2, false, false},
    {"Sigmoid", 2, false, false},      {"Gelu", 1, false, false},       {"MaxPool", 2, false, false},
    {"AvgPool", 2, false, false},      {"Softmax", 2, false, false},    {"Concat", 4, false, false},
    {"Reshape", 4, false, false},      {"Transpose", 2, false, false},  {"Slice", 2, false, false},
    {"Sum", 1, false, false},          {"Mean", 1, false, false},       {"Gather", 1, false, false},
    {"Dropout", 1, false, false},      {"Cast", 1, false, false},
};

// Output 4 KB..64 MB; compute ops 10 MFLOP..100 GFLOP, others 1..10 FLOPs per fp32 element; weights 4 KB..64 MB.
NodeSpec random_op(Random& random, std::string name, const char* op_type = nullptr) {
  const OpMix* mix = nullptr;
  if (op_type) {
    for (const OpMix& m : kOpMix)
      if (std::string(m.op_type) == op_type) mix = &m;
  } else {
    int total = 0;
    for (const OpMix& m : kOpMix) total += m.weight;
    int r = random.below(total);
    for (const OpMix& m : kOpMix)
      if ((r -= m.weight) < 0 && !mix) mix = &m;
  }
  NodeSpec n;
  n.name = std::move(name);
  n.op_type = op_type_id(mix->op_type);
  n.output_bytes = static_cast<std::int64_t>(random.log_uniform(4e3, 64e6));
  n.flops = mix->compute ? random.log_uniform(1e7, 1e11)
                         : static_cast<double>(n.output_bytes / 4) * random.log_uniform(1, 10);
  if (mix->params) n.param_bytes = static_cast<std::int64_t>(random.log_uniform(4e3, 64e6));
  n.shape = {n.output_bytes / 4};
  return n;
}

// num_layers x width nodes (group = layer); each node reads each node of the previous layer with probability
// edge_probability (at least one), and each of the layer before with a quarter of it (skip connections).
GraphPtr build_random_layered(const GraphParams& params) {
  Random random(params);
  const int layers = int_param(params, "num_layers", 1, 1 << 16);
  const int width = int_param(params, "width", 1, 1 << 16);
  const double p = params.at("edge_probability");
  GOENV_CHECK(p >= 0 && p <= 1, InvalidArgument, "edge_probability must be in [0, 1], got " << p);
  GOENV_CHECK(static_cast<std::int64_t>(layers) * width <= kMaxNodes, InvalidArgument,
              "num_layers * width must be <= " << kMaxNodes);
  GraphBuilder b("random-layered");
  for (int l = 0; l < layers; ++l)
    for (int i = 0; i < width; ++i) {
      NodeSpec n = random_op(random, "layer_" + std::to_string(l) + "/node_" + std::to_string(i));
      n.group = l;
      const NodeId v = b.add_node(std::move(n));
      if (l == 0) continue;
      bool has_input = false;
      for (int j = 0; j < width; ++j)
        if (random.chance(p)) {
          b.add_edge((l - 1) * width + j, v);
          has_input = true;
        }
      if (!has_input) b.add_edge((l - 1) * width + random.below(width), v);
      if (l >= 2)
        for (int j = 0; j < width; ++j)
          if (random.chance(p / 4)) b.add_edge((l - 2) * width + j, v);
    }
  return std::move(b).build();
}

// Recursive series/parallel composition of exactly num_nodes ops: a part of n nodes is one op (n = 1), two
// parts in series (probability 1/2, or when n < 4), or a fork op, 2..4 parallel parts and a joining op.
class SeriesParallel {
 public:
  explicit SeriesParallel(const GraphParams& params)
      : random_(params), num_nodes_(int_param(params, "num_nodes", 1, 1 << 21)) {}

  GraphPtr build() && {
    compose(num_nodes_);
    return std::move(b_).build();
  }

 private:
  std::pair<NodeId, NodeId> compose(int n) {  // (entry, exit)
    if (n == 1) {
      const NodeId v = add();
      return {v, v};
    }
    if (n < 4 || random_.chance(0.5)) {
      const int k = 1 + random_.below(n - 1);
      const auto [entry, a] = compose(k);
      const auto [b, exit] = compose(n - k);
      b_.add_edge(a, b);
      return {entry, exit};
    }
    const NodeId fork = add();
    const int branches = 2 + random_.below(std::min(3, n - 3));  // each branch >= 1 node
    std::vector<int> cuts = {0, n - 2};
    while (static_cast<int>(cuts.size()) < branches + 1) {
      const int cut = 1 + random_.below(n - 3);
      if (std::find(cuts.begin(), cuts.end(), cut) == cuts.end()) cuts.push_back(cut);
    }
    std::sort(cuts.begin(), cuts.end());
    std::vector<NodeId> exits;
    for (int i = 0; i < branches; ++i) {
      const auto [entry, exit] = compose(cuts[i + 1] - cuts[i]);
      b_.add_edge(fork, entry);
      exits.push_back(exit);
    }
    const NodeId join = add(random_.chance(0.5) ? "Concat" : "Add");
    for (NodeId e : exits) b_.add_edge(e, join);
    return {fork, join};
  }

  NodeId add(const char* op_type = nullptr) {
    return b_.add_node(random_op(random_, "node_" + std::to_string(b_.num_nodes()), op_type));
  }

  Random random_;
  int num_nodes_;
  GraphBuilder b_{"random-series-parallel"};
};

// ---- ENAS samples, as training graphs ----

// One op of the ENAS micro (CNN) search space on x, in the current scope (one scope per op: weight names).
enum class CnnOp { kConv3x3, kConv5x5, kSepConv3x3, kMaxPool, kAvgPool, kIdentity, kCount };

Tensor relu_conv_bn(TrainingGraphBuilder& t, const Tensor& x, int channels, int kernel, int group) {
  return t.batchnorm(t.conv2d(t.relu(x, group), channels, kernel, kernel, 1, "same", group), group);
}

// Depthwise 3x3 then pointwise 1x1. The depthwise backward ops use the Conv2D backprop op types.
Tensor sep_conv(TrainingGraphBuilder& t, const Tensor& x, int group) {
  LayerSpec l;
  l.kind = "depthwise_conv";
  l.op_type = "DepthwiseConv2D";
  l.inputs = {t.relu(x, group)};
  l.output_shape = x.shape;
  l.flops = 2.0 * static_cast<double>(num_elements(x.shape)) * 3 * 3;
  l.weights = {t.variable("depthwise_weights", {3, 3, x.shape[3], 1}, group)};
  l.group = group;
  l.backward = {{"input_grad", "Conv2DBackpropInput", l.flops, {}, false, {0}, {0}, {}},
                {"filter_grad", "Conv2DBackpropFilter", l.flops, {0}, false, {}, {}, {0}}};
  const Tensor y = t.add_layer(std::move(l));
  return t.batchnorm(t.conv2d(y, static_cast<int>(x.shape[3]), 1, 1, 1, "same", group), group);
}

Tensor apply(TrainingGraphBuilder& t, CnnOp op, const Tensor& x, int group) {
  const int channels = static_cast<int>(x.shape[3]);
  switch (op) {
    case CnnOp::kConv3x3: return relu_conv_bn(t, x, channels, 3, group);
    case CnnOp::kConv5x5: return relu_conv_bn(t, x, channels, 5, group);
    case CnnOp::kSepConv3x3: return sep_conv(t, x, group);
    case CnnOp::kMaxPool: return t.maxpool(x, 3, 1, "same", group);
    case CnnOp::kAvgPool: return t.avgpool(x, 3, 1, "same", group);
    default: return x;
  }
}

// A stem conv, num_cells cells (group per cell) and a classifier. A cell calibrates its two inputs (the two
// previous cells' outputs) to `channels` with relu-conv1x1-bn; each of its nodes picks two earlier nodes of the
// cell and an op for each, and adds the results; the cell outputs the concatenation of the nodes no other
// node reads. An unread cell input is not calibrated, and the previous cell is always read. The architecture is one sample per seed, as ENAS's controller would draw it.
GraphPtr build_enas_cnn(const GraphParams& params) {
  Random random(params);
  const int cells = int_param(params, "num_cells", 1, 1 << 12);
  const int nodes_per_cell = int_param(params, "nodes_per_cell", 1, 64);
  const int batch = int_param(params, "batch_size", 1, 1 << 16);
  const int image_size = int_param(params, "image_size", 1, 4096);
  const int channels = int_param(params, "channels", 1, 1 << 14);
  const int num_classes = int_param(params, "num_classes", 1, 1 << 20);
  TrainingGraphBuilder t("enas-cnn");
  t.set_scope("stem");
  const Tensor images = t.input({batch, image_size, image_size, 3}, "images", 0);
  const Tensor stem = t.batchnorm(t.conv2d(images, channels, 3, 3, 1, "same", 0), 0);
  Tensor previous[2] = {stem, stem};
  for (int c = 0; c < cells; ++c) {
    const int group = c + 1;
    const std::string cell = "cell_" + std::to_string(c);
    struct Pick {
      int input;
      CnnOp op;
    };
    std::vector<Pick> picks;  // two per node
    for (int n = 0; n < 2 * nodes_per_cell; ++n)
      picks.push_back({random.below(2 + n / 2), static_cast<CnnOp>(random.below(static_cast<int>(CnnOp::kCount)))});
    std::vector<bool> read(2 + nodes_per_cell, false);
    for (const Pick& pick : picks) read[pick.input] = true;
    if (!read[1]) {  // every cell reads the previous one: no dead cells
      picks[0].input = 1;
      std::fill(read.begin(), read.end(), false);
      for (const Pick& pick : picks) read[pick.input] = true;
    }
    std::vector<Tensor> nodes(2);
    for (int i = 0; i < 2; ++i)
      if (read[i]) {
        t.set_scope(cell + "/input_" + std::to_string(i));
        nodes[i] = relu_conv_bn(t, previous[i], channels, 1, group);
      }
    for (int n = 0; n < nodes_per_cell; ++n) {
      Tensor sum[2];
      for (int side = 0; side < 2; ++side) {
        const Pick& pick = picks[2 * n + side];
        t.set_scope(cell + "/node_" + std::to_string(n) + (side == 0 ? "/left" : "/right"));
        sum[side] = apply(t, pick.op, nodes[pick.input], group);
      }
      t.set_scope(cell + "/node_" + std::to_string(n));
      nodes.push_back(t.add(sum[0], sum[1], group));
    }
    std::vector<Tensor> loose;
    for (int n = 2; n < static_cast<int>(nodes.size()); ++n)
      if (!read[n]) loose.push_back(nodes[n]);
    t.set_scope(cell);
    previous[0] = previous[1];
    previous[1] = loose.size() == 1 ? loose[0] : t.concat(loose, group);
  }
  const int head = cells + 1;
  t.set_scope("head");
  Tensor x = t.relu(previous[1], head);
  x = t.avgpool(x, image_size, 1, "valid", head);
  x = t.reshape(x, {batch, x.shape[3]}, head);
  t.softmax_cross_entropy(t.dense(x, num_classes, head), head);
  return std::move(t).finish();
}

// A language model whose recurrent cell is one ENAS sample: node 0 reads [x, h] and node j > 0 one earlier node
// through its own weights and an activation from {tanh, relu, sigmoid, identity}; h is the mean of the nodes
// no other node reads (ENAS's highway gates are left out). Groups: 0 embedding, 1 cell, 2 softmax.
GraphPtr build_enas_rnn(const GraphParams& params) {
  Random random(params);
  const int nodes = int_param(params, "nodes_per_cell", 1, 64);
  const int steps = int_param(params, "seq_len", 1, 1 << 14);
  const int batch = int_param(params, "batch_size", 1, 1 << 16);
  const int hidden = int_param(params, "hidden", 1, 1 << 16);
  const int vocab = int_param(params, "vocab", 2, 1 << 24);
  constexpr const char* kActivations[] = {"Tanh", "Relu", "Sigmoid", nullptr};
  std::vector<int> input(nodes, -1);
  std::vector<const char*> act(nodes);
  std::vector<bool> read(nodes, false);
  for (int j = 0; j < nodes; ++j) {
    if (j > 0) read[input[j] = random.below(j)] = true;
    act[j] = kActivations[random.below(4)];
  }

  TrainingGraphBuilder t("enas-rnn");
  t.set_scope("embedding");
  const Tensor ids = t.input({batch, steps}, "token_ids", 0);
  const LoopEmbedding embedding = loop_embedding(t, "table", vocab, hidden, batch, steps, 0);
  t.set_scope("cell");
  std::vector<LoopWeight> weights;
  for (int j = 0; j < nodes; ++j)
    weights.push_back(loop_weight(t, "node_" + std::to_string(j), (j == 0 ? 2 : 1) * hidden, hidden, batch, steps, 1));
  Tensor h = constant(t, "initial_h", {batch, hidden}, 1);
  t.set_scope("softmax");
  const LoopWeight projection = loop_weight(t, "projection", hidden, vocab, batch, steps, 2);

  for (int s = 0; s < steps; ++s) {
    t.set_scope("embedding/t" + std::to_string(s));
    const Tensor x = embedding_lookup(t, ids, embedding, 0);
    t.set_scope("cell/t" + std::to_string(s));
    std::vector<Tensor> out(nodes), loose;
    for (int j = 0; j < nodes; ++j) {
      out[j] = loop_matmul(t, j == 0 ? t.concat({x, h}, 1) : out[input[j]], weights[j], 1);
      if (act[j]) out[j] = activation(t, act[j], out[j], 1);
      if (!read[j]) loose.push_back(out[j]);
    }
    h = loose.size() == 1 ? loose[0] : add_n(t, loose, 1, "mean");
    t.set_scope("softmax/t" + std::to_string(s));
    t.softmax_cross_entropy(loop_matmul(t, h, projection, 2), 2);
  }
  return std::move(t).finish();
}

}  // namespace

GOENV_REGISTER_GRAPH_FAMILY(random_layered_registered,
                            GraphFamily{/*name=*/"random-layered",
                                        /*description=*/"seeded layered random DAG of ops from a TF-like mix",
                                        /*default_cluster=*/"2xgpu-nvlink",
                                        /*defaults=*/{{"seed", 0}, {"num_layers", 20}, {"width", 10},
                                                      {"edge_probability", 0.3}},
                                        /*build=*/build_random_layered})

GOENV_REGISTER_GRAPH_FAMILY(random_series_parallel_registered,
                            GraphFamily{/*name=*/"random-series-parallel",
                                        /*description=*/"seeded random series-parallel DAG",
                                        /*default_cluster=*/"2xgpu-nvlink",
                                        /*defaults=*/{{"seed", 0}, {"num_nodes", 200}},
                                        /*build=*/[](const GraphParams& params) {
                                          return SeriesParallel(params).build();
                                        }})

GOENV_REGISTER_GRAPH_FAMILY(enas_cnn_registered,
                            GraphFamily{/*name=*/"enas-cnn",
                                        /*description=*/"seeded ENAS micro-search-space CNN training step (CIFAR)",
                                        /*default_cluster=*/"2xgpu-nvlink",
                                        /*defaults=*/{{"seed", 0}, {"num_cells", 8}, {"nodes_per_cell", 5},
                                                      {"batch_size", 64}, {"image_size", 32}, {"channels", 36},
                                                      {"num_classes", 10}},
                                        /*build=*/build_enas_cnn})

GOENV_REGISTER_GRAPH_FAMILY(enas_rnn_registered,
                            GraphFamily{/*name=*/"enas-rnn",
                                        /*description=*/"seeded ENAS RNN-cell language model training step (PTB)",
                                        /*default_cluster=*/"2xgpu-nvlink",
                                        /*defaults=*/{{"seed", 0}, {"nodes_per_cell", 8}, {"seq_len", 35},
                                                      {"batch_size", 64}, {"hidden", 1000}, {"vocab", 10000}},
                                        /*build=*/build_enas_rnn})

}  // namespace goenv
