// AmoebaNet-A (Real et al., "Regularized Evolution for Image Classifier Architecture Search", AAAI 2019) training step.
#include <array>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "datasets/registry.h"
#include "datasets/training_graph.h"

namespace goenv {
namespace {

enum class Op { kNone, kAvgPool3x3, kMaxPool3x3, kSeparable3x3, kSeparable5x5, kSeparable7x7, kConv1x7_7x1 };

// A cell makes 5 hidden states, each the sum of two ops applied to earlier ones
// (0: this cell's input, 1: the previous cell's input); the states no op reads are
// concatenated into the output.
struct Cell {
  std::array<Op, 10> ops;      // left and right op of each of the 5 sums
  std::array<int, 10> inputs;  // the hidden state each op reads
  std::array<bool, 7> used;
};

// amoeba_net_a in model_specs.py.
const Cell kNormalCell = {
    {Op::kAvgPool3x3, Op::kMaxPool3x3, Op::kSeparable3x3, Op::kNone, Op::kNone, Op::kAvgPool3x3, Op::kSeparable3x3,
     Op::kSeparable5x5, Op::kAvgPool3x3, Op::kSeparable3x3},
    {0, 0, 1, 1, 0, 1, 0, 2, 5, 0},
    {true, false, true, false, false, true, false}};
const Cell kReductionCell = {
    {Op::kSeparable3x3, Op::kAvgPool3x3, Op::kMaxPool3x3, Op::kSeparable7x7, Op::kMaxPool3x3, Op::kMaxPool3x3,
     Op::kSeparable3x3, Op::kConv1x7_7x1, Op::kAvgPool3x3, Op::kSeparable7x7},
    {1, 0, 0, 2, 1, 0, 4, 0, 1, 0},
    {true, true, false, false, false, false, false}};

constexpr int kStemFilters = 32;

// As the authors' TensorFlow code builds it (tensorflow/tpu models/official/amoeba_net):
// an ImageNet stem (conv + 2 reduction cells), then 3 stacks of `cells_per_stack` normal
// cells with a reduction cell between stacks, each doubling the filters. Left out: the
// auxiliary head, dropout and drop-path.
class AmoebaNet {
 public:
  explicit AmoebaNet(TrainingGraphBuilder& t) : t_(t) {}

  GraphPtr build(int batch_size, int image_size, int cells_per_stack, int filters, int num_classes) {
    block("stem");
    Tensor x = t_.input({batch_size, image_size, image_size, 3}, "images", group_);
    x = bn(t_.conv2d(x, kStemFilters, 3, 3, 2, "valid", group_));
    // Two reduction cells at 1/4 and 1/2 the filters finish the ImageNet stem.
    Tensor prev = x;  // the first cell has no previous one (prev == x)
    for (int i = 0; i < 2; ++i) {
      block("cell_stem_" + std::to_string(i));
      prev = std::exchange(x, cell(kReductionCell, x, prev, filters / (4 >> i), 2));
    }
    int scaling = 1;
    for (int stack = 0; stack < 3; ++stack) {
      if (stack > 0) {
        scaling *= 2;
        block("reduction_cell_" + std::to_string(stack - 1));
        prev = std::exchange(x, cell(kReductionCell, x, prev, filters * scaling, 2));
      }
      for (int i = 0; i < cells_per_stack; ++i) {
        block("cell_" + std::to_string(stack * cells_per_stack + i));
        prev = std::exchange(x, cell(kNormalCell, x, prev, filters * scaling, 1));
      }
    }
    block("final_layer");
    x = t_.avgpool(relu(x), static_cast<int>(x.shape[1]), 1, "valid", group_);
    x = t_.reshape(x, {x.shape[0], x.shape[3]}, group_);
    t_.softmax_cross_entropy(t_.dense(x, num_classes, group_), group_);
    return std::move(t_).finish();
  }

 private:
  void block(std::string name) {
    scope_ = name;
    t_.set_scope(std::move(name));
    ++group_;
  }

