// Inception-V4 (Szegedy et al., AAAI 2017) as timm/Cadene build it: every
// conv is BasicConv2d (conv without bias, batch norm with affine, ReLU in
// place). The paper's "Inception-X" multiplies every conv's output channels
// by X. Module names follow timm's state_dict ("features.6.branch1.0.conv").

#include <string>

#include "zoo/layers.h"
#include "zoo/models.h"

namespace sa::zoo {
namespace {

class InceptionV4 {
 public:
  InceptionV4(Builder& b, int width) : b_(b), w_(width) {}

  Var basic(const std::string& name, const Var& x, int64_t out, int kh, int kw, int s, int ph,
            int pw) {
    ConvSpec c;
    c.out_channels = out * w_;
    c.kh = kh, c.kw = kw, c.sh = c.sw = s, c.ph = ph, c.pw = pw;
    return relu_(b_, batch_norm(b_, name + ".bn", conv2d(b_, name + ".conv", x, c)));
  }

  // BasicConv2d: conv (kh x kw, stride s, padding ph/pw) -> BN -> ReLU_.
  Var conv(const std::string& name, const Var& x, int64_t out, int k, int s = 1, int p = 0) {
    return basic(name, x, out, k, k, s, p, p);
  }
  // A stride-1 rectangular kernel (1x7, 7x1, 1x3, 3x1) with its padding.
  Var rect(const std::string& name, const Var& x, int64_t out, int kh, int kw, int ph, int pw) {
    return basic(name, x, out, kh, kw, 1, ph, pw);
  }

  Var mixed_3a(const std::string& n, const Var& x) {
    Var pool = max_pool2d(b_, x, 3, 2, 0);
    return cat(b_, {pool, conv(n + ".conv", x, 96, 3, 2)}, 1, n);
  }
  Var mixed_4a(const std::string& n, const Var& x) {
    Var b0 = conv(n + ".branch0.1", conv(n + ".branch0.0", x, 64, 1), 96, 3);
    Var b1 = conv(n + ".branch1.0", x, 64, 1);
    b1 = rect(n + ".branch1.1", b1, 64, 1, 7, 0, 3);
    b1 = rect(n + ".branch1.2", b1, 64, 7, 1, 3, 0);
    b1 = conv(n + ".branch1.3", b1, 96, 3);
    return cat(b_, {b0, b1}, 1, n);
  }
  Var mixed_5a(const std::string& n, const Var& x) {
    Var c = conv(n + ".conv", x, 192, 3, 2);
    return cat(b_, {c, max_pool2d(b_, x, 3, 2, 0)}, 1, n);
  }
  Var inception_a(const std::string& n, const Var& x) {
    Var b0 = conv(n + ".branch0", x, 96, 1);
    Var b1 = conv(n + ".branch1.1", conv(n + ".branch1.0", x, 64, 1), 96, 3, 1, 1);
    Var b2 = conv(n + ".branch2.0", x, 64, 1);
    b2 = conv(n + ".branch2.1", b2, 96, 3, 1, 1);
    b2 = conv(n + ".branch2.2", b2, 96, 3, 1, 1);
    Var b3 = conv(n + ".branch3.1", avg_pool2d(b_, x, 3, 1, 1), 96, 1);
    return cat(b_, {b0, b1, b2, b3}, 1, n);
  }
  Var reduction_a(const std::string& n, const Var& x) {
    Var b0 = conv(n + ".branch0", x, 384, 3, 2);
    Var b1 = conv(n + ".branch1.0", x, 192, 1);
    b1 = conv(n + ".branch1.1", b1, 224, 3, 1, 1);
    b1 = conv(n + ".branch1.2", b1, 256, 3, 2);
    return cat(b_, {b0, b1, max_pool2d(b_, x, 3, 2, 0)}, 1, n);
  }
  Var inception_b(const std::string& n, const Var& x) {
    Var b0 = conv(n + ".branch0", x, 384, 1);
    Var b1 = conv(n + ".branch1.0", x, 192, 1);
    b1 = rect(n + ".branch1.1", b1, 224, 1, 7, 0, 3);
    b1 = rect(n + ".branch1.2", b1, 256, 7, 1, 3, 0);
    Var b2 = conv(n + ".branch2.0", x, 192, 1);
    b2 = rect(n + ".branch2.1", b2, 192, 7, 1, 3, 0);
    b2 = rect(n + ".branch2.2", b2, 224, 1, 7, 0, 3);
    b2 = rect(n + ".branch2.3", b2, 224, 7, 1, 3, 0);
    b2 = rect(n + ".branch2.4", b2, 256, 1, 7, 0, 3);
    Var b3 = conv(n + ".branch3.1", avg_pool2d(b_, x, 3, 1, 1), 128, 1);
    return cat(b_, {b0, b1, b2, b3}, 1, n);
  }
  Var reduction_b(const std::string& n, const Var& x) {
    Var b0 = conv(n + ".branch0.1", conv(n + ".branch0.0", x, 192, 1), 192, 3, 2);
    Var b1 = conv(n + ".branch1.0", x, 256, 1);
    b1 = rect(n + ".branch1.1", b1, 256, 1, 7, 0, 3);
    b1 = rect(n + ".branch1.2", b1, 320, 7, 1, 3, 0);
    b1 = conv(n + ".branch1.3", b1, 320, 3, 2);
    return cat(b_, {b0, b1, max_pool2d(b_, x, 3, 2, 0)}, 1, n);
  }
  Var inception_c(const std::string& n, const Var& x) {
    Var b0 = conv(n + ".branch0", x, 256, 1);
    Var b1 = conv(n + ".branch1_0", x, 384, 1);
    Var b1a = rect(n + ".branch1_1a", b1, 256, 1, 3, 0, 1);
    Var b1b = rect(n + ".branch1_1b", b1, 256, 3, 1, 1, 0);
    Var b2 = conv(n + ".branch2_0", x, 384, 1);
    b2 = rect(n + ".branch2_1", b2, 448, 3, 1, 1, 0);
    b2 = rect(n + ".branch2_2", b2, 512, 1, 3, 0, 1);
    Var b2a = rect(n + ".branch2_3a", b2, 256, 1, 3, 0, 1);
    Var b2b = rect(n + ".branch2_3b", b2, 256, 3, 1, 1, 0);
    Var b3 = conv(n + ".branch3.1", avg_pool2d(b_, x, 3, 1, 1), 256, 1);
    return cat(b_, {b0, b1a, b1b, b2a, b2b, b3}, 1, n);
  }

