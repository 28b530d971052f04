// Transformer-XL (Dai et al., ACL 2019), BERT (Devlin et al., NAACL 2019), GPT-2 (Radford et al., 2019) training steps.
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "datasets/registry.h"
#include "datasets/training_graph.h"

namespace goenv {
namespace {

enum class Activation { kRelu, kGelu, kTanh };

// Builds the layers all three models share. Dropout is left out; the 1/sqrt(d_head)
// scaling and the attention mask are folded into the Softmax.
class Transformer {
 public:
  // Transformer-XL's relative positions: the sinusoid encoding of every key position
  // and the content and position biases shared by all layers.
  struct Relative {
    Tensor encoding;
    Weight content_bias, position_bias;
  };
  struct LayerOptions {
    bool pre_norm = false;  // GPT-2: LayerNorm before attention and FFN; else after the residual Add
    bool bias = true;       // biases on the attention projections
    Activation activation = Activation::kGelu;
    const Tensor* memory = nullptr;     // Transformer-XL: the previous segment's states
    const Relative* relative = nullptr;
  };

  Transformer(TrainingGraphBuilder& t, int d_model, int num_heads, int d_inner)
      : t_(t), d_(d_model), heads_(num_heads), d_inner_(d_inner) {
    GOENV_CHECK(d_model % num_heads == 0, InvalidArgument,
                "d_model (" << d_model << ") must be a multiple of num_heads (" << num_heads << ")");
  }

  int d_head() const { return d_ / heads_; }

  void block(const std::string& name) {
    ++group_;
    scope(name);
  }

  Weight variable(const std::string& name, Shape shape) { return t_.variable(name, std::move(shape), group_); }
  Tensor input(Shape shape, const std::string& name) { return t_.input(std::move(shape), name, group_); }
  Tensor add(const Tensor& a, const Tensor& b) { return t_.add(a, b, group_); }
  Tensor reshape(const Tensor& x, Shape shape) { return t_.reshape(x, std::move(shape), group_); }
  Tensor bias_add(const Tensor& x) { return t_.bias_add(x, group_); }
  void loss(const Tensor& logits) { t_.softmax_cross_entropy(logits, group_); }

  // One encoder/decoder layer: self-attention (over memory ++ x for Transformer-XL), then the FFN.
  Tensor layer(const Tensor& x, const LayerOptions& o) {
    const Tensor a = o.pre_norm ? layer_norm(x) : x;
    Tensor context = a;
    if (o.memory) {
      context = concat_sequence(*o.memory, a);
      const std::int64_t m = o.memory->shape[1];  // next segment's memory: the last m states
      slice(context, {context.shape[0], m, context.shape[2]}, "new_memory");
    }
    Tensor y = add(x, attention(a, context, o));
    if (!o.pre_norm) y = layer_norm(y);
    const Tensor f = feed_forward(o.pre_norm ? layer_norm(y) : y, o.activation);
    y = add(y, f);
    return o.pre_norm ? y : layer_norm(y);
  }

  Tensor dense(const Tensor& x, int units, const std::string& name, bool bias = true) {
    const std::string outer = scope_;
    scope(outer + "/" + name);
    const Tensor y = t_.dense(x, units, group_, bias);
    scope(outer);
    return y;
  }

  Tensor activation(const Tensor& x, Activation act) {
    if (act == Activation::kRelu) return t_.relu(x, group_);
    const double n = static_cast<double>(num_elements(x.shape));
    LayerSpec l = spec(act == Activation::kGelu ? "gelu" : "tanh", act == Activation::kGelu ? "Gelu" : "Tanh", {x},
                       x.shape, n);
    l.backward = {{"grad", "ActivationGrad", n, {0}, false, {}, {0}, {}}};
    return t_.add_layer(std::move(l));
  }

