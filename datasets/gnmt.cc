// GNMT (Wu et al., "Google's Neural Machine Translation System", 2016) as in tensorflow/nmt, one training step.
#include <string>
#include <vector>

#include "datasets/recurrent.h"
#include "datasets/registry.h"

namespace goenv {
namespace {

// A bidirectional first encoder layer, residual LSTM layers from the third on, attention from the bottom decoder
// layer fed to every decoder layer, a softmax per step; unrolled over seq_len source and target steps.
class Gnmt {
 public:
  Gnmt(int layers, int batch, int steps, int hidden, int vocab)
      : t_("gnmt-" + std::to_string(layers)), layers_(layers), batch_(batch), steps_(steps), hidden_(hidden),
        vocab_(vocab), attention_(layers + 1) {}

  // Groups: 0 source embedding, 1..L encoder layers, L+1 attention, L+2 target embedding,
  // L+3..2L+2 decoder layers, 2L+3 softmax.
  GraphPtr build() && {
    const std::vector<Tensor> memory = encoder();
    attention_memory(memory);
    decoder();
    return std::move(t_).finish();
  }

 private:
  std::string at(const std::string& scope, int step) { return scope + "/t" + std::to_string(step); }

  std::vector<Tensor> encoder() {
    t_.set_scope("encoder/embedding");
    const Tensor ids = t_.input({batch_, steps_}, "source_ids", 0);
    const LoopEmbedding embedding = loop_embedding(t_, "table", vocab_, hidden_, batch_, steps_, 0);
    std::vector<Tensor> x(steps_), backward(steps_);
    for (int s = 0; s < steps_; ++s) {
      t_.set_scope(at("encoder/embedding", s));
      x[s] = embedding_lookup(t_, ids, embedding, 0);
    }
    LstmLayer forward_layer(t_, "encoder/layer_0/fw", hidden_, hidden_, batch_, steps_, 1);
    LstmLayer backward_layer(t_, "encoder/layer_0/bw", hidden_, hidden_, batch_, steps_, 1);
    for (int s = steps_ - 1; s >= 0; --s) backward[s] = backward_layer.step({x[s]});
    for (int s = 0; s < steps_; ++s) {
      const Tensor forward = forward_layer.step({x[s]});
      t_.set_scope(at("encoder/layer_0", s));
      x[s] = t_.concat({forward, backward[s]}, 1);
    }
    std::vector<LstmLayer> stack;
    stack.reserve(layers_);
    for (int l = 1; l < layers_; ++l)
      stack.emplace_back(t_, "encoder/layer_" + std::to_string(l), (l == 1 ? 2 : 1) * hidden_, hidden_, batch_,
                         steps_, l + 1);
    for (int s = 0; s < steps_; ++s)
      for (int l = 1; l < layers_; ++l) x[s] = residual_step(stack[l - 1], l, {x[s]}, x[s]);
    return x;
  }

  // Layers from the third on add their input to their output.
  Tensor residual_step(LstmLayer& layer, int l, const std::vector<Tensor>& inputs, const Tensor& x) {
    const Tensor h = layer.step(inputs);
    return l >= 2 ? t_.add(h, x, layer.group()) : h;
  }

  // Stacks the top encoder outputs into the attention memory (batch, steps, hidden), projects the keys,
  // and opens both as loop invariants of the decoder.
  void attention_memory(const std::vector<Tensor>& top) {
    t_.set_scope("attention");
    const Tensor stacked = t_.concat(top, attention_);
    values_ = t_.reshape(stacked, {batch_, steps_, hidden_}, attention_);
    keys_ = t_.dense(values_, hidden_, attention_, /*bias=*/false);
    // dK = sum over steps of dscore^T query, dV = sum of alignment^T dcontext.
    const double flops = 2.0 * batch_ * steps_ * static_cast<double>(steps_) * hidden_;
    keys_handle_ = loop_invariant(t_, "loop_keys", {keys_}, {}, {batch_, steps_}, "BatchMatMul", flops, attention_);
    values_handle_ =
        loop_invariant(t_, "loop_values", {values_}, {}, {batch_, hidden_}, "BatchMatMul", flops, attention_);
  }

