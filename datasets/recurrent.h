// Unrolled-sequence layers on the training-graph DSL; LSTM as TF's BasicLSTMCell (Hochreiter & Schmidhuber 1997).
#pragma once

#include <string>
#include <vector>

#include "datasets/training_graph.h"

namespace goenv {

// The read of a loop invariant (TF's Enter): weights or activations that all `steps`
// steps of an unrolled loop use. Each step's op takes the returned handle (shape
// `step_grad`, the step's share of the gradient, e.g. its gate gradients) as an extra
// input and passes that share to it; the handle's backward op (`grad_op`, FLOPs for
// the whole loop) then forms the invariant's gradients once, as cuDNN and TF's fused
// RNN kernels do. Without it every step would emit a full weight-sized gradient and
// an AddN over all of them would keep T such tensors alive at once.
Tensor loop_invariant(TrainingGraphBuilder& t, const std::string& kind, const std::vector<Tensor>& inputs,
                      const std::vector<Weight>& weights, Shape step_grad, const char* grad_op,
                      double grad_flops, int group);

// A dense weight (in, out) plus bias shared by the `steps` steps of a loop.
struct LoopWeight {
  Weight kernel, bias;
  Tensor handle;
};
LoopWeight loop_weight(TrainingGraphBuilder& t, const std::string& name, std::int64_t in, std::int64_t out,
                       std::int64_t batch, int steps, int group);
// x (batch, in) -> x W + b (batch, out) for one step.
Tensor loop_matmul(TrainingGraphBuilder& t, const Tensor& x, const LoopWeight& w, int group);

// An embedding table (vocab, width) looked up once per step.
struct LoopEmbedding {
  Weight table;
  Tensor handle;
};
LoopEmbedding loop_embedding(TrainingGraphBuilder& t, const std::string& name, int vocab, int width,
                             std::int64_t batch, int steps, int group);
// Looks up one step's column of `ids` (batch, steps): (batch, width).
Tensor embedding_lookup(TrainingGraphBuilder& t, const Tensor& ids, const LoopEmbedding& e, int group);

// Pointwise layers, 1 FLOP per element each way. `activation` also slices: its
// output may be narrower than x (a gate read from the fused gate matrix).
Tensor activation(TrainingGraphBuilder& t, const char* op_type, const Tensor& x, int group, Shape shape = {});
Tensor multiply(TrainingGraphBuilder& t, const Tensor& a, const Tensor& b, int group);
Tensor add_n(TrainingGraphBuilder& t, const std::vector<Tensor>& xs, int group, const std::string& kind = "add_n");
Tensor constant(TrainingGraphBuilder& t, const std::string& kind, Shape shape, int group);  // zeros, no gradient

// One LSTM layer unrolled over `steps` steps (TF BasicLSTMCell, forget bias in b):
//   gates = [x, h] W + b;  c = c * sigmoid(f) + sigmoid(i) * tanh(j);  h = tanh(c) * sigmoid(o).
// Forward per step: Concat, MatMul (2*4h*(in+h)*batch FLOPs + bias), 4 gate
// activations, 2 Mul, Add, Tanh, Mul. W (in+h, 4h) and b (4h) are shared by all steps.
class LstmLayer {
 public:
  // `scope` names the layer's nodes: fwd/<scope>/t<step>/...; weights var/<scope>/lstm/kernel, bias.
  LstmLayer(TrainingGraphBuilder& t, std::string scope, std::int64_t input_size, std::int64_t hidden,
            std::int64_t batch, int steps, int group);
  // Runs one step on the concatenation of `inputs` (their widths sum to input_size);
  // returns h. Leaves the builder's scope at this step's.
  Tensor step(const std::vector<Tensor>& inputs);
  int group() const { return group_; }

 private:
  TrainingGraphBuilder& t_;
  std::string scope_;
  std::int64_t input_size_;
  int group_;
  int step_ = 0;
  LoopWeight weight_;
  Tensor h_, c_;
};

}  // namespace goenv
