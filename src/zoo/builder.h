#pragma once
// The zoo's graph builder: a tiny tape-based autograd that emits a training
// iteration in the graph IR (docs/graph-format.md).
//
//   Builder b("resnet50-b64", "zoo", Optimizer::kSgdMomentum);
//   Var x = b.input("data", {64, 3, 224, 224});
//   Var y = conv2d(b, "conv1", x, ...);          // layers.h: emits the forward op and
//   ...                                          // registers its backward closure
//   Graph g = b.finish(loss);                    // backward in reverse, then updates
//
// Program order is file order: layer helpers emit forward ops as they are
// called; finish() seeds the loss gradient, runs the backward closures in the
// reverse order of their registration, then emits one optimizer update op per
// parameter (in registration order).
//
// Note [Nodes and tensors]
// A Var is one *value*: a tensor (a buffer), or a view of one, at one version.
// In-place ops (relu_, add_) and views (slices of a gates tensor, q/k/v of a
// fused projection) make new Vars on the same tensor, each with its own
// autograd node, so each value gets its own gradient.
//
// Note [Gradient accumulation]
// A backward op names the Vars it produces gradients for (grad_out). The
// builder decides, per Var, how that gradient lands:
//   - no gradient yet: the op creates a new gradient tensor;
//   - a gradient tensor owned by this node alone: the op accumulates into it
//     in place (it `updates` it: cuDNN/cuBLAS beta=1, MXNet's kAddTo);
//   - a gradient tensor shared with other pending nodes (pass-through of an
//     add, see pass_grad): the op creates a temporary and an out-of-place
//     `aten::add` makes the new gradient, as PyTorch does.
// A gradient tensor is "shared" while more than one node whose backward has
// not run yet holds it; a node is released once its creator's backward ran.
// Tensors are never freed explicitly: a transient dies after its last access.
//
// Note [Mixed precision]
// With Precision kBf16 or kFp16 the builder emits what torch.autocast and
// (for FP16) torch.cuda.amp.GradScaler run:
//   - params and optimizer state stay FP32 (the master copy);
//   - a layer that runs a GEMM or convolution reads cast(w): the first call
//     emits one `aten::_to_copy` making a low-precision copy of the param
//     (autocast's weight cache: one copy per iteration, however often it is
//     used), whose backward casts the gradient back into the FP32 `.grad`;
//     float inputs (the image batch) are cast the same way;
//   - fresh() makes float activations and temps in the low-precision type;
//     a gradient has its tensor's type (PyTorch's rule), so param gradients
//     are FP32 and activation gradients low precision;
//   - an op touching a low-precision tensor runs in that math (Op::math);
//   - FP16 only: the loss is multiplied by the scale (a buffer) before the
//     backward; afterwards each param gradient is unscaled and checked for
//     inf/NaN in place, and the scale is updated after the optimizer step.
// Simplifications (docs/zoo.md, "Mixed precision"): ops autocast runs in
// FP32 (softmax, layer norm, the embeddings) keep their output in the low
// type, except the loss's log-softmax, which is FP32 as in PyTorch.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace sa::zoo {

using Shape = std::vector<int64_t>;
int64_t numel(const Shape& s);

// kF16/kBF16: the low-precision types of mixed-precision graphs (Note
// [Mixed precision]).
enum class DType : uint8_t { kF32, kI64, kBool, kF16, kBF16 };
int dtype_bytes(DType d);
constexpr bool is_float(DType d) {
  return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16;
}

// The precision a model trains in: kFp32, or automatic mixed precision
// (torch.autocast) with BF16 or FP16 math.
enum class Precision : uint8_t { kFp32, kBf16, kFp16 };

// kSgd: plain SGD, no state (the paper does not name its optimizer).
enum class Optimizer : uint8_t { kSgdMomentum, kAdam, kSgd };

struct Var {
  TensorId tensor = -1;
  int node = -1;  // autograd node, see Note [Nodes and tensors]
  Shape shape;
  DType dtype = DType::kF32;

  int64_t numel() const { return zoo::numel(shape); }
  int64_t bytes() const { return numel() * dtype_bytes(dtype); }
  int64_t dim(int i) const { return shape.at(i < 0 ? shape.size() + i : i); }
};

class Builder;

