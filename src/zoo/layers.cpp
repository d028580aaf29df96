#include "zoo/layers.h"

#include "util/error.h"

namespace sa::zoo {
namespace {

Shape with_last(Shape s, int64_t last) {
  s.back() = last;
  return s;
}

}  // namespace

int64_t conv_out(int64_t in, int k, int s, int p) {
  return (in + 2 * p - k) / s + 1;
}

ConvSpec conv_spec(int64_t out_channels, int k, int s, int p) {
  ConvSpec c;
  c.out_channels = out_channels;
  c.kh = c.kw = k;
  c.sh = c.sw = s;
  c.ph = c.pw = p;
  return c;
}

Var conv2d(Builder& b, const std::string& name, const Var& x_in, const ConvSpec& c) {
  // Under autocast the convolution reads low-precision copies (Note [Mixed precision]).
  const Var x = b.cast(x_in);
  SA_CHECK(x.shape.size() == 4, "conv2d {}: input is not NCHW", name);
  const int64_t n = x.dim(0), cin = x.dim(1);
  const int64_t ho = conv_out(x.dim(2), c.kh, c.sh, c.ph);
  const int64_t wo = conv_out(x.dim(3), c.kw, c.sw, c.pw);
  SA_CHECK(ho > 0 && wo > 0 && cin % c.groups == 0, "conv2d {}: bad geometry", name);
  Var w = b.cast(b.param(name + ".weight", {c.out_channels, cin / c.groups, c.kh, c.kw}));
  Var bias;
  if (c.bias) bias = b.cast(b.param(name + ".bias", {c.out_channels}));
  Var y = b.fresh({n, c.out_channels, ho, wo});
  const double fl = 2.0 * d(n * c.out_channels * ho * wo) * d(cin / c.groups * c.kh * c.kw);
  auto op = b.op("aten::convolution", name).in(x).in(w);
  if (c.bias) op.in(bias);
  op.out(y).flops(fl + (c.bias ? d(y.numel()) : 0.0)).emit();
  b.on_backward({y}, [&b, name, x, w, bias, y, fl] {
    auto op = b.op("aten::convolution_backward", name).grad_in(y).in(x).in(w);
    op.grad_out(x).grad_out(w);
    if (bias.tensor >= 0) op.grad_out(bias);
    op.flops(b.requires_grad(x) ? 2 * fl : fl).emit();
  });
  return y;
}

Var batch_norm(Builder& b, const std::string& name, const Var& x) {
  const int64_t c = x.dim(1);
  Var gamma = b.param(name + ".weight", {c});
  Var beta = b.param(name + ".bias", {c});
  Var mean = b.buffer(name + ".running_mean", {c});
  Var var = b.buffer(name + ".running_var", {c});
  Var y = b.fresh(x.shape);
  Var save_mean = b.fresh({c});
  Var save_invstd = b.fresh({c});
  // The running statistics are updated from the batch's by an op of their
  // own (as TensorFlow's moving-average assigns, and functionalized
  // PyTorch's _native_batch_norm_legit_functional, do): the normalization
  // then updates nothing, so a plan may recompute it (Note [Recomputation]).
  b.op("aten::native_batch_norm", name)
      .in(x)
      .in(gamma)
      .in(beta)
      .out(y)
      .out(save_mean)
      .out(save_invstd)
      .flops(4 * d(x.numel()))
      .emit();
  b.op("batch_norm_running_stats", name)
      .in(save_mean)
      .in(save_invstd)
      .upd(mean)
      .upd(var)
      .flops(6 * d(c))
      .emit();
  b.on_backward({y, save_mean, save_invstd}, [&b, name, x, gamma, beta, y, save_mean, save_invstd] {
    b.op("aten::native_batch_norm_backward", name)
        .grad_in(y)
        .in(x)
        .in(gamma)
        .in(save_mean)
        .in(save_invstd)
        .grad_out(x)
        .grad_out(gamma)
        .grad_out(beta)
        .flops(6 * d(x.numel()))
        .emit();
  });
  return y;
}

Var relu(Builder& b, const Var& x) {
  Var y = b.fresh(x.shape);
  b.op("aten::relu").in(x).out(y).flops(d(x.numel())).emit();
  b.on_backward({y}, [&b, x, y] {
    b.op("aten::threshold_backward").grad_in(y).in(y).grad_out(x).flops(d(x.numel())).emit();
  });
  return y;
}

Var relu_(Builder& b, const Var& x) {
  Var y = b.version(x);
  b.op("aten::relu_").upd(y).flops(d(x.numel())).emit();
  b.on_backward({y}, [&b, x, y] {
    b.op("aten::threshold_backward").grad_in(y).in(y).grad_out(x).flops(d(x.numel())).emit();
  });
  return y;
}

Var max_pool2d(Builder& b, const Var& x, int k, int s, int p) {
  Shape out = {x.dim(0), x.dim(1), conv_out(x.dim(2), k, s, p), conv_out(x.dim(3), k, s, p)};
  Var y = b.fresh(out);
  Var idx = b.fresh(out, DType::kI64);
  const double fl = d(y.numel()) * k * k;
  b.op("aten::max_pool2d_with_indices").in(x).out(y).out(idx).flops(fl).emit();
  b.on_backward({y, idx}, [&b, x, y, idx] {
    b.op("aten::max_pool2d_with_indices_backward")
        .grad_in(y)
        .in(x)
        .in(idx)
        .grad_out(x)
        .flops(d(x.numel()))
        .emit();
  });
  return y;
}

Var avg_pool2d(Builder& b, const Var& x, int k, int s, int p) {
  Shape out = {x.dim(0), x.dim(1), conv_out(x.dim(2), k, s, p), conv_out(x.dim(3), k, s, p)};
  Var y = b.fresh(out);
  const double fl = d(y.numel()) * k * k;
  b.op("aten::avg_pool2d").in(x).out(y).flops(fl).emit();
  b.on_backward({y}, [&b, x, y, fl] {
    // PyTorch's avg_pool2d_backward takes the input (it saves self).
    b.op("aten::avg_pool2d_backward").grad_in(y).in(x).grad_out(x).flops(fl).emit();
  });
  return y;
}

Var global_avg_pool(Builder& b, const Var& x) {
  Var y = b.fresh({x.dim(0), x.dim(1)});
  b.op("aten::mean").in(x).out(y).flops(d(x.numel())).emit();
  b.on_backward(
      {y}, [&b, x, y] { b.op("mean_backward").grad_in(y).grad_out(x).flops(d(x.numel())).emit(); });
  return y;
}

Var linear_with(Builder& b, const std::string& name, const Var& x_in, const Var& weight_in,
                const Var& bias_in, int64_t out) {
  // Under autocast the GEMM reads low-precision copies (Note [Mixed precision]).
  const Var x = b.cast(x_in), weight = b.cast(weight_in);
  const Var bias = bias_in.tensor >= 0 ? b.cast(bias_in) : bias_in;
  const int64_t in = x.dim(-1);
  const int64_t rows = x.numel() / in;
  SA_CHECK(weight.numel() == in * out, "linear {}: weight has {} elements, want {}x{}", name,
           weight.numel(), in, out);
  Var y = b.fresh(with_last(x.shape, out));
  const double fl = 2.0 * d(rows) * d(in) * d(out);
  auto op = b.op(bias.tensor >= 0 ? "aten::addmm" : "aten::mm", name).in(x).in(weight);
  if (bias.tensor >= 0) op.in(bias);
  op.out(y).flops(fl + (bias.tensor >= 0 ? d(y.numel()) : 0.0)).emit();
  b.on_backward({y}, [&b, name, x, weight, bias, y, fl] {
    auto op = b.op("linear_backward", name).grad_in(y).in(x).in(weight);
    op.grad_out(x).grad_out(weight);
    if (bias.tensor >= 0) op.grad_out(bias);
    op.flops((b.requires_grad(x) ? 2 * fl : fl) + d(y.numel())).emit();
  });
  return y;
}

Var linear(Builder& b, const std::string& name, const Var& x, int64_t out, bool bias) {
  Var w = b.param(name + ".weight", {out, x.dim(-1)});
  Var bv;
  if (bias) bv = b.param(name + ".bias", {out});
  return linear_with(b, name, x, w, bv, out);
}

Var add(Builder& b, const Var& x, const Var& y) {
  SA_CHECK(x.numel() == y.numel(), "add: shapes differ");
  Var z = b.fresh(x.shape);
  b.op("aten::add").in(x).in(y).out(z).flops(d(z.numel())).emit();
  b.on_backward({z}, [&b, x, y, z] {
    const Var g = b.grad(z);
    b.pass_grad(x, g);
    b.pass_grad(y, g);
  });
  return z;
}

Var add_(Builder& b, const Var& x, const Var& y) {
  SA_CHECK(x.numel() == y.numel(), "add_: shapes differ");
  Var z = b.version(x);
  b.op("aten::add_").in(y).upd(z).flops(d(z.numel())).emit();
  b.on_backward({z}, [&b, x, y, z] {
    const Var g = b.grad(z);
    b.pass_grad(x, g);
    b.pass_grad(y, g);
  });
  return z;
}

Var mul(Builder& b, const Var& x, const Var& y) {
  SA_CHECK(x.numel() == y.numel(), "mul: shapes differ");
  Var z = b.fresh(x.shape);
  b.op("aten::mul").in(x).in(y).out(z).flops(d(z.numel())).emit();
  b.on_backward({z}, [&b, x, y, z] {
    b.op("mul_backward")
        .grad_in(z)
        .in(x)
        .in(y)
        .grad_out(x)
        .grad_out(y)
        .flops(2 * d(z.numel()))
        .emit();
  });
  return z;
}

Var scale(Builder& b, const Var& x) {
  Var y = b.fresh(x.shape);
  b.op("aten::div").in(x).out(y).flops(d(x.numel())).emit();
  b.on_backward(
      {y}, [&b, x, y] { b.op("aten::div").grad_in(y).grad_out(x).flops(d(x.numel())).emit(); });
  return y;
}

Var tanh(Builder& b, const Var& x) {
  Var y = b.fresh(x.shape);
  b.op("aten::tanh").in(x).out(y).flops(d(x.numel())).emit();
  b.on_backward({y}, [&b, x, y] {
    b.op("aten::tanh_backward").grad_in(y).in(y).grad_out(x).flops(2 * d(x.numel())).emit();
  });
  return y;
}

Var gelu(Builder& b, const Var& x) {
  Var y = b.fresh(x.shape);
  b.op("aten::gelu").in(x).out(y).flops(8 * d(x.numel())).emit();
  b.on_backward({y}, [&b, x, y] {
    b.op("aten::gelu_backward").grad_in(y).in(x).grad_out(x).flops(12 * d(x.numel())).emit();
  });
  return y;
}

Var softmax(Builder& b, const Var& x) {
  Var y = b.fresh(x.shape);
  b.op("aten::_softmax").in(x).out(y).flops(5 * d(x.numel())).emit();
  b.on_backward({y}, [&b, x, y] {
    b.op("aten::_softmax_backward_data")
        .grad_in(y)
        .in(y)
        .grad_out(x)
        .flops(3 * d(x.numel()))
        .emit();
  });
  return y;
}

Var dropout(Builder& b, const Var& x) {
  Var y = b.fresh(x.shape);
  Var mask = b.fresh(x.shape, DType::kBool);
  b.op("aten::native_dropout").in(x).out(y).out(mask).flops(2 * d(x.numel())).emit();
  b.on_backward({y, mask}, [&b, x, y, mask] {
    b.op("aten::native_dropout_backward")
        .grad_in(y)
        .in(mask)
        .grad_out(x)
        .flops(d(x.numel()))
        .emit();
  });
  return y;
}

Var layer_norm(Builder& b, const std::string& name, const Var& x) {
  const int64_t h = x.dim(-1);
  Shape rows_shape(x.shape.begin(), x.shape.end() - 1);
  Var gamma = b.param(name + ".weight", {h});
  Var beta = b.param(name + ".bias", {h});
  Var y = b.fresh(x.shape);
  Var mean = b.fresh(rows_shape);
  Var rstd = b.fresh(rows_shape);
  b.op("aten::native_layer_norm", name)
      .in(x)
      .in(gamma)
      .in(beta)
      .out(y)
      .out(mean)
      .out(rstd)
      .flops(5 * d(x.numel()))
      .emit();
  b.on_backward({y, mean, rstd}, [&b, name, x, gamma, beta, y, mean, rstd] {
    b.op("aten::native_layer_norm_backward", name)
        .grad_in(y)
        .in(x)
        .in(mean)
        .in(rstd)
        .in(gamma)
        .grad_out(x)
        .grad_out(gamma)
        .grad_out(beta)
        .flops(8 * d(x.numel()))
        .emit();
  });
  return y;
}

Var matmul(Builder& b, const Var& a, const Var& bm, Shape out_shape, int64_t k) {
  Var y = b.fresh(std::move(out_shape));
  const double fl = 2.0 * d(y.numel()) * d(k);
  b.op("aten::bmm").in(a).in(bm).out(y).flops(fl).emit();
  b.on_backward({y}, [&b, a, bm, y, fl] {
    b.op("bmm_backward").grad_in(y).in(a).in(bm).grad_out(a).grad_out(bm).flops(2 * fl).emit();
  });
  return y;
}

Var cat(Builder& b, const std::vector<Var>& xs, int dim, const std::string& name) {
  SA_CHECK(!xs.empty(), "cat of nothing");
  Shape out = xs[0].shape;
  const size_t axis = dim < 0 ? out.size() + dim : dim;
  out[axis] = 0;
  for (const Var& x : xs)
    out[axis] += x.shape[axis];
  Var y = b.fresh(out);
  auto op = b.op("aten::cat", name);
  for (const Var& x : xs)
    op.in(x);
  op.out(y).flops(0).emit();
  b.on_backward({y}, [&b, xs, y, name] {
    auto op = b.op("cat_backward", name).grad_in(y);
    for (const Var& x : xs)
      op.grad_out(x);
    op.flops(0).emit();
  });
  return y;
}

std::vector<Var> split(Builder& b, const Var& x, int dim, const std::vector<int64_t>& sizes) {
  const size_t axis = dim < 0 ? x.shape.size() + dim : dim;
  std::vector<Var> parts;
  int64_t total = 0;
  for (int64_t s : sizes) {
    Shape sh = x.shape;
    sh[axis] = s;
    total += s;
    parts.push_back(b.view(x, sh));
  }
  SA_CHECK(total == x.shape[axis], "split: sizes add up to {}, not {}", total, x.shape[axis]);
  b.on_backward(parts, [&b, x, parts] {
    auto op = b.op("split_backward");
    for (const Var& p : parts)
      if (b.has_grad(p)) op.grad_in(p);
    op.grad_out(x).flops(0).emit();
  });
  return parts;
}

Var reshape(Builder& b, const Var& x, Shape shape) {
  Var v = b.view(x, std::move(shape));
  SA_CHECK(v.numel() == x.numel(), "reshape changes the element count");
  b.on_backward({v}, [&b, x, v] { b.pass_grad(x, b.grad(v)); });
  return v;
}

Var copy(Builder& b, const Var& x, Shape shape, const std::string& type) {
  Var y = b.fresh(std::move(shape));
  SA_CHECK(y.numel() == x.numel(), "copy changes the element count");
  b.op(type).in(x).out(y).flops(0).emit();
  b.on_backward({y}, [&b, x, y] { b.pass_grad(x, b.grad(y)); });
  return y;
}

Var embedding(Builder& b, const std::string& name, const Var& weight, const Var& ids) {
  Shape out = ids.shape;
  out.push_back(weight.dim(-1));
  Var y = b.fresh(out);
  b.op("aten::embedding", name)
      .in(weight)
      .in(ids)
      .out(y)
      .flops(0)
      .bytes(d(ids.bytes() + 2 * y.bytes()))
      .emit();
  b.on_backward({y}, [&b, name, weight, ids, y] {
    b.op("aten::embedding_dense_backward", name)
        .grad_in(y)
        .in(ids)
        .grad_out(weight)
        .flops(d(y.numel()))
        .bytes(d(ids.bytes() + y.bytes() + weight.bytes()))
        .emit();
  });
  return y;
}

Var cross_entropy(Builder& b, const std::string& name, const Var& logits, const Var& labels) {
  // FP32 whatever the precision: autocast runs log_softmax and nll_loss in FP32.
  Var logp = b.fresh_fp32(logits.shape);
  b.op("aten::_log_softmax", name).in(logits).out(logp).flops(5 * d(logits.numel())).emit();
  b.on_backward({logp}, [&b, name, logits, logp] {
    b.op("aten::_log_softmax_backward_data", name)
        .grad_in(logp)
        .in(logp)
        .grad_out(logits)
        .flops(3 * d(logits.numel()))
        .emit();
  });
  Var loss = b.fresh_fp32({});
  Var total_weight = b.fresh_fp32({});
  b.op("aten::nll_loss_forward", name)
      .in(logp)
      .in(labels)
      .out(loss)
      .out(total_weight)
      .flops(d(labels.numel()))
      .bytes(d(labels.bytes() * 2 + 8))
      .emit();
  b.on_backward({loss, total_weight}, [&b, name, logp, labels, loss, total_weight] {
    b.op("aten::nll_loss_backward", name)
        .grad_in(loss)
        .in(labels)
        .in(total_weight)
        .grad_out(logp)
        .flops(d(logp.numel()))
        .emit();
  });
  return loss;
}

}  // namespace sa::zoo
