// NASNet-A (Zoph et al., CVPR 2018) in the "large" configuration, with R
// normal cells per stack (the paper's NasNet-R; NASNet-A large has R = 6):
//
//   conv0 (3x3/2, 96) -> stem reduction cells (F/4, F/2)
//   -> R normal cells (F) -> reduction (2F) -> R normal cells (2F)
//   -> reduction (4F) -> R normal cells (4F) -> ReLU, global pool, linear
//
// Cells follow the published NASNet-A normal and reduction cells. Each takes
// the outputs of the two previous cells (h = the last, p = the one before),
// first adjusting both to F channels at h's resolution (ReLU-conv1x1-BN, or
// a factorized reduction when p is twice as large). Normal cell:
//   c0 = sep5x5(p) + sep3x3(h)      c1 = sep5x5(h) + sep3x3(h)
//   c2 = avg3x3(p) + h              c3 = avg3x3(h) + avg3x3(h)
//   c4 = sep3x3(p) + p              out = cat(h, c0..c4)  (6F channels)
// Reduction cell (stride 2 on the cell inputs):
//   c0 = sep5x5/2(p) + sep7x7/2(h)  c1 = maxpool/2(p) + sep7x7/2(h)
//   c2 = avgpool/2(p) + sep5x5/2(h) c3 = avg3x3(c0) + c1
//   c4 = sep3x3(c0) + maxpool/2(p)  out = cat(c1..c4)  (4F channels)
// sepKxK is Cadene's BranchSeparables: ReLU, depthwise KxK, pointwise 1x1,
// BN, ReLU, depthwise KxK, pointwise 1x1, BN. ReLUs here are out of place,
// as in the PyTorch port, so each branch keeps its own copy.

#include <string>
#include <vector>

#include "zoo/layers.h"
#include "zoo/models.h"

namespace sa::zoo {
namespace {

constexpr int64_t kFilters = 168;  // F of NASNet-A large (penultimate 24F = 4032)
constexpr int64_t kStemFilters = 96;

class NasNet {
 public:
  explicit NasNet(Builder& b) : b_(b) {}

  // ReLU -> conv1x1 -> BN (Cadene's conv_1x1 / conv_prev_1x1).
  Var relu_conv_bn(const std::string& n, const Var& x, int64_t out) {
    return batch_norm(b_, n + ".bn", conv2d(b_, n + ".conv", relu(b_, x), conv_spec(out, 1)));
  }

  // Halves the resolution of x on two shifted 1x1 paths (Zoph et al. 2018).
  Var factorized_reduction(const std::string& n, const Var& x, int64_t out) {
    Var r = relu(b_, x);
    Var p1 = conv2d(b_, n + ".path_1.conv", avg_pool2d(b_, r, 1, 2, 0), conv_spec(out / 2, 1));
    Var shifted = copy(b_, r, r.shape, "aten::constant_pad_nd");
    Var p2 = conv2d(b_, n + ".path_2.conv", avg_pool2d(b_, shifted, 1, 2, 0),
                    conv_spec(out - out / 2, 1));
    return batch_norm(b_, n + ".final_path_bn", cat(b_, {p1, p2}, 1, n));
  }

  Var separable(const std::string& n, const Var& x, int64_t out, int k, int stride) {
    const int64_t in = x.dim(1);
    ConvSpec dw = conv_spec(in, k, stride, k / 2);
    dw.groups = in;
    Var y = conv2d(b_, n + ".separable_1.depthwise_conv2d", relu(b_, x), dw);
    y = conv2d(b_, n + ".separable_1.pointwise_conv2d", y, conv_spec(in, 1));
    y = batch_norm(b_, n + ".bn_sep_1", y);
    dw.sh = dw.sw = 1;
    y = conv2d(b_, n + ".separable_2.depthwise_conv2d", relu(b_, y), dw);
    y = conv2d(b_, n + ".separable_2.pointwise_conv2d", y, conv_spec(out, 1));
    return batch_norm(b_, n + ".bn_sep_2", y);
  }

  // Both cell inputs at F channels and h's resolution.
  std::pair<Var, Var> adjust(const std::string& n, const Var& h, const Var& p, int64_t f) {
    Var hx = relu_conv_bn(n + ".conv_1x1", h, f);
    Var px = p.dim(2) == h.dim(2) ? relu_conv_bn(n + ".conv_prev_1x1", p, f)
                                  : factorized_reduction(n + ".conv_prev_1x1", p, f);
    return {hx, px};
  }