// One op under construction; emit() appends it to the graph.
//   b.op("aten::convolution", "layer1.0.conv1").in(x).in(w).out(y).flops(f).emit();
class OpBuilder {
 public:
  OpBuilder& in(const Var& v);   // read
  OpBuilder& out(const Var& v);  // created (a fresh tensor from Builder::fresh)
  OpBuilder& upd(const Var& v);  // read and modified in place
  // Reads the gradient of y (REQUIRES: b.has_grad(y)).
  OpBuilder& grad_in(const Var& y);
  // Produces x's gradient, see Note [Gradient accumulation]. Ignored when x
  // needs no gradient (inputs, integer tensors).
  OpBuilder& grad_out(const Var& x);
  OpBuilder& flops(double f);
  // Bytes read plus written; by default the sum over the op's Vars (views
  // count their own size), updates twice.
  OpBuilder& bytes(double b);
  OpId emit();

 private:
  friend class Builder;
  OpBuilder(Builder& b, std::string type, std::string name);
  Builder& b_;
  Op op_;
  std::vector<Var> ins_, outs_, upds_, grad_outs_;
  std::optional<double> bytes_;
};

class Builder {
 public:
  Builder(std::string graph_name, std::string source, Optimizer optimizer,
          Precision precision = Precision::kFp32);

  Precision precision() const { return precision_; }
  // The float type of activations: FP32, or the mixed-precision low type.
  DType float_type() const;

  // Persistent tensors and inputs.
  Var param(const std::string& name, Shape shape);
  Var buffer(const std::string& name, Shape shape);
  Var input(const std::string& name, Shape shape, DType dtype = DType::kF32);
  // A new transient tensor; exactly one op must list it as an output. A
  // float (kF32) one gets float_type(): see Note [Mixed precision].
  Var fresh(Shape shape, DType dtype = DType::kF32, TensorKind kind = TensorKind::kActivation);
  // The same, FP32 whatever the precision (the loss's log-softmax).
  Var fresh_fp32(Shape shape, TensorKind kind = TensorKind::kActivation);
  // What a GEMM or convolution reads for v under autocast: v itself, or for
  // an FP32 param or input in mixed precision its low-precision copy (made
  // once, Note [Mixed precision]).
  Var cast(const Var& v);
  // Same tensor, new node: a view with its own shape, or the new version an
  // in-place op makes.
  Var view(const Var& base, Shape shape);
  Var version(const Var& x) { return view(x, x.shape); }

  OpBuilder op(std::string type, std::string name = {}) {
    return OpBuilder(*this, std::move(type), std::move(name));
  }

  // Whether a gradient is computed for v: params and float transients,
  // except constants (no_grad).
  bool requires_grad(const Var& v) const;
  // Marks v as a constant (zeros for an initial state): no gradient flows to it.
  void no_grad(const Var& v) { constant_[v.node] = true; }

  // Registers fn to run in the backward pass (reverse registration order),
  // for the op that produced outputs; skipped when none of them got a
  // gradient. After it runs, the outputs' gradients are released.
  void on_backward(std::vector<Var> outputs, std::function<void()> fn);
  bool has_grad(const Var& v) const;
  Var grad(const Var& v) const;  // REQUIRES: has_grad(v)
  // x's gradient receives g unchanged (the backward of add, of a view, of an
  // in-place op that passes gradients through): aliases g when x has none,
  // else accumulates.
  void pass_grad(const Var& x, const Var& g);

  const std::string& tensor_name(const Var& v) const { return g_.tensors[v.tensor].name; }

  // Seeds d(loss)=1, runs the backward closures, emits the optimizer updates.
  Graph finish(const Var& loss);

 private:
  friend class OpBuilder;
  struct GradSlot {
    TensorId tensor = -1;
  };
  Var new_tensor(const std::string& name, Shape shape, DType dtype, TensorKind kind);
  int new_node();
  void set_grad(int node, TensorId t);
  void release(const Var& v);
  Var grad_var(const Var& x, TensorId t) const;
  void emit_update(const Var& param);

  void emit_unscale(const Var& param, const Var& inv_scale, const Var& found_inf);

  Graph g_;
  Optimizer optimizer_;
  Precision precision_;
  std::vector<DType> dtypes_;  // by tensor
  std::vector<Var> casts_;     // by tensor: its low-precision copy, if made
  Phase phase_ = Phase::kForward;
  std::vector<GradSlot> grads_;  // by node
  std::vector<bool> constant_;   // by node
  std::vector<int> holders_;     // by tensor: pending nodes whose gradient it is
  std::vector<Var> params_;      // registration order
  struct Closure {
    std::vector<Var> outputs;
    std::function<void()> fn;
  };
  std::vector<Closure> tape_;
};

}  // namespace sa::zoo
