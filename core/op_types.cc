#include "core/op_types.h"

#include "core/error.h"

namespace goenv {

const std::vector<OpTypeInfo>& op_types() {
  using K = FusibleKind;
  static const std::vector<OpTypeInfo> table = {
      {"Other", K::kOpaque},
      // Sources and state.
      {"Input", K::kOpaque}, {"Variable", K::kOpaque}, {"Constant", K::kOpaque},
      // Dense compute.
      {"Conv2D", K::kOpaque}, {"Conv2DBackpropInput", K::kOpaque},
      {"Conv2DBackpropFilter", K::kOpaque}, {"DepthwiseConv2D", K::kOpaque},
      {"MatMul", K::kOpaque}, {"BatchMatMul", K::kOpaque}, {"Conv1D", K::kOpaque},
      {"LSTMCell", K::kOpaque}, {"Embedding", K::kOpaque}, {"EmbeddingGrad", K::kOpaque},
      // Pooling and normalization.
      {"MaxPool", K::kOpaque}, {"AvgPool", K::kOpaque}, {"MaxPoolGrad", K::kOpaque},
      {"AvgPoolGrad", K::kOpaque}, {"BatchNorm", K::kReduction}, {"BatchNormGrad", K::kReduction},
      {"LayerNorm", K::kReduction}, {"LayerNormGrad", K::kReduction},
      // Elementwise.
      {"Add", K::kElementwise}, {"Mul", K::kElementwise}, {"Sub", K::kElementwise},
      {"Div", K::kElementwise}, {"Relu", K::kElementwise}, {"ReluGrad", K::kElementwise},
      {"Tanh", K::kElementwise}, {"Sigmoid", K::kElementwise}, {"Gelu", K::kElementwise},
      {"ActivationGrad", K::kElementwise}, {"BiasAdd", K::kElementwise},
      {"Dropout", K::kElementwise}, {"Cast", K::kElementwise},
      // Reductions.
      {"Softmax", K::kReduction}, {"SoftmaxGrad", K::kReduction}, {"Sum", K::kReduction},
      {"Mean", K::kReduction}, {"CrossEntropy", K::kReduction},
      {"CrossEntropyGrad", K::kReduction}, {"BiasAddGrad", K::kReduction},
      // Data movement.
      {"Concat", K::kOpaque}, {"Split", K::kOpaque}, {"Reshape", K::kElementwise},
      {"Transpose", K::kOpaque}, {"Slice", K::kOpaque}, {"Pad", K::kOpaque},
      {"Gather", K::kOpaque},
      // Training.
      {"AddN", K::kElementwise}, {"ApplyGradient", K::kElementwise},
      {"AllReduce", K::kOpaque},
  };
  return table;
}

int num_op_types() { return static_cast<int>(op_types().size()); }

int op_type_id(std::string_view name) {
  const auto& table = op_types();
  for (std::size_t i = 0; i < table.size(); ++i)
    if (table[i].name == name) return static_cast<int>(i);
  std::string known;
  for (const auto& info : table) known += (known.empty() ? "" : ", ") + std::string(info.name);
  GOENV_FAIL(NotFound, "unknown op type '" << name << "'; known op types: " << known);
}

const OpTypeInfo& op_type_info(int id) {
  GOENV_CHECK(id >= 0 && id < num_op_types(), InvalidArgument,
              "op type id " << id << " out of range [0, " << num_op_types() << ")");
  return op_types()[static_cast<std::size_t>(id)];
}

const char* fusible_kind_name(FusibleKind kind) {
  switch (kind) {
    case FusibleKind::kElementwise: return "elementwise";
    case FusibleKind::kReduction: return "reduction";
    case FusibleKind::kOpaque: return "opaque";
  }
  return "?";
}

}  // namespace goenv
