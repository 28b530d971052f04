// A layer-level DSL that writes the graph of one *training step*: model code
// writes only the forward pass; finish() appends the backward pass and the
// optimizer updates, the way TensorFlow's gradients + optimizer.minimize() do.
//
//   TrainingGraphBuilder t("mlp");
//   Tensor x = t.input({batch, 784});
//   x = t.relu(t.dense(x, 256, /*group=*/0), 0);
//   t.softmax_cross_entropy(t.dense(x, 10, 1), 1);
//   GraphPtr graph = std::move(t).finish();
//
// What is emitted; the name prefix tells the phase (training_phase()):
//   fwd/<layer>          one forward op per layer; Input nodes for data and labels.
//   var/<weight>         one Variable per weight, param_bytes = its fp32 bytes.
//   bwd/<layer>/<op>     the layer's backward ops, emitted in reverse topological
//                        order. Each reads the gradient of the layer's output plus
//                        the forward activations and weights it needs (edges from
//                        them); the loss starts the pass. A tensor read by several
//                        layers gets its gradients summed by an AddN
//                        (bwd/<layer>/grad_sum). Tensors that need no gradient
//                        (data, and whatever depends on data only) get none, so
//                        e.g. the first conv has no Conv2DBackpropInput.
//   update/<weight>      one ApplyGradient per weight, reading its (summed)
//                        gradient and its Variable.
// A Variable and its ApplyGradient share a colocation id and nothing else does.
// Every node of a layer (forward, backward, its variables and updates) carries
// the layer's group.
//
// Units: tensors are fp32 (4 bytes per element), images NHWC; flops count FLOPs
// with a multiply-accumulate = 2. Conv2D = 2*N*Ho*Wo*Cout*kh*kw*Cin and each of
// its backward ops (input grad, filter grad) the same; MatMul likewise;
// elementwise ops 1 FLOP per element; batchnorm 5 forward, 8 backward; pooling
// kh*kw per output element. A Variable's output carries no bytes of its own
// (weights are resident, counted once in param_bytes); edges from it carry the
// weight's bytes. Batchnorm moving statistics and optimizer slots are not modelled.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"

namespace goenv {

using Shape = std::vector<std::int64_t>;

inline constexpr std::int64_t kBytesPerElement = 4;  // fp32
std::int64_t num_elements(const Shape& shape);

// A forward activation: the node that produces it and its shape.
struct Tensor {
  NodeId node = kNone;
  Shape shape;
};

// A trainable weight (a Variable node). Layers may share one (RNN time steps,
// tied embeddings); its gradients are then summed before the update.
struct Weight {
  int index = -1;  // also its colocation id
  NodeId node = kNone;
  Shape shape;
};

// One backward op of a layer. It reads the gradient of the layer's output and the
// forward tensors and weights listed; it produces the gradients listed. Indices
// refer to LayerSpec::inputs and LayerSpec::weights.
struct BackwardSpec {
  std::string name;       // suffix: bwd/<layer>/<name>
  std::string op_type;
  double flops = 0;
  std::vector<int> reads_inputs;
  bool reads_output = false;
  std::vector<int> reads_weights;
  std::vector<int> input_grads;
  std::vector<int> weight_grads;
};

// The generic layer: everything the ready-made layers below are written with.
struct LayerSpec {
  std::string name;       // full name after fwd/; empty = <scope>/<kind>[_<n>]
  std::string kind;       // name stem when `name` is empty, e.g. "conv2d"
  std::string op_type;    // forward op type (core/op_types.cc)
  double flops = 0;
  std::vector<Tensor> inputs;
  Shape output_shape;
  std::vector<Weight> weights;          // read by the forward op
  int group = kNone;
  std::vector<BackwardSpec> backward;
  std::vector<int> passthrough_grads;   // inputs whose gradient is the output's (Add, BiasAdd)
  bool is_loss = false;                 // its backward starts the backward pass
};

enum class TrainingPhase { kForward, kBackward, kVariable, kUpdate, kOther };
// The phase of a node built here, from its name prefix; kOther for other names.
TrainingPhase training_phase(std::string_view node_name);

class TrainingGraphBuilder {
 public:
  explicit TrainingGraphBuilder(std::string name) : builder_(std::move(name)) {}

  // Prefix for the names of the layers and weights that follow ("Mixed_5b").
  void set_scope(std::string scope) { scope_ = std::move(scope); }

  // Data; needs no gradient.
  Tensor input(Shape shape, std::string name = "input", int group = kNone);
  Weight variable(std::string name, Shape shape, int group);

  // padding: "same" or "valid"; kernels are kernel_h x kernel_w (TF-slim [h, w]).
  Tensor conv2d(const Tensor& x, int out_channels, int kernel_h, int kernel_w, int stride,
                std::string_view padding, int group);
  Tensor batchnorm(const Tensor& x, int group, bool scale = false);  // weights: beta (+ gamma)
  Tensor relu(const Tensor& x, int group);
  Tensor maxpool(const Tensor& x, int kernel, int stride, std::string_view padding, int group);
  Tensor avgpool(const Tensor& x, int kernel, int stride, std::string_view padding, int group);
  Tensor concat(const std::vector<Tensor>& xs, int group);  // along the last axis
  // MatMul over the last axis (leading axes flattened), then BiasAdd if `bias`.
  Tensor dense(const Tensor& x, int units, int group, bool bias = true);
  Tensor matmul(const Tensor& x, const Weight& kernel, int group);  // kernel (in, out)
  Tensor bias_add(const Tensor& x, int group);
  Tensor add(const Tensor& a, const Tensor& b, int group);
  Tensor reshape(const Tensor& x, Shape shape, int group);
  // Mean softmax cross-entropy of logits (batch, classes) against a labels input.
  Tensor softmax_cross_entropy(const Tensor& logits, int group);

  // Any other layer (embedding, layer norm, LSTM cell ...): records it and its weights'
  // reads; its backward ops are emitted by finish().
  Tensor add_layer(LayerSpec spec);

  // Emits the backward pass and the updates, validates, freezes. Needs a loss.
  GraphPtr finish() &&;

 private:
  struct Gradient {
    NodeId node;
    std::int64_t bytes;
  };
  struct Layer {
    LayerSpec spec;
    NodeId node;
    bool requires_grad;
    std::vector<Gradient> grads;  // contributions from the layers that read its output
  };
  struct Variable {
    std::string name;
    Shape shape;
    int group;
    NodeId node;
    std::vector<Gradient> grads;
  };

  std::string unique_name(const std::string& kind);
  Layer& layer_of(const Tensor& x);
  Gradient sum_gradients(const std::vector<Gradient>& grads, const std::string& name, const Shape& shape,
                         int group);
  void emit_backward(Layer& layer);
  Weight make_variable(std::string full_name, Shape shape, int group);
  Tensor matmul_layer(const Tensor& x, const Weight& kernel, int group, std::string name);
  Tensor bias_add_layer(const Tensor& x, int group, std::string name);
  Tensor pool(const Tensor& x, int kernel, int stride, std::string_view padding, int group, bool max);

  GraphBuilder builder_;
  std::string scope_;
  std::map<std::string, int> name_counts_;
  std::vector<Layer> layers_;
  std::vector<int> layer_index_;  // by NodeId; -1 for non-layer nodes
  std::vector<Variable> variables_;
  bool has_loss_ = false;
};

}  // namespace goenv