  Tensor layer_norm(const Tensor& x) {
    const double n = static_cast<double>(num_elements(x.shape));
    LayerSpec l = spec("layer_norm", "LayerNorm", {x}, x.shape, 5 * n);  // as batchnorm
    l.weights = {weight(l, "gamma", {x.shape.back()}), weight(l, "beta", {x.shape.back()})};
    l.backward = {{"grad", "LayerNormGrad", 8 * n, {0}, false, {0}, {0}, {0, 1}}};
    return t_.add_layer(std::move(l));
  }

  // Rows of `table` (rows, d) picked by integer ids; the gradient is scattered back.
  Tensor embedding(const Tensor& ids, const Weight& table) {
    Shape out = ids.shape;
    out.push_back(table.shape[1]);
    LayerSpec l = spec("embedding", "Embedding", {ids}, out, 0);
    l.weights = {table};
    l.backward = {{"table_grad", "EmbeddingGrad", static_cast<double>(num_elements(out)), {0}, false, {}, {}, {0}}};
    return t_.add_layer(std::move(l));
  }

  // x (rows, d) times table^T for a (vocab, d) table shared with an embedding.
  Tensor matmul_transposed(const Tensor& x, const Weight& table) {
    const Shape out = {x.shape[0], table.shape[0]};
    const double flops = 2.0 * static_cast<double>(num_elements(out)) * static_cast<double>(x.shape[1]);
    LayerSpec l = spec("logits", "MatMul", {x}, out, flops);
    l.weights = {table};
    l.backward = {{"input_grad", "MatMul", flops, {}, false, {0}, {0}, {}},
                  {"weight_grad", "MatMul", flops, {0}, false, {}, {}, {0}}};
    return t_.add_layer(std::move(l));
  }

  // Part of x (Slice); its gradient is padded back to x's shape (Pad).
  Tensor slice(const Tensor& x, Shape out, const std::string& kind) {
    LayerSpec l = spec(kind, "Slice", {x}, std::move(out), 0);
    l.backward = {{"grad", "Pad", 0, {}, false, {}, {0}, {}}};
    return t_.add_layer(std::move(l));
  }

  // x (batch, seq, d) at positions (batch, p) -> (batch, p, d). The vocabulary has no
  // GatherGrad: the scatter-add back is an EmbeddingGrad, the same computation.
  Tensor gather(const Tensor& x, const Tensor& positions) {
    const Shape out = {x.shape[0], positions.shape[1], x.shape[2]};
    LayerSpec l = spec("gather", "Gather", {x, positions}, out, 0);
    l.backward = {{"grad", "EmbeddingGrad", static_cast<double>(num_elements(out)), {1}, false, {}, {0}, {}}};
    return t_.add_layer(std::move(l));
  }

  Tensor constant(Shape shape, const std::string& kind) {
    return t_.add_layer(spec(kind, "Constant", {}, std::move(shape), 0));
  }

 private:
  void scope(std::string name) {
    scope_ = name;
    t_.set_scope(std::move(name));
  }

  // A custom layer named <scope>/<kind>[_n]; the caller adds weights and backward ops.
  LayerSpec spec(const std::string& kind, const char* op_type, std::vector<Tensor> inputs, Shape output,
                 double flops) {
    const int n = name_counts_[scope_ + "/" + kind]++;
    LayerSpec l;
    l.name = scope_ + "/" + (n == 0 ? kind : kind + "_" + std::to_string(n));
    l.op_type = op_type;
    l.inputs = std::move(inputs);
    l.output_shape = std::move(output);
    l.flops = flops;
    l.group = group_;
    return l;
  }

  Weight weight(const LayerSpec& l, const std::string& name, Shape shape) {
    return t_.variable(l.name.substr(scope_.size() + 1) + "/" + name, std::move(shape), group_);
  }

