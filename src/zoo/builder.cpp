#include "zoo/builder.h"

#include <algorithm>

#include "util/error.h"

namespace sa::zoo {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

int dtype_bytes(DType d) {
  switch (d) {
    case DType::kF32:
      return 4;
    case DType::kI64:
      return 8;
    case DType::kBool:
      return 1;
    case DType::kF16:
    case DType::kBF16:
      return 2;
  }
  return 4;
}

namespace {
const char* dtype_name(DType d) {
  switch (d) {
    case DType::kF32:
      return "float32";
    case DType::kI64:
      return "int64";
    case DType::kBool:
      return "bool";
    case DType::kF16:
      return "float16";
    case DType::kBF16:
      return "bfloat16";
  }
  return "";
}
}  // namespace

// ---------------------------------------------------------------- OpBuilder

OpBuilder::OpBuilder(Builder& b, std::string type, std::string name) : b_(b) {
  op_.type = std::move(type);
  op_.name = std::move(name);
  op_.phase = b.phase_;
}

OpBuilder& OpBuilder::in(const Var& v) {
  SA_CHECK(v.tensor >= 0, "op {}: reads an undefined Var", op_.type);
  ins_.push_back(v);
  return *this;
}
OpBuilder& OpBuilder::out(const Var& v) {
  outs_.push_back(v);
  return *this;
}
OpBuilder& OpBuilder::upd(const Var& v) {
  upds_.push_back(v);
  return *this;
}
OpBuilder& OpBuilder::grad_in(const Var& y) {
  return in(b_.grad(y));
}
OpBuilder& OpBuilder::grad_out(const Var& x) {
  if (b_.requires_grad(x)) grad_outs_.push_back(x);
  return *this;
}
OpBuilder& OpBuilder::flops(double f) {
  op_.flops = f;
  return *this;
}
OpBuilder& OpBuilder::bytes(double v) {
  bytes_ = v;
  return *this;
}

OpId OpBuilder::emit() {
  // Decide how each requested gradient lands (Note [Gradient accumulation]).
  struct Pending {
    Var x, tmp;
  };
  std::vector<Pending> pending;
  auto touches = [&](TensorId t) {
    auto has = [t](const std::vector<Var>& vs) {
      return std::any_of(vs.begin(), vs.end(), [t](const Var& v) { return v.tensor == t; });
    };
    return has(ins_) || has(outs_) || has(upds_);
  };
  double extra_flops = 0;
  for (size_t i = 0; i < grad_outs_.size(); ++i) {
    const Var& x = grad_outs_[i];
    for (size_t j = 0; j < i; ++j)
      SA_CHECK(grad_outs_[j].node != x.node, "op {}: two gradients for one node", op_.type);
    const TensorId cur = b_.grads_[x.node].tensor;
    if (cur < 0) {
      // A gradient has its tensor's type (Note [Mixed precision]).
      Var gx = b_.new_tensor({}, x.shape, x.dtype, TensorKind::kGradient);
      if (b_.g_.tensors[x.tensor].kind == TensorKind::kParam)
        b_.g_.tensors[gx.tensor].name = b_.g_.tensors[x.tensor].name + ".grad";
      outs_.push_back(gx);
      b_.set_grad(x.node, gx.tensor);
    } else if (b_.holders_[cur] == 1 && !touches(cur)) {
      upds_.push_back(b_.grad_var(x, cur));
      extra_flops += static_cast<double>(x.numel());
    } else {
      Var tmp = b_.new_tensor({}, x.shape, x.dtype, TensorKind::kGradient);
      outs_.push_back(tmp);
      pending.push_back({x, tmp});
    }
  }

  // Dedupe: a tensor appears at most once per op; created or updated wins
  // over read (views of one tensor read together are one read).
  double bytes = 0;
  auto add_unique = [&](std::vector<TensorId>& list, const Var& v) {
    if (std::find(op_.outputs.begin(), op_.outputs.end(), v.tensor) != op_.outputs.end()) return;
    if (std::find(op_.updates.begin(), op_.updates.end(), v.tensor) != op_.updates.end()) return;
    if (std::find(op_.inputs.begin(), op_.inputs.end(), v.tensor) != op_.inputs.end()) return;
    list.push_back(v.tensor);
  };
  for (const Var& v : outs_) {
    SA_CHECK(std::find(op_.outputs.begin(), op_.outputs.end(), v.tensor) == op_.outputs.end(),
             "op {}: output listed twice", op_.type);
    op_.outputs.push_back(v.tensor);
    bytes += static_cast<double>(v.bytes());
  }
  for (const Var& v : upds_) {
    SA_CHECK(std::find(op_.outputs.begin(), op_.outputs.end(), v.tensor) == op_.outputs.end(),
             "op {}: updates a tensor it creates", op_.type);
    add_unique(op_.updates, v);
    bytes += 2.0 * static_cast<double>(v.bytes());
  }
  for (const Var& v : ins_) {
    add_unique(op_.inputs, v);
    bytes += static_cast<double>(v.bytes());
  }
  op_.bytes_accessed = bytes_ ? *bytes_ : bytes;
  // An op touching a low-precision tensor runs in that math (Note [Mixed precision]).
  for (const auto* vs : {&ins_, &outs_, &upds_})
    for (const Var& v : *vs) {
      if (v.dtype == DType::kBF16) op_.math = MathType::kBf16;
      if (v.dtype == DType::kF16) op_.math = MathType::kFp16;
    }
  if (op_.flops) *op_.flops += extra_flops;
  if (!op_.flops) op_.flops = extra_flops;

  b_.g_.ops.push_back(std::move(op_));
  const OpId id = b_.g_.num_ops() - 1;

  for (const Pending& p : pending) {
    Var sum = b_.new_tensor({}, p.x.shape, p.x.dtype, TensorKind::kGradient);
    b_.op("aten::add", "grad_accumulate")
        .in(b_.grad(p.x))
        .in(p.tmp)
        .out(sum)
        .flops(static_cast<double>(p.x.numel()))
        .emit();
    b_.set_grad(p.x.node, sum.tensor);
  }
  return id;
}

// ------------------------------------------------------------------ Builder

Builder::Builder(std::string graph_name, std::string source, Optimizer optimizer,
                 Precision precision)
    : optimizer_(optimizer), precision_(precision) {
  g_.name = std::move(graph_name);
  g_.source = std::move(source);
  if (precision == Precision::kBf16) g_.source += ", BF16 automatic mixed precision";
  if (precision == Precision::kFp16)
    g_.source += ", FP16 automatic mixed precision with loss scaling";
}

DType Builder::float_type() const {
  switch (precision_) {
    case Precision::kFp32:
      return DType::kF32;
    case Precision::kBf16:
      return DType::kBF16;
    case Precision::kFp16:
      return DType::kF16;
  }
  return DType::kF32;
}

int Builder::new_node() {
  grads_.push_back({});
  constant_.push_back(false);
  return static_cast<int>(grads_.size()) - 1;
}

Var Builder::new_tensor(const std::string& name, Shape shape, DType dtype, TensorKind kind) {
  Var v;
  v.tensor = g_.num_tensors();
  v.node = new_node();
  v.dtype = dtype;
  v.shape = std::move(shape);
  Tensor t;
  t.bytes = v.bytes();
  SA_CHECK(t.bytes > 0, "tensor '{}' has {} bytes", name, t.bytes);
  t.kind = kind;
  t.name = name;
  t.shape = v.shape;
  t.dtype = dtype_name(dtype);
  g_.tensors.push_back(std::move(t));
  holders_.push_back(0);
  dtypes_.push_back(dtype);
  casts_.emplace_back();
  return v;
}

Var Builder::param(const std::string& name, Shape shape) {
  Var p = new_tensor(name, std::move(shape), DType::kF32, TensorKind::kParam);
  params_.push_back(p);
  if (optimizer_ == Optimizer::kSgdMomentum) {
    new_tensor(name + ".momentum_buffer", p.shape, DType::kF32, TensorKind::kOptimizerState);
  } else if (optimizer_ == Optimizer::kAdam) {
    new_tensor(name + ".exp_avg", p.shape, DType::kF32, TensorKind::kOptimizerState);
    new_tensor(name + ".exp_avg_sq", p.shape, DType::kF32, TensorKind::kOptimizerState);
  }
  return p;
}

Var Builder::buffer(const std::string& name, Shape shape) {
  return new_tensor(name, std::move(shape), DType::kF32, TensorKind::kBuffer);
}

Var Builder::input(const std::string& name, Shape shape, DType dtype) {
  return new_tensor(name, std::move(shape), dtype, TensorKind::kInput);
}

Var Builder::fresh(Shape shape, DType dtype, TensorKind kind) {
  return new_tensor({}, std::move(shape), dtype == DType::kF32 ? float_type() : dtype, kind);
}

Var Builder::fresh_fp32(Shape shape, TensorKind kind) {
  return new_tensor({}, std::move(shape), DType::kF32, kind);
}

Var Builder::cast(const Var& v) {
  const TensorKind k = g_.tensors[v.tensor].kind;
  if (precision_ == Precision::kFp32 || v.dtype != DType::kF32 ||
      (k != TensorKind::kParam && k != TensorKind::kInput))
    return v;
  if (casts_[v.tensor].tensor >= 0) return casts_[v.tensor];
  const std::string name = g_.tensors[v.tensor].name;  // a copy: fresh() grows g_.tensors
  Var low = fresh(v.shape);
  op("aten::_to_copy", name).in(v).out(low).flops(0).emit();
  if (!requires_grad(v)) {
    no_grad(low);  // an input's copy needs no gradient either
  } else {
    on_backward({low}, [this, name, v, low] {
      op("aten::_to_copy", name).grad_in(low).grad_out(v).flops(0).emit();
    });
  }
  casts_[v.tensor] = low;
  return low;
}

Var Builder::view(const Var& base, Shape shape) {
  Var v = base;
  v.shape = std::move(shape);
  v.node = new_node();
  SA_CHECK(v.bytes() <= g_.tensors[v.tensor].bytes, "a view is larger than its tensor");
  return v;
}

bool Builder::requires_grad(const Var& v) const {
  const TensorKind k = g_.tensors[v.tensor].kind;
  return is_float(v.dtype) && !constant_[v.node] && (k == TensorKind::kParam || is_transient(k));
}

void Builder::on_backward(std::vector<Var> outputs, std::function<void()> fn) {
  tape_.push_back({std::move(outputs), std::move(fn)});
}

bool Builder::has_grad(const Var& v) const {
  return grads_[v.node].tensor >= 0;
}

Var Builder::grad_var(const Var& x, TensorId t) const {
  Var gv;
  gv.tensor = t;
  gv.node = -1;
  gv.shape = x.shape;
  gv.dtype = dtypes_[t];
  return gv;
}

Var Builder::grad(const Var& v) const {
  SA_CHECK(has_grad(v), "no gradient for tensor {} (node {})", v.tensor, v.node);
  return grad_var(v, grads_[v.node].tensor);
}

void Builder::set_grad(int node, TensorId t) {
  const TensorId old = grads_[node].tensor;
  if (old >= 0) --holders_[old];
  grads_[node].tensor = t;
  ++holders_[t];
}

void Builder::pass_grad(const Var& x, const Var& g) {
  if (!requires_grad(x)) return;
  SA_CHECK(x.numel() == g.numel(), "pass_grad: shapes differ ({} vs {} elements)", x.numel(),
           g.numel());
  const TensorId cur = grads_[x.node].tensor;
  if (cur < 0) {
    set_grad(x.node, g.tensor);
  } else if (cur == g.tensor) {
    Var twice = new_tensor({}, x.shape, x.dtype, TensorKind::kGradient);
    op("aten::mul", "grad_accumulate").in(g).out(twice).flops(double(x.numel())).emit();
    set_grad(x.node, twice.tensor);
  } else if (holders_[cur] == 1) {
    op("aten::add_", "grad_accumulate")
        .in(g)
        .upd(grad_var(x, cur))
        .flops(static_cast<double>(x.numel()))
        .emit();
  } else {
    Var sum = new_tensor({}, x.shape, x.dtype, TensorKind::kGradient);
    op("aten::add", "grad_accumulate")
        .in(grad_var(x, cur))
        .in(g)
        .out(sum)
        .flops(static_cast<double>(x.numel()))
        .emit();
    set_grad(x.node, sum.tensor);
  }
}

void Builder::release(const Var& v) {
  const TensorId t = grads_[v.node].tensor;
  if (t < 0) return;
  --holders_[t];
  grads_[v.node].tensor = -1;
}

void Builder::emit_update(const Var& p) {
  const double n = static_cast<double>(p.numel());
  const std::string& name = g_.tensors[p.tensor].name;
  // The optimizer state tensors directly follow their param (see param()).
  if (optimizer_ == Optimizer::kSgdMomentum) {
    Var mom = p;
    mom.tensor = p.tensor + 1;
    op("sgd_mom_update", name).in(grad(p)).upd(p).upd(mom).flops(4 * n).emit();
  } else if (optimizer_ == Optimizer::kSgd) {
    op("sgd_update", name).in(grad(p)).upd(p).flops(2 * n).emit();
  } else {
    Var m = p, v = p;
    m.tensor = p.tensor + 1;
    v.tensor = p.tensor + 2;
    op("adam_update", name).in(grad(p)).upd(p).upd(m).upd(v).flops(12 * n).emit();
  }
}

void Builder::emit_unscale(const Var& p, const Var& inv_scale, const Var& found_inf) {
  // torch._amp_foreach_non_finite_check_and_unscale_, one param at a time:
  // grad *= inv_scale, found_inf set if any element is inf or NaN.
  const double n = static_cast<double>(p.numel());
  op("aten::_amp_foreach_non_finite_check_and_unscale_", g_.tensors[p.tensor].name)
      .in(inv_scale)
      .upd(grad(p))
      .upd(found_inf)
      .flops(2 * n)
      .emit();
}

Graph Builder::finish(const Var& loss) {
  const bool scaled = precision_ == Precision::kFp16;
  Var root = loss, scale, growth;
  if (scaled) {
    // GradScaler.scale(loss): the backward starts from loss * scale.
    scale = buffer("amp.scale", {});
    growth = new_tensor("amp.growth_tracker", {}, DType::kI64, TensorKind::kBuffer);
    root = fresh_fp32(loss.shape);
    op("aten::mul", "amp.scale_loss").in(loss).in(scale).out(root).flops(1).emit();
    on_backward({root}, [this, loss, scale, root] {
      op("aten::mul", "amp.scale_loss").grad_in(root).in(scale).grad_out(loss).flops(1).emit();
    });
  }
  phase_ = Phase::kBackward;
  Var seed = new_tensor({}, root.shape, root.dtype, TensorKind::kGradient);
  op("aten::ones_like", "loss").in(root).out(seed).flops(1).emit();
  set_grad(root.node, seed.tensor);
  for (size_t i = tape_.size(); i-- > 0;) {
    Closure& c = tape_[i];
    const bool any = std::any_of(c.outputs.begin(), c.outputs.end(),
                                 [this](const Var& v) { return has_grad(v); });
    if (any) c.fn();
    for (const Var& v : c.outputs)
      release(v);
    c.fn = nullptr;  // frees captured state early
  }
  phase_ = Phase::kUpdate;
  Var found_inf;
  if (scaled) {
    // GradScaler.unscale_ (inside step): every param gradient divided by the
    // scale and checked; the step is skipped on inf, and update() then
    // adjusts the scale from found_inf.
    Var inv_scale = fresh_fp32({}, TensorKind::kTemp);
    op("aten::reciprocal", "amp.inv_scale").in(scale).out(inv_scale).flops(1).emit();
    found_inf = fresh_fp32({}, TensorKind::kTemp);
    op("aten::zeros", "amp.found_inf").out(found_inf).flops(0).emit();
    for (const Var& p : params_)
      if (has_grad(p)) emit_unscale(p, inv_scale, found_inf);
  }
  for (const Var& p : params_)
    if (has_grad(p)) emit_update(p);
  if (scaled)
    op("aten::_amp_update_scale_", "amp.update_scale")
        .upd(scale)
        .upd(growth)
        .in(found_inf)
        .flops(1)
        .emit();
  return std::move(g_);
}

}  // namespace sa::zoo