  // Dot-product scores with projected encoder outputs (Luong et al. 2015): GNMT's additive score would keep a
  // (batch, seq_len, hidden) energy tensor per decoder step alive for the backward pass.
  Tensor attend(const Tensor& query, int step) {
    t_.set_scope(at("attention", step));
    const double flops = 2.0 * batch_ * steps_ * static_cast<double>(hidden_);
    LayerSpec score;
    score.kind = "score";
    score.op_type = "BatchMatMul";
    score.inputs = {query, keys_, keys_handle_};
    score.output_shape = {batch_, steps_};
    score.flops = flops;
    score.group = attention_;
    score.passthrough_grads = {2};
    score.backward = {{"query_grad", "BatchMatMul", flops, {1}, false, {}, {0}, {}}};
    const Tensor scores = t_.add_layer(std::move(score));

    LayerSpec softmax;
    softmax.kind = "softmax";
    softmax.op_type = "Softmax";
    softmax.inputs = {scores};
    softmax.output_shape = scores.shape;
    softmax.flops = 3.0 * batch_ * steps_;
    softmax.group = attention_;
    softmax.backward = {{"grad", "SoftmaxGrad", softmax.flops, {}, true, {}, {0}, {}}};
    const Tensor alignments = t_.add_layer(std::move(softmax));

    LayerSpec context;
    context.kind = "context";
    context.op_type = "BatchMatMul";
    context.inputs = {alignments, values_, values_handle_};
    context.output_shape = {batch_, hidden_};
    context.flops = flops;
    context.group = attention_;
    context.passthrough_grads = {2};
    context.backward = {{"alignment_grad", "BatchMatMul", flops, {1}, false, {}, {0}, {}}};
    return t_.add_layer(std::move(context));
  }

  void decoder() {
    const int embedding_group = layers_ + 2, softmax = 2 * layers_ + 3;
    t_.set_scope("decoder/embedding");
    const Tensor ids = t_.input({batch_, steps_}, "target_ids", embedding_group);
    const LoopEmbedding embedding = loop_embedding(t_, "table", vocab_, hidden_, batch_, steps_, embedding_group);
    std::vector<LstmLayer> stack;
    stack.reserve(layers_);
    for (int l = 0; l < layers_; ++l)
      stack.emplace_back(t_, "decoder/layer_" + std::to_string(l), 2 * hidden_, hidden_, batch_, steps_,
                         layers_ + 3 + l);
    t_.set_scope("attention");
    Tensor context = constant(t_, "initial_context", {batch_, hidden_}, attention_);
    t_.set_scope("softmax");
    const LoopWeight projection = loop_weight(t_, "projection", hidden_, vocab_, batch_, steps_, softmax);

    for (int s = 0; s < steps_; ++s) {
      t_.set_scope(at("decoder/embedding", s));
      const Tensor target = embedding_lookup(t_, ids, embedding, embedding_group);
      Tensor x = stack[0].step({target, context});  // input feeding: the previous step's context
      context = attend(x, s);
      for (int l = 1; l < layers_; ++l) x = residual_step(stack[l], l, {x, context}, x);
      t_.set_scope(at("softmax", s));
      t_.softmax_cross_entropy(loop_matmul(t_, x, projection, softmax), softmax);
    }
  }

  TrainingGraphBuilder t_;
  int layers_, batch_, steps_, hidden_, vocab_;
  int attention_;  // its group
  Tensor keys_, values_, keys_handle_, values_handle_;
};

GraphFamily gnmt_family(int layers) {
  const std::string n = std::to_string(layers);
  return GraphFamily{/*name=*/"gnmt-" + n,
                     /*description=*/"GNMT training step, " + n + " encoder + " + n + " decoder LSTM layers, " + n +
                         " GPUs",
                     /*default_cluster=*/n + "xgpu-nvlink",
                     /*defaults=*/{{"batch_size", 128}, {"seq_len", 180}, {"hidden", 1024}, {"vocab", 32000}},
                     /*build=*/[layers](const GraphParams& params) {
                       return Gnmt(layers, int_param(params, "batch_size", 1, 1 << 16),
                                   int_param(params, "seq_len", 1, 1 << 14), int_param(params, "hidden", 1, 1 << 16),
                                   int_param(params, "vocab", 2, 1 << 24))
                           .build();
                     }};
}

}  // namespace

GOENV_REGISTER_GRAPH_FAMILY(gnmt_2_registered, gnmt_family(2))
GOENV_REGISTER_GRAPH_FAMILY(gnmt_4_registered, gnmt_family(4))
GOENV_REGISTER_GRAPH_FAMILY(gnmt_8_registered, gnmt_family(8))

}  // namespace goenv
