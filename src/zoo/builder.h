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

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace sa::zoo {

using Shape = std::vector<int64_t>;
int64_t numel(const Shape& s);

enum class DType : uint8_t { kF32, kI64, kBool };
int dtype_bytes(DType d);

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
  Builder(std::string graph_name, std::string source, Optimizer optimizer);

  // Persistent tensors and inputs.
  Var param(const std::string& name, Shape shape);
  Var buffer(const std::string& name, Shape shape);
  Var input(const std::string& name, Shape shape, DType dtype = DType::kF32);
  // A new transient tensor; exactly one op must list it as an output.
  Var fresh(Shape shape, DType dtype = DType::kF32, TensorKind kind = TensorKind::kActivation);
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

  Graph g_;
  Optimizer optimizer_;
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