  // a (..., m, k) times b (..., k, n), or b^T for b (..., n, k); b's leading axes may
  // be fewer (broadcast over a's batch).
  Tensor batch_matmul(const Tensor& a, const Tensor& b, bool transpose_b) {
    const std::size_t r = b.shape.size();
    const std::int64_t k = a.shape.back(), n = transpose_b ? b.shape[r - 2] : b.shape[r - 1];
    GOENV_CHECK((transpose_b ? b.shape[r - 1] : b.shape[r - 2]) == k, InvalidArgument,
                scope_ << ": batch_matmul inner dimensions differ");
    Shape out = a.shape;
    out.back() = n;
    const double flops = 2.0 * static_cast<double>(num_elements(out)) * static_cast<double>(k);
    LayerSpec l = spec("batch_matmul", "BatchMatMul", {a, b}, out, flops);
    l.backward = {{"grad_a", "BatchMatMul", flops, {1}, false, {}, {0}, {}},
                  {"grad_b", "BatchMatMul", flops, {0}, false, {}, {1}, {}}};
    return t_.add_layer(std::move(l));
  }

  Tensor softmax(const Tensor& x) {
    const double n = static_cast<double>(num_elements(x.shape));
    LayerSpec l = spec("softmax", "Softmax", {x}, x.shape, 5 * n);
    l.backward = {{"grad", "SoftmaxGrad", 3 * n, {}, true, {}, {0}, {}}};
    return t_.add_layer(std::move(l));
  }

  Tensor transpose(const Tensor& x, Shape out, const std::string& kind) {
    LayerSpec l = spec(kind, "Transpose", {x}, std::move(out), 0);
    l.backward = {{"grad", "Transpose", 0, {}, false, {}, {0}, {}}};
    return t_.add_layer(std::move(l));
  }

  // ([batch,] seq, d) -> ([batch,] heads, seq, d_head): reshape + transpose, one op.
  Tensor split_heads(const Tensor& x) {
    Shape out(x.shape.begin(), x.shape.end() - 2);
    out.insert(out.end(), {heads_, x.shape[x.shape.size() - 2], d_head()});
    return transpose(x, std::move(out), "split_heads");
  }

  Tensor merge_heads(const Tensor& x) { return transpose(x, {x.shape[0], x.shape[2], d_}, "merge_heads"); }

  Tensor concat_sequence(const Tensor& a, const Tensor& b) {
    LayerSpec l = spec("concat_memory", "Concat", {a, b}, {a.shape[0], a.shape[1] + b.shape[1], a.shape[2]}, 0);
    l.backward = {{"grad", "Split", 0, {}, false, {}, {0, 1}, {}}};
    return t_.add_layer(std::move(l));
  }

  // q (batch, heads, seq, d_head) + a (heads, d_head) bias shared by all layers.
  Tensor head_bias(const Tensor& q, const Weight& bias) {
    const double n = static_cast<double>(num_elements(q.shape));
    LayerSpec l = spec("head_bias", "BiasAdd", {q}, q.shape, n);
    l.weights = {bias};
    l.passthrough_grads = {0};
    l.backward = {{"bias_grad", "BiasAddGrad", n, {}, false, {}, {}, {0}}};
    return t_.add_layer(std::move(l));
  }

  Tensor attention(const Tensor& x, const Tensor& context, const LayerOptions& o) {
    const std::string outer = scope_;
    scope(outer + "/attention");
    const Tensor q = split_heads(dense(x, d_, "query", o.bias));
    const Tensor k = split_heads(dense(context, d_, "key", o.bias));
    const Tensor v = split_heads(dense(context, d_, "value", o.bias));
    Tensor scores;
    if (o.relative) {  // content term + relative-position term, the latter shifted into place
      const Tensor r = split_heads(dense(o.relative->encoding, d_, "position", false));  // (heads, keys, d_head)
      const Tensor content = batch_matmul(head_bias(q, o.relative->content_bias), k, true);
      const Tensor position = batch_matmul(head_bias(q, o.relative->position_bias), r, true);
      scores = add(content, slice(position, position.shape, "rel_shift"));  // TF: pad, reshape, slice
    } else {
      scores = batch_matmul(q, k, true);
    }
    const Tensor y = dense(merge_heads(batch_matmul(softmax(scores), v, false)), d_, "output", o.bias);
    scope(outer);
    return y;
  }

