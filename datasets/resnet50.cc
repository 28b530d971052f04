// ResNet-50 v1.5 (He et al., "Deep Residual Learning for Image Recognition", CVPR 2016) as one training step.
#include <string>

#include "datasets/registry.h"
#include "datasets/training_graph.h"

namespace goenv {
namespace {

// v1.5 (torchvision's layout) strides the 3x3 conv of a bottleneck instead of the first 1x1.
class ResNet50 {
 public:
  explicit ResNet50(TrainingGraphBuilder& t) : t_(t) {}

  GraphPtr build(int batch_size, int image_size, int num_classes) {
    block("conv1");
    Tensor x = t_.input({batch_size, image_size, image_size, 3}, "images", group_);
    x = conv_bn(x, 64, 7, 2, /*relu=*/true);
    x = t_.maxpool(x, 3, 2, "same", group_);
    const int units[] = {3, 4, 6, 3};
    for (int stage = 0; stage < 4; ++stage)
      for (int unit = 0; unit < units[stage]; ++unit) {
        block("block" + std::to_string(stage + 1) + "/unit_" + std::to_string(unit + 1));
        x = bottleneck(x, 64 << stage, unit == 0 && stage > 0 ? 2 : 1);
      }
    block("logits");
    x = t_.avgpool(x, static_cast<int>(x.shape[1]), 1, "valid", group_);
    x = t_.reshape(x, {x.shape[0], x.shape[3]}, group_);
    t_.softmax_cross_entropy(t_.dense(x, num_classes, group_), group_);
    return std::move(t_).finish();
  }

 private:
  void block(std::string name) {
    t_.set_scope(std::move(name));
    ++group_;
  }

  // Conv2D (no bias) + batchnorm (gamma and beta) [+ ReLU]; 'same' padding as torchvision's.
  Tensor conv_bn(const Tensor& x, int channels, int kernel, int stride, bool relu) {
    Tensor y = t_.batchnorm(t_.conv2d(x, channels, kernel, kernel, stride, "same", group_), group_, /*scale=*/true);
    return relu ? t_.relu(y, group_) : y;
  }

  // 1x1 -> 3x3 (strided) -> 1x1 x4, plus a projection shortcut where the shape changes.
  Tensor bottleneck(const Tensor& x, int width, int stride) {
    const Tensor shortcut = stride == 1 && x.shape[3] == 4 * width ? x : conv_bn(x, 4 * width, 1, stride, false);
    Tensor y = conv_bn(x, width, 1, 1, true);
    y = conv_bn(y, width, 3, stride, true);
    y = conv_bn(y, 4 * width, 1, 1, false);
    return t_.relu(t_.add(y, shortcut, group_), group_);
  }

  TrainingGraphBuilder& t_;
  int group_ = -1;
};

GraphPtr build_resnet50(const GraphParams& params) {
  const int batch_size = int_param(params, "batch_size", 1, 1 << 16);
  const int image_size = int_param(params, "image_size", 32, 4096);  // 32 leaves 1x1 before the pool
  const int num_classes = int_param(params, "num_classes", 1, 1 << 20);
  TrainingGraphBuilder t("resnet50");
  return ResNet50(t).build(batch_size, image_size, num_classes);
}

}  // namespace

// GO's placement table has no single-device entry; two GPUs as for Inception.
GOENV_REGISTER_GRAPH_FAMILY(resnet50_registered,
                            GraphFamily{/*name=*/"resnet50",
                                        /*description=*/"ResNet-50 v1.5 training step (224x224 images)",
                                        /*default_cluster=*/"2xgpu-nvlink",
                                        /*defaults=*/{{"batch_size", 64}, {"image_size", 224}, {"num_classes", 1000}},
                                        /*build=*/build_resnet50})

}  // namespace goenv
