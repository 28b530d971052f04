// Inception-v3 (Szegedy et al., "Rethinking the Inception Architecture for
// Computer Vision", CVPR 2016) in the TF-slim layout (nets/inception_v3.py),
// without the auxiliary head and dropout, as one training step. Every conv is
// Conv2D (no bias) + batchnorm (beta only, as slim) + ReLU. Groups follow
// slim's end points: one per stem layer, one per Mixed block, one for logits.
#include <string>
#include <string_view>
#include <vector>

#include "datasets/registry.h"
#include "datasets/training_graph.h"

namespace goenv {
namespace {

class InceptionV3 {
 public:
  explicit InceptionV3(TrainingGraphBuilder& t) : t_(t) {}

  GraphPtr build(int batch_size, int image_size, int num_classes) {
    Tensor x = t_.input({batch_size, image_size, image_size, 3}, "images", 0);
    block("Conv2d_1a_3x3");
    x = conv(x, 32, 3, 3, 2, "valid");
    block("Conv2d_2a_3x3");
    x = conv(x, 32, 3, 3, 1, "valid");
    block("Conv2d_2b_3x3");
    x = conv(x, 64, 3, 3);
    block("MaxPool_3a_3x3");
    x = t_.maxpool(x, 3, 2, "valid", group_);
    block("Conv2d_3b_1x1");
    x = conv(x, 80, 1, 1, 1, "valid");
    block("Conv2d_4a_3x3");
    x = conv(x, 192, 3, 3, 1, "valid");
    block("MaxPool_5a_3x3");
    x = t_.maxpool(x, 3, 2, "valid", group_);

    block("Mixed_5b");
    x = inception_a(x, 32);
    block("Mixed_5c");
    x = inception_a(x, 64);
    block("Mixed_5d");
    x = inception_a(x, 64);
    block("Mixed_6a");
    x = reduction_a(x);
    int i = 0;
    for (int channels : {128, 160, 160, 192}) {
      block(std::string("Mixed_6") + "bcde"[i++]);
      x = inception_b(x, channels);
    }
    block("Mixed_7a");
    x = reduction_b(x);
    block("Mixed_7b");
    x = inception_c(x);
    block("Mixed_7c");
    x = inception_c(x);

    block("Logits");
    x = t_.avgpool(x, static_cast<int>(x.shape[1]), 1, "valid", group_);  // 8x8 at 299
    x = t_.reshape(x, {x.shape[0], x.shape[3]}, group_);
    t_.softmax_cross_entropy(t_.dense(x, num_classes, group_), group_);
    return std::move(t_).finish();
  }

 private:
  void block(std::string name) {
    t_.set_scope(std::move(name));
    ++group_;
  }

  Tensor conv(const Tensor& x, int channels, int kernel_h, int kernel_w, int stride = 1,
              std::string_view padding = "same") {
    Tensor y = t_.conv2d(x, channels, kernel_h, kernel_w, stride, padding, group_);
    return t_.relu(t_.batchnorm(y, group_), group_);
  }

  Tensor avg_pool_3x3(const Tensor& x) { return t_.avgpool(x, 3, 1, "same", group_); }

  Tensor inception_a(const Tensor& x, int pool_channels) {  // Mixed_5b..d, 35x35
    Tensor b0 = conv(x, 64, 1, 1);
    Tensor b1 = conv(conv(x, 48, 1, 1), 64, 5, 5);
    Tensor b2 = conv(conv(conv(x, 64, 1, 1), 96, 3, 3), 96, 3, 3);
    Tensor b3 = conv(avg_pool_3x3(x), pool_channels, 1, 1);
    return t_.concat({b0, b1, b2, b3}, group_);
  }

  Tensor reduction_a(const Tensor& x) {  // Mixed_6a, 35x35 -> 17x17
    Tensor b0 = conv(x, 384, 3, 3, 2, "valid");
    Tensor b1 = conv(conv(conv(x, 64, 1, 1), 96, 3, 3), 96, 3, 3, 2, "valid");
    Tensor b2 = t_.maxpool(x, 3, 2, "valid", group_);
    return t_.concat({b0, b1, b2}, group_);
  }

  Tensor inception_b(const Tensor& x, int c) {  // Mixed_6b..e, 17x17, factorized 7x7
    Tensor b0 = conv(x, 192, 1, 1);
    Tensor b1 = conv(conv(conv(x, c, 1, 1), c, 1, 7), 192, 7, 1);
    Tensor b2 = conv(conv(conv(conv(conv(x, c, 1, 1), c, 7, 1), c, 1, 7), c, 7, 1), 192, 1, 7);
    Tensor b3 = conv(avg_pool_3x3(x), 192, 1, 1);
    return t_.concat({b0, b1, b2, b3}, group_);
  }

  Tensor reduction_b(const Tensor& x) {  // Mixed_7a, 17x17 -> 8x8
    Tensor b0 = conv(conv(x, 192, 1, 1), 320, 3, 3, 2, "valid");
    Tensor b1 = conv(conv(conv(conv(x, 192, 1, 1), 192, 1, 7), 192, 7, 1), 192, 3, 3, 2, "valid");
    Tensor b2 = t_.maxpool(x, 3, 2, "valid", group_);
    return t_.concat({b0, b1, b2}, group_);
  }

  Tensor inception_c(const Tensor& x) {  // Mixed_7b..c, 8x8, expanded filter bank
    Tensor b0 = conv(x, 320, 1, 1);
    Tensor b1 = conv(x, 384, 1, 1);
    b1 = t_.concat({conv(b1, 384, 1, 3), conv(b1, 384, 3, 1)}, group_);
    Tensor b2 = conv(conv(x, 448, 1, 1), 384, 3, 3);
    b2 = t_.concat({conv(b2, 384, 1, 3), conv(b2, 384, 3, 1)}, group_);
    Tensor b3 = conv(avg_pool_3x3(x), 192, 1, 1);
    return t_.concat({b0, b1, b2, b3}, group_);
  }

  TrainingGraphBuilder& t_;
  int group_ = -1;  // block() starts at 0: the input shares group 0 with Conv2d_1a_3x3
};

GraphPtr build_inception(const GraphParams& params) {
  const int batch_size = int_param(params, "batch_size", 1, 1 << 16);
  // 75 is the smallest input whose 'valid' convs and pools all fit (as Keras).
  const int image_size = int_param(params, "image_size", 75, 4096);
  const int num_classes = int_param(params, "num_classes", 1, 1 << 20);
  TrainingGraphBuilder t("inception");
  return InceptionV3(t).build(batch_size, image_size, num_classes);
}

}  // namespace

GOENV_REGISTER_GRAPH_FAMILY(inception_registered,
                            GraphFamily{/*name=*/"inception",
                                        /*description=*/"Inception-v3 training step (TF-slim, 299x299 images)",
                                        /*default_cluster=*/"2xgpu-nvlink",
                                        /*defaults=*/{{"batch_size", 64}, {"image_size", 299}, {"num_classes", 1000}},
                                        /*build=*/build_inception})

}  // namespace goenv