  Tensor feed_forward(const Tensor& x, Activation act) {
    const std::string outer = scope_;
    scope(outer + "/ffn");
    const Tensor y = dense(activation(dense(x, d_inner_, "intermediate"), act), d_, "output");
    scope(outer);
    return y;
  }

  TrainingGraphBuilder& t_;
  int d_, heads_, d_inner_;
  std::string scope_;
  std::map<std::string, int> name_counts_;
  int group_ = -1;
};

// Transformer-XL language model; the adaptive softmax is approximated by a dense
// softmax over `vocab_size` words whose weight is tied to the embedding (as the
// paper's WikiText-103 models tie them). Each layer's memory is an Input.
GraphPtr build_transformer_xl(const GraphParams& params, int num_layers) {
  const int batch = int_param(params, "batch_size", 1, 1 << 16);
  const int length = int_param(params, "segment_length", 1, 1 << 16);
  const int memory = int_param(params, "memory_length", 0, 1 << 16);
  const int d_model = int_param(params, "d_model", 1, 1 << 16);
  const int heads = int_param(params, "num_heads", 1, 1 << 10);
  const int d_inner = int_param(params, "d_inner", 1, 1 << 18);
  const int vocab = int_param(params, "vocab_size", 2, 1 << 22);
  TrainingGraphBuilder t("transformer-xl-" + std::to_string(num_layers));
  Transformer m(t, d_model, heads, d_inner);

  m.block("embedding");
  const Weight table = m.variable("table", {vocab, d_model});
  Tensor h = m.embedding(m.input({batch, length}, "tokens"), table);
  const Transformer::Relative relative{m.constant({memory + length, d_model}, "position_encoding"),
                                       m.variable("r_w_bias", {heads, m.d_head()}),
                                       m.variable("r_r_bias", {heads, m.d_head()})};
  for (int i = 0; i < num_layers; ++i) {
    m.block("layer_" + std::to_string(i));
    Transformer::LayerOptions o;
    o.bias = false;
    o.activation = Activation::kRelu;
    o.relative = &relative;
    const Tensor mem = memory > 0 ? m.input({batch, memory, d_model}, "memory") : Tensor{};
    o.memory = memory > 0 ? &mem : nullptr;
    h = m.layer(h, o);
  }
  m.block("softmax");
  m.loss(m.bias_add(m.matmul_transposed(m.reshape(h, {std::int64_t{batch} * length, d_model}), table)));
  return std::move(t).finish();
}

// BERT pre-training: masked-LM head (tied to the word embedding) on ceil(0.15 * seq)
// positions plus next-sentence head on the pooled first token.
GraphPtr build_bert(const GraphParams& params) {
  constexpr int kLayers = 12, kDModel = 768, kHeads = 12, kVocab = 30522, kMaxPositions = 512, kTypes = 2;
  const int batch = int_param(params, "batch_size", 1, 1 << 16);
  const int seq = int_param(params, "seq_len", 1, kMaxPositions);
  const int predictions = static_cast<int>(std::ceil(0.15 * seq));
  TrainingGraphBuilder t("bert-base");
  Transformer m(t, kDModel, kHeads, 4 * kDModel);

  m.block("embeddings");
  const Weight words = m.variable("word_embeddings", {kVocab, kDModel});
  Tensor x = m.embedding(m.input({batch, seq}, "tokens"), words);
  const Weight positions = m.variable("position_embeddings", {kMaxPositions, kDModel});
  const Weight types = m.variable("token_type_embeddings", {kTypes, kDModel});
  x = m.add(x, m.embedding(m.input({batch, seq}, "positions"), positions));
  x = m.add(x, m.embedding(m.input({batch, seq}, "segments"), types));
  x = m.layer_norm(x);
  for (int i = 0; i < kLayers; ++i) {
    m.block("layer_" + std::to_string(i));
    x = m.layer(x, {});
  }
  m.block("heads");
  Tensor masked = m.reshape(m.gather(x, m.input({batch, predictions}, "masked_positions")),
                            {std::int64_t{batch} * predictions, kDModel});
  masked = m.layer_norm(m.activation(m.dense(masked, kDModel, "transform"), Activation::kGelu));
  m.loss(m.bias_add(m.matmul_transposed(masked, words)));
  const Tensor pooled = m.activation(m.dense(m.slice(x, {batch, kDModel}, "first_token"), kDModel, "pooler"),
                                     Activation::kTanh);
  m.loss(m.dense(pooled, 2, "next_sentence"));
  return std::move(t).finish();
}

// GPT-2 language model: pre-LayerNorm layers, a final LayerNorm, the output
// projection tied to the token embedding.
GraphPtr build_gpt2(const GraphParams& params) {
  constexpr int kLayers = 12, kDModel = 768, kHeads = 12, kVocab = 50257, kContext = 1024;
  const int batch = int_param(params, "batch_size", 1, 1 << 16);
  const int seq = int_param(params, "seq_len", 1, kContext);
  TrainingGraphBuilder t("gpt2-small");
  Transformer m(t, kDModel, kHeads, 4 * kDModel);

  m.block("embedding");
  const Weight tokens = m.variable("wte", {kVocab, kDModel});
  Tensor x = m.add(m.embedding(m.input({batch, seq}, "tokens"), tokens),
                   m.embedding(m.input({batch, seq}, "positions"), m.variable("wpe", {kContext, kDModel})));
  for (int i = 0; i < kLayers; ++i) {
    m.block("layer_" + std::to_string(i));
    Transformer::LayerOptions o;
    o.pre_norm = true;
    x = m.layer(x, o);
  }
  m.block("output");
  x = m.reshape(m.layer_norm(x), {std::int64_t{batch} * seq, kDModel});
  m.loss(m.matmul_transposed(x, tokens));
  return std::move(t).finish();
}

GraphFamily transformer_xl(int layers) {
  const std::string n = std::to_string(layers);
  return {/*name=*/"transformer-xl-" + n,
          /*description=*/"Transformer-XL language model training step, " + n + " layers",
          /*default_cluster=*/n + "xgpu-nvlink",
          /*defaults=*/
          {{"batch_size", 32},
           {"segment_length", 128},
           {"memory_length", 128},
           {"d_model", 512},
           {"num_heads", 8},
           {"d_inner", 2048},
           {"vocab_size", 32000}},
          /*build=*/[layers](const GraphParams& params) { return build_transformer_xl(params, layers); }};
}

}  // namespace

GOENV_REGISTER_GRAPH_FAMILY(transformer_xl_2_registered, transformer_xl(2))
GOENV_REGISTER_GRAPH_FAMILY(transformer_xl_4_registered, transformer_xl(4))
GOENV_REGISTER_GRAPH_FAMILY(transformer_xl_8_registered, transformer_xl(8))
GOENV_REGISTER_GRAPH_FAMILY(bert_base_registered,
                            GraphFamily{/*name=*/"bert-base",
                                        /*description=*/"BERT-base pre-training step (MLM + NSP, 128 tokens)",
                                        /*default_cluster=*/"4xgpu-nvlink",
                                        /*defaults=*/{{"batch_size", 32}, {"seq_len", 128}},
                                        /*build=*/build_bert})
GOENV_REGISTER_GRAPH_FAMILY(gpt2_small_registered,
                            GraphFamily{/*name=*/"gpt2-small",
                                        /*description=*/"GPT-2 small language-model training step (1024 tokens)",
                                        /*default_cluster=*/"4xgpu-nvlink",
                                        /*defaults=*/{{"batch_size", 8}, {"seq_len", 1024}},
                                        /*build=*/build_gpt2})

}  // namespace goenv
