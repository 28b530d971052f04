#include "datasets/training_graph.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace goenv {

namespace {

std::int64_t bytes_of(const Shape& shape) { return num_elements(shape) * kBytesPerElement; }

std::int64_t window_output_size(std::int64_t size, int kernel, int stride, std::string_view padding) {
  GOENV_CHECK(kernel >= 1 && stride >= 1, InvalidArgument,
              "kernel and stride must be >= 1, got " << kernel << " and " << stride);
  if (padding == "same") return (size + stride - 1) / stride;
  GOENV_CHECK(padding == "valid", InvalidArgument, "padding must be 'same' or 'valid', got '" << padding << "'");
  GOENV_CHECK(size >= kernel, InvalidArgument,
              "a 'valid' window of " << kernel << " does not fit a spatial size of " << size);
  return (size - kernel) / stride + 1;
}

void check_rank(const Tensor& x, std::size_t rank, const char* op) {
  GOENV_CHECK(x.shape.size() == rank, InvalidArgument,
              op << " needs a rank-" << rank << " input, got rank " << x.shape.size());
}

}  // namespace

std::int64_t num_elements(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    GOENV_CHECK(d >= 1, InvalidArgument, "tensor dimensions must be >= 1, got " << d);
    n *= d;
  }
  return n;
}

TrainingPhase training_phase(std::string_view node_name) {
  auto starts = [&](std::string_view prefix) { return node_name.substr(0, prefix.size()) == prefix; };
  if (starts("fwd/")) return TrainingPhase::kForward;
  if (starts("bwd/")) return TrainingPhase::kBackward;
  if (starts("var/")) return TrainingPhase::kVariable;
  if (starts("update/")) return TrainingPhase::kUpdate;
  return TrainingPhase::kOther;
}