  Tensor relu(const Tensor& x) { return t_.relu(x, group_); }
  Tensor bn(const Tensor& x) { return t_.batchnorm(x, group_, /*scale=*/true); }
  Tensor conv1x1(const Tensor& x, int channels, int stride = 1) {
    return t_.conv2d(x, channels, 1, 1, stride, "same", group_);
  }

  // 'same' Conv2D with separate strides per axis, or DepthwiseConv2D (channel
  // multiplier 1). The vocabulary has no depthwise backward ops: the depthwise
  // gradients use Conv2DBackpropInput/Filter with the depthwise FLOPs.
  Tensor conv(const Tensor& x, int channels, int kernel_h, int kernel_w, int stride_h, int stride_w, bool depthwise) {
    const Shape& s = x.shape;
    const std::string kind = depthwise ? "depthwise_conv2d" : "conv2d_" + std::to_string(kernel_h) + "x" +
                                                                  std::to_string(kernel_w);
    const int n = name_counts_[scope_ + "/" + kind]++;
    const std::string local = n == 0 ? kind : kind + "_" + std::to_string(n);
    LayerSpec l;
    l.name = scope_ + "/" + local;
    l.op_type = depthwise ? "DepthwiseConv2D" : "Conv2D";
    l.inputs = {x};
    l.output_shape = {s[0], (s[1] + stride_h - 1) / stride_h, (s[2] + stride_w - 1) / stride_w,
                      depthwise ? s[3] : channels};
    l.flops = 2.0 * static_cast<double>(num_elements(l.output_shape)) * kernel_h * kernel_w * (depthwise ? 1 : s[3]);
    l.weights = {t_.variable(local + "/weights", {kernel_h, kernel_w, s[3], depthwise ? 1 : channels}, group_)};
    l.group = group_;
    l.backward = {{"input_grad", "Conv2DBackpropInput", l.flops, {}, false, {0}, {0}, {}},
                  {"filter_grad", "Conv2DBackpropFilter", l.flops, {0}, false, {}, {}, {0}}};
    return t_.add_layer(std::move(l));
  }

  // Shifts the image one pixel up and left (TF: pad bottom/right, slice off top/left).
  Tensor shift(const Tensor& x) {
    LayerSpec l;
    l.kind = "shift";
    l.op_type = "Pad";
    l.inputs = {x};
    l.output_shape = x.shape;
    l.group = group_;
    l.backward = {{"grad", "Slice", 0, {}, false, {}, {0}, {}}};
    return t_.add_layer(std::move(l));
  }

  // Halves the image without dropping pixels: two 1x1 convs on the image and on it
  // shifted by one pixel, each strided 2, concatenated.
  Tensor factorized_reduction(const Tensor& x, int channels, int stride) {
    if (stride == 1) return bn(conv1x1(x, channels));
    const Tensor a = conv1x1(t_.avgpool(x, 1, 2, "valid", group_), channels / 2);
    const Tensor b = conv1x1(t_.avgpool(shift(x), 1, 2, "valid", group_), channels - channels / 2);
    return bn(t_.concat({a, b}, group_));
  }

  // The previous cell's output brought to this cell's image size and width.
  Tensor reduce_prev(const Tensor& prev, const Tensor& x, int filters) {
    if (prev.node == x.node) return prev;
    if (prev.shape[2] != x.shape[2]) return factorized_reduction(relu(prev), filters, 2);
    if (prev.shape[3] != filters) return bn(conv1x1(relu(prev), filters));
    return prev;
  }

  Tensor separable(Tensor x, int kernel, int stride, int filters) {
    for (int layer = 0; layer < 2; ++layer, stride = 1)
      x = bn(conv1x1(conv(relu(x), 0, kernel, kernel, stride, stride, /*depthwise=*/true), filters));
    return x;
  }