  Var normal(const std::string& n, const Var& h_in, const Var& p_in, int64_t f) {
    auto [h, p] = adjust(n, h_in, p_in, f);
    auto c = [&n](int i, const char* side) {
      return n + ".comb_iter_" + std::to_string(i) + "_" + side;
    };
    Var c0 = add(b_, separable(c(0, "left"), p, f, 5, 1), separable(c(0, "right"), h, f, 3, 1));
    Var c1 = add(b_, separable(c(1, "left"), h, f, 5, 1), separable(c(1, "right"), h, f, 3, 1));
    Var c2 = add(b_, avg_pool2d(b_, p, 3, 1, 1), h);
    Var c3 = add(b_, avg_pool2d(b_, h, 3, 1, 1), avg_pool2d(b_, h, 3, 1, 1));
    Var c4 = add(b_, separable(c(4, "left"), p, f, 3, 1), p);
    return cat(b_, {h, c0, c1, c2, c3, c4}, 1, n);
  }

  Var reduction(const std::string& n, const Var& h_in, const Var& p_in, int64_t f) {
    auto [h, p] = adjust(n, h_in, p_in, f);
    auto c = [&n](int i, const char* side) {
      return n + ".comb_iter_" + std::to_string(i) + "_" + side;
    };
    Var c0 = add(b_, separable(c(0, "left"), p, f, 5, 2), separable(c(0, "right"), h, f, 7, 2));
    Var c1 = add(b_, max_pool2d(b_, p, 3, 2, 1), separable(c(1, "right"), h, f, 7, 2));
    Var c2 = add(b_, avg_pool2d(b_, p, 3, 2, 1), separable(c(2, "right"), h, f, 5, 2));
    Var c3 = add(b_, avg_pool2d(b_, c0, 3, 1, 1), c1);
    Var c4 = add(b_, separable(c(4, "left"), c0, f, 3, 1), max_pool2d(b_, p, 3, 2, 1));
    return cat(b_, {c1, c2, c3, c4}, 1, n);
  }

 private:
  Builder& b_;
};

}  // namespace

// Note [Zoo size ceiling]: per normal cell in each of the 3 stacks at most
// 762 ops and 1,131 tensors (FP16 and adam), 1,114 ops and 1,638 tensors for
// the stem, the reduction cells and the head; the image size changes no count.
SizeBound nasnet_size_bound(int repeats) {
  return {.ops = 1114 + 762 * int64_t{repeats}, .tensors = 1638 + 1131 * int64_t{repeats}};
}

Graph build_nasnet(const BuildContext& c, int repeats, int image) {
  Builder b(c.graph_name,
            "swapadvisor zoo: NASNet-A large (F=168) with " + std::to_string(repeats) +
                " normal cells per stack, " + std::to_string(image) + "x" + std::to_string(image) +
                ", 1000 classes",
            c.optimizer, c.precision);
  NasNet net(b);
  Var x = b.input("data", {c.batch, 3, image, image});
  Var labels = b.input("labels", {c.batch}, DType::kI64);
  Var conv0 = batch_norm(b, "conv0.bn", conv2d(b, "conv0.conv", x, conv_spec(kStemFilters, 3, 2)));
  // Stem cells: the first sees conv0 twice, the second (conv0, stem 0).
  Var p = conv0;
  Var h = net.reduction("cell_stem_0", conv0, conv0, kFilters / 4);
  Var s1 = net.reduction("cell_stem_1", h, p, kFilters / 2);
  p = h;
  h = s1;
  int cell = 0;
  for (int stack = 0; stack < 3; ++stack) {
    const int64_t f = kFilters << stack;
    if (stack > 0) {
      Var r = net.reduction("reduction_cell_" + std::to_string(stack - 1), h, p, f);
      p = h;
      h = r;
    }
    for (int i = 0; i < repeats; ++i) {
      Var o = net.normal("cell_" + std::to_string(cell++), h, p, f);
      p = h;
      h = o;
    }
  }
  Var pooled = global_avg_pool(b, relu(b, h));
  Var logits = linear(b, "last_linear", pooled, 1000);
  return b.finish(cross_entropy(b, "loss", logits, labels));
}

}  // namespace sa::zoo