 private:
  Builder& b_;
  int64_t w_;
};

}  // namespace

Graph build_inception_v4(const BuildContext& c, int width, int image) {
  Builder b(c.graph_name,
            "swapadvisor zoo: Inception-V4 (timm layout)" +
                (width != 1 ? " with channel counts x" + std::to_string(width) : std::string()) +
                ", " + std::to_string(image) + "x" + std::to_string(image) + ", 1000 classes",
            c.optimizer, c.precision);
  InceptionV4 net(b, width);
  Var x = b.input("data", {c.batch, 3, image, image});
  Var labels = b.input("labels", {c.batch}, DType::kI64);
  int i = 0;
  auto f = [&i] { return "features." + std::to_string(i++); };
  x = net.conv(f(), x, 32, 3, 2);
  x = net.conv(f(), x, 32, 3);
  x = net.conv(f(), x, 64, 3, 1, 1);
  x = net.mixed_3a(f(), x);
  x = net.mixed_4a(f(), x);
  x = net.mixed_5a(f(), x);
  for (int k = 0; k < 4; ++k)
    x = net.inception_a(f(), x);
  x = net.reduction_a(f(), x);
  for (int k = 0; k < 7; ++k)
    x = net.inception_b(f(), x);
  x = net.reduction_b(f(), x);
  for (int k = 0; k < 3; ++k)
    x = net.inception_c(f(), x);
  Var logits = linear(b, "last_linear", global_avg_pool(b, x), 1000);
  return b.finish(cross_entropy(b, "loss", logits, labels));
}

}  // namespace sa::zoo