  Tensor apply(Op op, const Tensor& x, int stride, int filters) {
    const bool same_width = x.shape[3] == filters;
    switch (op) {
      case Op::kNone:
        return stride == 1 && same_width ? x : bn(conv1x1(relu(x), filters, stride));
      case Op::kAvgPool3x3:
      case Op::kMaxPool3x3: {
        const Tensor y = op == Op::kMaxPool3x3 ? t_.maxpool(x, 3, stride, "same", group_)
                                               : t_.avgpool(x, 3, stride, "same", group_);
        return same_width ? y : bn(conv1x1(y, filters));
      }
      case Op::kSeparable3x3: return separable(x, 3, stride, filters);
      case Op::kSeparable5x5: return separable(x, 5, stride, filters);
      case Op::kSeparable7x7: return separable(x, 7, stride, filters);
      case Op::kConv1x7_7x1: {  // in a bottleneck of a quarter of the filters
        const int reduced = filters / 4;
        Tensor y = relu(bn(conv1x1(relu(x), reduced)));
        y = relu(bn(conv(y, reduced, 1, 7, 1, stride, false)));
        y = relu(bn(conv(y, reduced, 7, 1, stride, 1, false)));
        return bn(conv1x1(y, filters));
      }
    }
    GOENV_FAIL(InvalidArgument, "unknown AmoebaNet op " << static_cast<int>(op));
  }

  Tensor cell(const Cell& spec, const Tensor& x, const Tensor& prev, int filters, int stride) {
    const Tensor reduced_prev = reduce_prev(prev, x, filters);
    std::vector<Tensor> h = {bn(conv1x1(relu(x), filters)), reduced_prev};
    for (int i = 0; i < 10; i += 2) {
      const auto op_stride = [&](int j) { return spec.inputs[j] < 2 ? stride : 1; };
      const Tensor left = apply(spec.ops[i], h[spec.inputs[i]], op_stride(i), filters);
      const Tensor right = apply(spec.ops[i + 1], h[spec.inputs[i + 1]], op_stride(i + 1), filters);
      h.push_back(t_.add(left, right, group_));
    }
    const Shape last = h.back().shape;
    std::vector<Tensor> outputs;
    for (int i = 0; i < 7; ++i) {
      if (spec.used[i]) continue;
      if (h[i].shape[2] != last[2] || h[i].shape[3] != last[3])
        h[i] = factorized_reduction(h[i], static_cast<int>(last[3]), h[i].shape[2] != last[2] ? 2 : 1);
      outputs.push_back(h[i]);
    }
    return t_.concat(outputs, group_);
  }

  TrainingGraphBuilder& t_;
  std::string scope_;
  std::map<std::string, int> name_counts_;
  int group_ = -1;
};

GraphPtr build_amoebanet(const GraphParams& params) {
  const int batch_size = int_param(params, "batch_size", 1, 1 << 16);
  const int image_size = int_param(params, "image_size", 32, 4096);
  const int num_cells = int_param(params, "num_cells", 1, 64);
  // 16 at least: the stem's first reduction cell has filters / 4 and its 1x7-7x1 bottleneck a quarter of that.
  const int filters = int_param(params, "filters", 16, 4096);
  const int num_classes = int_param(params, "num_classes", 1, 1 << 20);
  TrainingGraphBuilder t("amoebanet");
  return AmoebaNet(t).build(batch_size, image_size, num_cells, filters, num_classes);
}

}  // namespace

GOENV_REGISTER_GRAPH_FAMILY(amoebanet_registered,
                            GraphFamily{/*name=*/"amoebanet",
                                        /*description=*/"AmoebaNet-A training step (N=6, F=190, 224x224 images)",
                                        /*default_cluster=*/"4xgpu-nvlink",
                                        /*defaults=*/{{"batch_size", 64},
                                                      {"image_size", 224},
                                                      {"num_cells", 6},
                                                      {"filters", 190},
                                                      {"num_classes", 1000}},
                                        /*build=*/build_amoebanet})

}  // namespace goenv
