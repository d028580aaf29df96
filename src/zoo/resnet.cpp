// ResNet-50/101/152 as torchvision builds them (v1.5: the stride sits on the
// 3x3 conv), and the paper's WResNet: every channel count times a width.

#include <string>

#include "util/error.h"
#include "zoo/layers.h"
#include "zoo/models.h"

namespace sa::zoo {
namespace {

// conv -> batch norm, named like torchvision's modules (convN / bnN).
Var conv_bn(Builder& b, const std::string& conv, const std::string& bn, const Var& x,
            const ConvSpec& spec) {
  return batch_norm(b, bn, conv2d(b, conv, x, spec));
}

Var bottleneck(Builder& b, const std::string& name, const Var& x, int64_t planes, int stride,
               bool downsample) {
  Var out = relu_(b, conv_bn(b, name + ".conv1", name + ".bn1", x, conv_spec(planes, 1)));
  out = relu_(b, conv_bn(b, name + ".conv2", name + ".bn2", out, conv_spec(planes, 3, stride, 1)));
  out = conv_bn(b, name + ".conv3", name + ".bn3", out, conv_spec(planes * 4, 1));
  Var identity = x;
  if (downsample)
    identity = conv_bn(b, name + ".downsample.0", name + ".downsample.1", x,
                       conv_spec(planes * 4, 1, stride));
  return relu_(b, add_(b, out, identity));
}

}  // namespace

Graph build_resnet(const BuildContext& c, int depth, int width, int image) {
  int blocks[4];
  switch (depth) {
    case 50:
      blocks[0] = 3, blocks[1] = 4, blocks[2] = 6, blocks[3] = 3;
      break;
    case 101:
      blocks[0] = 3, blocks[1] = 4, blocks[2] = 23, blocks[3] = 3;
      break;
    case 152:
      blocks[0] = 3, blocks[1] = 8, blocks[2] = 36, blocks[3] = 3;
      break;
    default:
      throw Error("ResNet depth must be 50, 101 or 152, got " + std::to_string(depth));
  }
  Builder b(c.graph_name,
            "swapadvisor zoo: torchvision ResNet-" + std::to_string(depth) +
                (width != 1 ? " with channel widths x" + std::to_string(width) : "") + ", " +
                std::to_string(image) + "x" + std::to_string(image) + ", 1000 classes",
            c.optimizer, c.precision);
  const int64_t n = c.batch, w = width;
  Var x = b.input("data", {n, 3, image, image});
  Var labels = b.input("labels", {n}, DType::kI64);

  x = relu_(b, conv_bn(b, "conv1", "bn1", x, conv_spec(64 * w, 7, 2, 3)));
  x = max_pool2d(b, x, 3, 2, 1);
  int64_t inplanes = 64 * w;
  for (int layer = 0; layer < 4; ++layer) {
    const int64_t planes = (int64_t{64} << layer) * w;
    const int stride = layer == 0 ? 1 : 2;
    for (int i = 0; i < blocks[layer]; ++i) {
      const std::string name = "layer" + std::to_string(layer + 1) + "." + std::to_string(i);
      const bool first = i == 0;
      x = bottleneck(b, name, x, planes, first ? stride : 1,
                     first && (stride != 1 || inplanes != planes * 4));
      inplanes = planes * 4;
    }
  }
  Var pooled = global_avg_pool(b, x);
  Var logits = linear(b, "fc", pooled, 1000);
  return b.finish(cross_entropy(b, "loss", logits, labels));
}

}  // namespace sa::zoo
