#include "datasets/recurrent.h"

#include <cctype>
#include <utility>

#include "core/error.h"

namespace goenv {

Tensor loop_invariant(TrainingGraphBuilder& t, const std::string& kind, const std::vector<Tensor>& inputs,
                      const std::vector<Weight>& weights, Shape step_grad, const char* grad_op,
                      double grad_flops, int group) {
  LayerSpec l;
  l.kind = kind;
  l.op_type = "Other";  // TF's Enter / Identity: not in the vocabulary
  l.inputs = inputs;
  l.weights = weights;
  l.output_shape = std::move(step_grad);
  l.group = group;
  BackwardSpec grad{"grad", grad_op, grad_flops, {}, false, {}, {}, {}};
  for (int i = 0; i < static_cast<int>(inputs.size()); ++i) grad.input_grads.push_back(i);
  for (int w = 0; w < static_cast<int>(weights.size()); ++w) grad.weight_grads.push_back(w);
  l.backward = {std::move(grad)};
  return t.add_layer(std::move(l));
}

LoopWeight loop_weight(TrainingGraphBuilder& t, const std::string& name, std::int64_t in, std::int64_t out,
                       std::int64_t batch, int steps, int group) {
  LoopWeight w;
  w.kernel = t.variable(name + "/kernel", {in, out}, group);
  w.bias = t.variable(name + "/bias", {out}, group);
  // dW = sum over steps of x^T dy, db = sum of dy.
  const double flops = static_cast<double>(steps) * static_cast<double>(batch * out) * (2.0 * static_cast<double>(in) + 1);
  w.handle = loop_invariant(t, name + "/loop_weights", {}, {w.kernel, w.bias}, {batch, out}, "MatMul", flops, group);
  return w;
}

Tensor loop_matmul(TrainingGraphBuilder& t, const Tensor& x, const LoopWeight& w, int group) {
  const std::int64_t in = w.kernel.shape[0], out = w.kernel.shape[1];
  GOENV_CHECK(x.shape.size() == 2 && x.shape[1] == in && x.shape[0] == w.handle.shape[0], InvalidArgument,
              "loop_matmul: input must be (" << w.handle.shape[0] << ", " << in << ")");
  const double matmul = 2.0 * static_cast<double>(x.shape[0] * in * out);
  LayerSpec l;
  l.kind = "matmul";
  l.op_type = "MatMul";
  l.inputs = {x, w.handle};
  l.weights = {w.kernel, w.bias};
  l.output_shape = {x.shape[0], out};
  l.flops = matmul + static_cast<double>(x.shape[0] * out);
  l.group = group;
  l.passthrough_grads = {1};  // dy is this step's share of dW, db
  //             name           op type   flops   reads inputs/output/weights  grads of inputs/weights
  l.backward = {{"input_grad", "MatMul", matmul, {}, false, {0}, {0}, {}}};
  return t.add_layer(std::move(l));
}

LoopEmbedding loop_embedding(TrainingGraphBuilder& t, const std::string& name, int vocab, int width,
                             std::int64_t batch, int steps, int group) {
  LoopEmbedding e;
  e.table = t.variable(name, {vocab, width}, group);
  const double scatter_add = static_cast<double>(steps) * static_cast<double>(batch * width);
  e.handle = loop_invariant(t, name + "/loop_table", {}, {e.table}, {batch, width}, "EmbeddingGrad", scatter_add,
                            group);
  return e;
}

Tensor embedding_lookup(TrainingGraphBuilder& t, const Tensor& ids, const LoopEmbedding& e, int group) {
  LayerSpec l;
  l.kind = "embedding";
  l.op_type = "Embedding";
  l.inputs = {ids, e.handle};  // the handle stands for the table: a gather reads batch rows, not all of it
  l.output_shape = e.handle.shape;
  l.group = group;
  l.passthrough_grads = {1};
  return t.add_layer(std::move(l));
}

Tensor activation(TrainingGraphBuilder& t, const char* op_type, const Tensor& x, int group, Shape shape) {
  LayerSpec l;
  for (const char* c = op_type; *c; ++c) l.kind += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
  l.op_type = op_type;
  l.inputs = {x};
  l.output_shape = shape.empty() ? x.shape : std::move(shape);
  l.flops = static_cast<double>(num_elements(l.output_shape));
  l.group = group;
  l.backward = {{"grad", "ActivationGrad", l.flops, {}, true, {}, {0}, {}}};
  return t.add_layer(std::move(l));
}

Tensor multiply(TrainingGraphBuilder& t, const Tensor& a, const Tensor& b, int group) {
  GOENV_CHECK(a.shape == b.shape, InvalidArgument, "multiply: inputs must have the same shape");
  LayerSpec l;
  l.kind = "mul";
  l.op_type = "Mul";
  l.inputs = {a, b};
  l.output_shape = a.shape;
  l.flops = static_cast<double>(num_elements(a.shape));
  l.group = group;
  l.backward = {{"grad", "Mul", 2 * l.flops, {0, 1}, false, {}, {0, 1}, {}}};  // da = dy b, db = dy a
  return t.add_layer(std::move(l));
}

Tensor add_n(TrainingGraphBuilder& t, const std::vector<Tensor>& xs, int group, const std::string& kind) {
  GOENV_CHECK(!xs.empty(), InvalidArgument, "add_n needs at least one input");
  LayerSpec l;
  l.kind = kind;
  l.op_type = "AddN";
  l.inputs = xs;
  l.output_shape = xs[0].shape;
  l.flops = static_cast<double>(xs.size() - 1) * static_cast<double>(num_elements(xs[0].shape));
  l.group = group;
  for (int i = 0; i < static_cast<int>(xs.size()); ++i) {
    GOENV_CHECK(xs[i].shape == xs[0].shape, InvalidArgument, "add_n: input " << i << " differs in shape from input 0");
    l.passthrough_grads.push_back(i);
  }
  return t.add_layer(std::move(l));
}

Tensor constant(TrainingGraphBuilder& t, const std::string& kind, Shape shape, int group) {
  LayerSpec l;
  l.kind = kind;
  l.op_type = "Constant";
  l.output_shape = std::move(shape);
  l.group = group;
  return t.add_layer(std::move(l));
}

LstmLayer::LstmLayer(TrainingGraphBuilder& t, std::string scope, std::int64_t input_size, std::int64_t hidden,
                     std::int64_t batch, int steps, int group)
    : t_(t), scope_(std::move(scope)), input_size_(input_size), group_(group) {
  GOENV_CHECK(input_size >= 1 && hidden >= 1 && batch >= 1 && steps >= 1, InvalidArgument,
              scope_ << ": LSTM sizes and steps must be >= 1");
  t_.set_scope(scope_);
  weight_ = loop_weight(t_, "lstm", input_size + hidden, 4 * hidden, batch, steps, group);
  h_ = constant(t_, "initial_h", {batch, hidden}, group);
  c_ = constant(t_, "initial_c", {batch, hidden}, group);
}

Tensor LstmLayer::step(const std::vector<Tensor>& inputs) {
  std::int64_t width = 0;
  for (const Tensor& x : inputs) width += x.shape.back();
  GOENV_CHECK(width == input_size_, InvalidArgument,
              scope_ << ": step inputs are " << width << " wide, the layer takes " << input_size_);
  t_.set_scope(scope_ + "/t" + std::to_string(step_++));
  std::vector<Tensor> xh = inputs;
  xh.push_back(h_);
  const Tensor gates = loop_matmul(t_, t_.concat(xh, group_), weight_, group_);
  const Shape shape = h_.shape;
  const Tensor i = activation(t_, "Sigmoid", gates, group_, shape);
  const Tensor j = activation(t_, "Tanh", gates, group_, shape);
  const Tensor f = activation(t_, "Sigmoid", gates, group_, shape);
  const Tensor o = activation(t_, "Sigmoid", gates, group_, shape);
  c_ = t_.add(multiply(t_, c_, f, group_), multiply(t_, i, j, group_), group_);
  h_ = multiply(t_, activation(t_, "Tanh", c_, group_), o, group_);
  return h_;
}

}  // namespace goenv
