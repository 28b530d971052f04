// WaveNet (van den Oord et al., "WaveNet: A Generative Model for Raw Audio", 2016), one training step.
#include <string>
#include <vector>

#include "datasets/recurrent.h"
#include "datasets/registry.h"

namespace goenv {
namespace {

constexpr int kLayersPerStack = 9;
constexpr int kQuantizationLevels = 256;

// Causal 1-D convolution over (batch, samples, channels), named <scope>/<kind> (one per kind and scope); the
// output keeps the length (left padding). Backward ops use the Conv2D backprop op types (no Conv1D ones in the
// vocabulary).
Tensor conv1d(TrainingGraphBuilder& t, const std::string& kind, const Tensor& x, int channels, int kernel, int group) {
  LayerSpec l;
  l.kind = kind;
  l.op_type = "Conv1D";
  l.inputs = {x};
  l.output_shape = {x.shape[0], x.shape[1], channels};
  l.flops = 2.0 * static_cast<double>(num_elements(l.output_shape)) * kernel * static_cast<double>(x.shape[2]);
  l.weights = {t.variable(kind + "/weights", {kernel, x.shape[2], channels}, group)};
  l.group = group;
  l.backward = {{"input_grad", "Conv2DBackpropInput", l.flops, {}, false, {0}, {0}, {}},
                {"filter_grad", "Conv2DBackpropFilter", l.flops, {0}, false, {}, {}, {0}}};
  return t.add_layer(std::move(l));
}

// Stacks of 9 dilated causal convolutions (dilation 1..256), gated tanh x sigmoid units, residual and skip 1x1
// convolutions, a softmax over 256 mu-law levels.
// Groups: 0 the input causal convolution, 1..layers the dilated layers, layers + 1 the output head.
GraphPtr build_wavenet(const GraphParams& params, int stacks) {
  const int batch = int_param(params, "batch_size", 1, 1 << 16);
  const int samples = int_param(params, "samples", 1, 1 << 24);
  const int channels = int_param(params, "channels", 1, 1 << 14);
  TrainingGraphBuilder t("wavenet-" + std::to_string(stacks));
  t.set_scope("input");
  Tensor x = conv1d(t, "causal_conv", t.input({batch, samples, kQuantizationLevels}, "one_hot_audio", 0), channels, 2, 0);
  std::vector<Tensor> skips;
  int group = 0;
  for (int s = 0; s < stacks; ++s)
    for (int i = 0; i < kLayersPerStack; ++i) {  // dilation 2^i: only the edge structure differs, not the costs
      ++group;
      t.set_scope("stack_" + std::to_string(s) + "/dilation_" + std::to_string(1 << i));
      const Tensor filter = activation(t, "Tanh", conv1d(t, "filter", x, channels, 2, group), group);
      const Tensor gate = activation(t, "Sigmoid", conv1d(t, "gate", x, channels, 2, group), group);
      const Tensor z = multiply(t, filter, gate, group);
      skips.push_back(conv1d(t, "skip", z, channels, 1, group));
      if (group < stacks * kLayersPerStack)  // the last layer's residual output would feed nothing
        x = t.add(x, conv1d(t, "residual", z, channels, 1, group), group);
    }
  ++group;
  t.set_scope("output");
  Tensor y = conv1d(t, "conv_1", t.relu(add_n(t, skips, group, "skip_sum"), group), channels, 1, group);
  y = conv1d(t, "conv_2", t.relu(y, group), kQuantizationLevels, 1, group);
  t.softmax_cross_entropy(t.reshape(y, {static_cast<std::int64_t>(batch) * samples, kQuantizationLevels}, group),
                          group);
  return std::move(t).finish();
}

GraphFamily wavenet_family(int stacks) {
  const std::string n = std::to_string(stacks);
  return GraphFamily{/*name=*/"wavenet-" + n,
                     /*description=*/"WaveNet training step, " + n + " stacks x 9 dilated layers, " + n + " GPUs",
                     /*default_cluster=*/n + "xgpu-nvlink",
                     /*defaults=*/{{"batch_size", 4}, {"samples", 16000}, {"channels", 256}},
                     /*build=*/[stacks](const GraphParams& params) { return build_wavenet(params, stacks); }};
}

}  // namespace

GOENV_REGISTER_GRAPH_FAMILY(wavenet_2_registered, wavenet_family(2))
GOENV_REGISTER_GRAPH_FAMILY(wavenet_4_registered, wavenet_family(4))

}  // namespace goenv