std::string TrainingGraphBuilder::unique_name(const std::string& kind) {
  const std::string base = scope_.empty() ? kind : scope_ + "/" + kind;
  const int n = name_counts_[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

TrainingGraphBuilder::Layer& TrainingGraphBuilder::layer_of(const Tensor& x) {
  GOENV_CHECK(x.node >= 0 && x.node < static_cast<NodeId>(layer_index_.size()) && layer_index_[x.node] >= 0,
              InvalidArgument, "node " << x.node << " is not a forward activation of this training graph");
  return layers_[layer_index_[x.node]];
}

Tensor TrainingGraphBuilder::input(Shape shape, std::string name, int group) {
  LayerSpec l;
  l.name = unique_name(name);
  l.op_type = "Input";
  l.output_shape = std::move(shape);
  l.group = group;
  return add_layer(std::move(l));
}

Weight TrainingGraphBuilder::variable(std::string name, Shape shape, int group) {
  return make_variable(scope_.empty() ? std::move(name) : scope_ + "/" + name, std::move(shape), group);
}

Weight TrainingGraphBuilder::make_variable(std::string name, Shape shape, int group) {
  const auto index = static_cast<std::int32_t>(variables_.size());
  NodeSpec n;
  n.name = "var/" + name;
  n.op_type = op_type_id("Variable");
  n.param_bytes = bytes_of(shape);
  n.shape = shape;
  n.group = group;
  n.colocation = index;
  const NodeId node = builder_.add_node(std::move(n));
  variables_.push_back({std::move(name), shape, group, node, {}});
  return {index, node, std::move(shape)};
}

Tensor TrainingGraphBuilder::add_layer(LayerSpec spec) {
  if (spec.name.empty()) spec.name = unique_name(spec.kind.empty() ? spec.op_type : spec.kind);
  const auto in_range = [](int i, std::size_t n) { return i >= 0 && static_cast<std::size_t>(i) < n; };
  bool requires_grad = !spec.weights.empty();
  for (const Tensor& x : spec.inputs) requires_grad |= layer_of(x).requires_grad;
  for (const Weight& w : spec.weights)
    GOENV_CHECK(in_range(w.index, variables_.size()) && variables_[w.index].node == w.node, InvalidArgument,
                spec.name << ": weight " << w.index << " is not a variable of this training graph");
  for (const BackwardSpec& b : spec.backward) {
    for (const auto* list : {&b.reads_inputs, &b.input_grads})
      for (int i : *list)
        GOENV_CHECK(in_range(i, spec.inputs.size()), InvalidArgument,
                    spec.name << "/" << b.name << ": input index " << i << " out of range");
    for (const auto* list : {&b.reads_weights, &b.weight_grads})
      for (int w : *list)
        GOENV_CHECK(in_range(w, spec.weights.size()), InvalidArgument,
                    spec.name << "/" << b.name << ": weight index " << w << " out of range");
  }
  for (int i : spec.passthrough_grads)
    GOENV_CHECK(in_range(i, spec.inputs.size()), InvalidArgument,
                spec.name << ": passthrough input index " << i << " out of range");

  NodeSpec n;
  n.name = "fwd/" + spec.name;
  n.op_type = op_type_id(spec.op_type);
  n.flops = spec.flops;
  n.output_bytes = bytes_of(spec.output_shape);
  n.shape = spec.output_shape;
  n.group = spec.group;
  const NodeId node = builder_.add_node(std::move(n));
  for (const Tensor& x : spec.inputs) builder_.add_edge(x.node, node);
  for (const Weight& w : spec.weights) builder_.add_edge(w.node, node, bytes_of(w.shape));

  layer_index_.resize(node + 1, -1);
  layer_index_[node] = static_cast<int>(layers_.size());
  has_loss_ |= spec.is_loss;
  Tensor out{node, spec.output_shape};
  layers_.push_back({std::move(spec), node, requires_grad, {}});
  return out;
}

Tensor TrainingGraphBuilder::conv2d(const Tensor& x, int out_channels, int kernel_h, int kernel_w, int stride,
                                    std::string_view padding, int group) {
  check_rank(x, 4, "conv2d");
  GOENV_CHECK(out_channels >= 1, InvalidArgument, "conv2d: out_channels must be >= 1, got " << out_channels);
  const Shape& s = x.shape;
  LayerSpec l;
  l.name = unique_name("conv2d");
  l.op_type = "Conv2D";
  l.inputs = {x};
  l.output_shape = {s[0], window_output_size(s[1], kernel_h, stride, padding),
                    window_output_size(s[2], kernel_w, stride, padding), out_channels};
  l.flops = 2.0 * static_cast<double>(num_elements(l.output_shape)) * kernel_h * kernel_w * s[3];
  l.weights = {make_variable(l.name + "/weights", {kernel_h, kernel_w, s[3], out_channels}, group)};
  l.group = group;
  //             name           op type                 flops    reads inputs/output/weights  grads of inputs/weights
  l.backward = {{"input_grad", "Conv2DBackpropInput", l.flops, {}, false, {0}, {0}, {}},
                {"filter_grad", "Conv2DBackpropFilter", l.flops, {0}, false, {}, {}, {0}}};
  return add_layer(std::move(l));
}

Tensor TrainingGraphBuilder::batchnorm(const Tensor& x, int group, bool scale) {
  LayerSpec l;
  l.name = unique_name("batchnorm");
  l.op_type = "BatchNorm";
  l.inputs = {x};
  l.output_shape = x.shape;
  const double elements = static_cast<double>(num_elements(x.shape));
  l.flops = 5 * elements;
  const Shape channels = {x.shape.back()};
  if (scale) l.weights.push_back(make_variable(l.name + "/gamma", channels, group));
  l.weights.push_back(make_variable(l.name + "/beta", channels, group));
  l.group = group;
  std::vector<int> all_weights = scale ? std::vector<int>{0, 1} : std::vector<int>{0};
  std::vector<int> reads_gamma = scale ? std::vector<int>{0} : std::vector<int>{};
  l.backward = {{"grad", "BatchNormGrad", 8 * elements, {0}, true, reads_gamma, {0}, all_weights}};
  return add_layer(std::move(l));
}

Tensor TrainingGraphBuilder::relu(const Tensor& x, int group) {
  LayerSpec l;
  l.kind = "relu";
  l.op_type = "Relu";
  l.inputs = {x};
  l.output_shape = x.shape;
  l.flops = static_cast<double>(num_elements(x.shape));
  l.group = group;
  l.backward = {{"grad", "ReluGrad", l.flops, {}, true, {}, {0}, {}}};
  return add_layer(std::move(l));
}

Tensor TrainingGraphBuilder::pool(const Tensor& x, int kernel, int stride, std::string_view padding, int group,
                                  bool max) {
  check_rank(x, 4, max ? "maxpool" : "avgpool");
  const Shape& s = x.shape;
  LayerSpec l;
  l.kind = max ? "maxpool" : "avgpool";
  l.op_type = max ? "MaxPool" : "AvgPool";
  l.inputs = {x};
  l.output_shape = {s[0], window_output_size(s[1], kernel, stride, padding),
                    window_output_size(s[2], kernel, stride, padding), s[3]};
  l.flops = static_cast<double>(num_elements(l.output_shape)) * kernel * kernel;
  l.group = group;
  if (max)
    l.backward = {{"grad", "MaxPoolGrad", l.flops, {0}, true, {}, {0}, {}}};
  else
    l.backward = {{"grad", "AvgPoolGrad", l.flops, {}, false, {}, {0}, {}}};
  return add_layer(std::move(l));
}

Tensor TrainingGraphBuilder::maxpool(const Tensor& x, int kernel, int stride, std::string_view padding, int group) {
  return pool(x, kernel, stride, padding, group, true);
}

Tensor TrainingGraphBuilder::avgpool(const Tensor& x, int kernel, int stride, std::string_view padding, int group) {
  return pool(x, kernel, stride, padding, group, false);
}

Tensor TrainingGraphBuilder::concat(const std::vector<Tensor>& xs, int group) {
  GOENV_CHECK(!xs.empty(), InvalidArgument, "concat needs at least one input");
  LayerSpec l;
  l.kind = "concat";
  l.op_type = "Concat";
  l.inputs = xs;
  l.output_shape = xs[0].shape;
  l.output_shape.back() = 0;
  BackwardSpec split{"grad", "Split", 0, {}, false, {}, {}, {}};
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const Shape& s = xs[i].shape;
    GOENV_CHECK(s.size() == xs[0].shape.size() && std::equal(s.begin(), s.end() - 1, xs[0].shape.begin()),
                InvalidArgument, "concat: input " << i << " differs from input 0 in a non-last dimension");
    l.output_shape.back() += s.back();
    split.input_grads.push_back(static_cast<int>(i));
  }
  l.group = group;
  l.backward = {std::move(split)};
  return add_layer(std::move(l));
}

Tensor TrainingGraphBuilder::matmul(const Tensor& x, const Weight& kernel, int group) {
  return matmul_layer(x, kernel, group, unique_name("matmul"));
}

Tensor TrainingGraphBuilder::matmul_layer(const Tensor& x, const Weight& kernel, int group, std::string name) {
  GOENV_CHECK(!x.shape.empty() && kernel.shape.size() == 2 && kernel.shape[0] == x.shape.back(),
              InvalidArgument, name << ": kernel must be (" << (x.shape.empty() ? 0 : x.shape.back())
                                    << ", units) for this input");
  LayerSpec l;
  l.name = std::move(name);
  l.op_type = "MatMul";
  l.inputs = {x};
  l.output_shape = x.shape;
  l.output_shape.back() = kernel.shape[1];
  l.flops = 2.0 * static_cast<double>(num_elements(x.shape)) * static_cast<double>(kernel.shape[1]);
  l.weights = {kernel};
  l.group = group;
  l.backward = {{"input_grad", "MatMul", l.flops, {}, false, {0}, {0}, {}},
                {"weight_grad", "MatMul", l.flops, {0}, false, {}, {}, {0}}};
  return add_layer(std::move(l));
}

Tensor TrainingGraphBuilder::dense(const Tensor& x, int units, int group, bool bias) {
  GOENV_CHECK(!x.shape.empty() && units >= 1, InvalidArgument, "dense: needs a non-scalar input and units >= 1");
  const std::string name = unique_name("dense");
  const Tensor y = matmul_layer(x, make_variable(name + "/weights", {x.shape.back(), units}, group), group, name);
  return bias ? bias_add_layer(y, group, name + "/bias_add") : y;
}

Tensor TrainingGraphBuilder::bias_add(const Tensor& x, int group) {
  return bias_add_layer(x, group, unique_name("bias_add"));
}

Tensor TrainingGraphBuilder::bias_add_layer(const Tensor& x, int group, std::string name) {
  GOENV_CHECK(!x.shape.empty(), InvalidArgument, name << ": bias_add needs a non-scalar input");
  LayerSpec l;
  l.name = std::move(name);
  l.op_type = "BiasAdd";
  l.inputs = {x};
  l.output_shape = x.shape;
  l.flops = static_cast<double>(num_elements(x.shape));
  l.weights = {make_variable(l.name + "/biases", {x.shape.back()}, group)};
  l.group = group;
  l.passthrough_grads = {0};
  l.backward = {{"bias_grad", "BiasAddGrad", l.flops, {}, false, {}, {}, {0}}};
  return add_layer(std::move(l));
}

Tensor TrainingGraphBuilder::add(const Tensor& a, const Tensor& b, int group) {
  GOENV_CHECK(a.shape == b.shape, InvalidArgument, "add: inputs must have the same shape");
  LayerSpec l;
  l.kind = "add";
  l.op_type = "Add";
  l.inputs = {a, b};
  l.output_shape = a.shape;
  l.flops = static_cast<double>(num_elements(a.shape));
  l.group = group;
  l.passthrough_grads = {0, 1};
  return add_layer(std::move(l));
}

Tensor TrainingGraphBuilder::reshape(const Tensor& x, Shape shape, int group) {
  GOENV_CHECK(num_elements(shape) == num_elements(x.shape), InvalidArgument,
              "reshape: " << num_elements(x.shape) << " elements cannot become " << num_elements(shape));
  LayerSpec l;
  l.kind = "reshape";
  l.op_type = "Reshape";
  l.inputs = {x};
  l.output_shape = std::move(shape);
  l.group = group;
  l.backward = {{"grad", "Reshape", 0, {}, false, {}, {0}, {}}};
  return add_layer(std::move(l));
}

Tensor TrainingGraphBuilder::softmax_cross_entropy(const Tensor& logits, int group) {
  check_rank(logits, 2, "softmax_cross_entropy");
  Tensor labels = input({logits.shape[0]}, "labels", group);
  LayerSpec l;
  l.kind = "loss";
  l.op_type = "CrossEntropy";
  l.inputs = {logits, labels};
  l.output_shape = {1};
  const double elements = static_cast<double>(num_elements(logits.shape));
  l.flops = 5 * elements;
  l.group = group;
  l.is_loss = true;
  l.backward = {{"grad", "CrossEntropyGrad", 3 * elements, {0, 1}, true, {}, {0}, {}}};
  return add_layer(std::move(l));
}

TrainingGraphBuilder::Gradient TrainingGraphBuilder::sum_gradients(const std::vector<Gradient>& grads,
                                                                   const std::string& name, const Shape& shape,
                                                                   int group) {
  if (grads.size() == 1) return grads[0];
  NodeSpec n;
  n.name = name;
  n.op_type = op_type_id("AddN");
  n.flops = static_cast<double>(grads.size() - 1) * static_cast<double>(num_elements(shape));
  n.output_bytes = bytes_of(shape);
  n.shape = shape;
  n.group = group;
  const NodeId node = builder_.add_node(std::move(n));
  for (const Gradient& g : grads) builder_.add_edge(g.node, node, g.bytes);
  return {node, bytes_of(shape)};
}

void TrainingGraphBuilder::emit_backward(Layer& layer) {
  const LayerSpec& s = layer.spec;
  if (layer.grads.empty() && !s.is_loss) return;  // not on a path to a loss
  const std::string prefix = "bwd/" + s.name + "/";
  const bool has_dy = !layer.grads.empty();  // a loss starts with an implicit gradient of 1
  const Gradient dy = has_dy ? sum_gradients(layer.grads, prefix + "grad_sum", s.output_shape, s.group)
                             : Gradient{kNone, 0};
  const auto needs_grad = [&](int i) { return layer_of(s.inputs[i]).requires_grad; };
  if (has_dy)
    for (int i : s.passthrough_grads)
      if (needs_grad(i)) layer_of(s.inputs[i]).grads.push_back(dy);

  for (const BackwardSpec& b : s.backward) {
    std::vector<int> inputs;
    for (int i : b.input_grads)
      if (needs_grad(i)) inputs.push_back(i);
    if (inputs.empty() && b.weight_grads.empty()) continue;
    NodeSpec n;
    n.name = prefix + b.name;
    n.op_type = op_type_id(b.op_type);
    n.flops = b.flops;
    for (int i : inputs) n.output_bytes += bytes_of(s.inputs[i].shape);
    for (int w : b.weight_grads) n.output_bytes += bytes_of(s.weights[w].shape);
    n.shape = inputs.empty() ? s.weights[b.weight_grads[0]].shape : s.inputs[inputs[0]].shape;
    n.group = s.group;
    const NodeId node = builder_.add_node(std::move(n));
    if (has_dy) builder_.add_edge(dy.node, node, dy.bytes);
    for (int i : b.reads_inputs) builder_.add_edge(s.inputs[i].node, node);
    if (b.reads_output) builder_.add_edge(layer.node, node);
    for (int w : b.reads_weights) builder_.add_edge(s.weights[w].node, node, bytes_of(s.weights[w].shape));
    for (int i : inputs) layer_of(s.inputs[i]).grads.push_back({node, bytes_of(s.inputs[i].shape)});
    for (int w : b.weight_grads)
      variables_[s.weights[w].index].grads.push_back({node, bytes_of(s.weights[w].shape)});
  }
}

GraphPtr TrainingGraphBuilder::finish() && {
  GOENV_CHECK(has_loss_, InvalidArgument,
              "training graph has no loss: add softmax_cross_entropy() (or a layer with is_loss) before finish()");
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) emit_backward(*it);
  for (std::size_t i = 0; i < variables_.size(); ++i) {
    const Variable& v = variables_[i];
    if (v.grads.empty()) continue;  // not on a path to a loss
    const Gradient grad = sum_gradients(v.grads, "bwd/" + v.name + "/grad_sum", v.shape, v.group);
    NodeSpec n;
    n.name = "update/" + v.name;
    n.op_type = op_type_id("ApplyGradient");
    n.flops = 2.0 * static_cast<double>(num_elements(v.shape));
    n.shape = v.shape;
    n.group = v.group;
    n.colocation = static_cast<std::int32_t>(i);
    const NodeId node = builder_.add_node(std::move(n));
    builder_.add_edge(grad.node, node, grad.bytes);
    builder_.add_edge(v.node, node, bytes_of(v.shape));
  }
  return std::move(builder_).build();
}

}  // namespace goenv
