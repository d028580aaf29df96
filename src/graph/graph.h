#pragma once
// The graph IR: one training iteration's dataflow graph, as format v1 defines
// it (docs/graph-format.md). Tensors and ops are identified by dense integer
// ids equal to their index; names exist for people only.
//
// A Graph is plain data. Build one with the zoo, read one with read_graph()
// (graph/graph_io.h), and check a hand-built one with validate_graph()
// (graph/validate.h) before planning it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sa {

using TensorId = int32_t;
using OpId = int32_t;
inline constexpr OpId kNoOp = -1;

enum class TensorKind : uint8_t {
  kParam,           // persistent: trainable model state
  kBuffer,          // persistent: non-trainable model state (running stats)
  kOptimizerState,  // persistent: momentum, Adam moments
  kInput,           // in host memory at the start, never written back
  kActivation,      // transient ...
  kGradient,
  kTemp,
};

// Persistent tensors exist before the iteration, their master copy in host
// memory, and their value at the end must be kept.
constexpr bool is_persistent(TensorKind k) {
  return k == TensorKind::kParam || k == TensorKind::kBuffer || k == TensorKind::kOptimizerState;
}
// Transient tensors are created by exactly one op and die after their last access.
constexpr bool is_transient(TensorKind k) {
  return k == TensorKind::kActivation || k == TensorKind::kGradient || k == TensorKind::kTemp;
}
// Tensors that exist (in host memory) when the iteration starts.
constexpr bool exists_at_start(TensorKind k) {
  return !is_transient(k);
}

std::string_view to_string(TensorKind k);
std::optional<TensorKind> parse_tensor_kind(std::string_view s);
// The kind with its article, for messages: "an activation", "a param".
std::string with_article(TensorKind k);

enum class Phase : uint8_t { kUnknown, kForward, kBackward, kUpdate };
std::string_view to_string(Phase p);  // "" for kUnknown
std::optional<Phase> parse_phase(std::string_view s);

// The arithmetic an op runs in, which picks the device's peak rate for its
// flops (cost/op_cost.h). Format 1.2's optional op field "dtype"
// (docs/graph-format.md, "Precision"); absent means kFp32, the paper's and
// format 1.0's setting. kTf32 is float32 data on TF32 tensor cores.
enum class MathType : uint8_t { kFp32, kTf32, kFp16, kBf16, kFp8 };
std::string_view to_string(MathType m);  // "float32", "tf32", "float16", "bfloat16", "float8"
std::optional<MathType> parse_math_type(std::string_view s);

struct Tensor {
  int64_t bytes = 0;
  TensorKind kind = TensorKind::kActivation;
  std::string name;            // optional
  std::vector<int64_t> shape;  // optional, informative
  std::string dtype;           // optional, informative
};

struct Op {
  std::string type;  // e.g. "aten::convolution"
  Phase phase = Phase::kUnknown;
  std::vector<TensorId> inputs;   // read
  std::vector<TensorId> outputs;  // transient tensors created
  std::vector<TensorId> updates;  // read and modified in place
  std::optional<double> time_us;  // measured on the target device
  std::optional<double> flops;
  std::optional<double> bytes_accessed;
  int64_t workspace_bytes = 0;  // scratch memory while it runs
  std::string name;             // optional
  // Format 1.1 (docs/graph-format.md, "Recomputation"): false forbids
  // running the op again to recreate its outputs; `random`: the op draws
  // random numbers (dropout), so running it again gives the same outputs
  // only where the backend replays its random state.
  bool recompute = true;
  bool random = false;
  // Format 1.3 ("Recomputation"): the outputs do not depend on what the op
  // updates (batch norm's running statistics, which it only accumulates
  // into), so it may run again without them: a recompute leaves its updates
  // alone (Note [Recompute without updates]).
  bool recompute_skips_updates = false;
  // Format 1.2: the math its flops run in (docs/graph-format.md, "Precision").
  MathType math = MathType::kFp32;
};

// Collective ops: what data-parallel planning adds to one rank's graph (Note
// [Data parallelism as a graph transformation] in plan/data_parallel.h). They
// update the tensors they reduce or gather and run on the collective stream.
inline constexpr std::string_view kCollectiveTypes[] = {"sa::all_reduce", "sa::reduce_scatter",
                                                        "sa::all_gather"};
inline bool is_collective(const Op& op) {
  for (std::string_view t : kCollectiveTypes)
    if (op.type == t) return true;
  return false;
}

// Whether a plan may run op again to recreate its outputs: allowed by the
// graph, no in-place updates (running it again would apply them twice) or
// updates a recompute skips, and at least one output.
inline bool may_recompute(const Op& op) {
  return op.recompute && (op.updates.empty() || op.recompute_skips_updates) && !op.outputs.empty();
}

// Note [Recompute without updates]
// --------------------------------
// Batch norm in training mode reads its running statistics only to fold the
// batch's statistics into them: its outputs do not depend on them. A capture
// marks such an op (Op::recompute_skips_updates), and then a recompute step
// runs it on its outputs and inputs alone: its update slots are not part of
// the step (objects_of_step has none for them), a backend that must pass
// something runs it on scratch copies, and the updated tensors keep the
// version the op's one real run gave them. Without this, every batch norm a
// capture records could never be recomputed, since running its update twice
// would count the batch twice.
// Whether a step that runs op (a recompute step when `recompute`) accesses
// its updates: every step does, but a recompute of such an op.
inline bool step_touches_updates(const Op& op, bool recompute) {
  return !recompute || !op.recompute_skips_updates;
}

struct Graph {
  std::string name;
  std::string source;
  std::vector<Tensor> tensors;
  std::vector<Op> ops;

  int num_tensors() const { return static_cast<int>(tensors.size()); }
  int num_ops() const { return static_cast<int>(ops.size()); }
};

// Note [Update replay]: whether a plan may run op again, right after a
// recompute of the op that made what it updates, to bring that tensor back
// to the version after the update: an op allowed by the graph that only
// updates transients in place (relu_ after batch norm, the residual add_)
// and creates nothing. On the version it read, it makes the same version
// again; anywhere else it would apply its update twice.
inline bool may_replay_update(const Graph& g, const Op& op) {
  if (!op.recompute || op.updates.empty() || !op.outputs.empty()) return false;
  for (TensorId t : op.updates)
    if (!is_transient(g.tensors[t].kind)) return false;
  return true;
}

// How messages name an op and a tensor: "op 5 'fc1' (aten::mm)", or "op 5
// (aten::mm)" without a name; "tensor 3 'x'", or "tensor 3".
std::string describe_op(const Graph& g, OpId o);
std::string describe_tensor(const Graph& g, TensorId t);

// How an op touches a tensor.
enum class Access : uint8_t { kRead, kCreate, kUpdate };

// Calls f(tensor_id, access) for every tensor op touches, outputs first, then
// inputs, then updates (the order is not significant).
// for_each_step_access(op, recompute, f): the same for a step that runs op:
// a recompute step of an op whose recompute skips its updates has no update
// accesses (Note [Recompute without updates]); every other step has all.
template <typename F>
void for_each_step_access(const Op& op, bool recompute, F&& f) {
  for (TensorId t : op.outputs)
    f(t, Access::kCreate);
  for (TensorId t : op.inputs)
    f(t, Access::kRead);
  if (!step_touches_updates(op, recompute)) return;
  for (TensorId t : op.updates)
    f(t, Access::kUpdate);
}
template <typename F>
void for_each_access(const Op& op, F&& f) {
  for_each_step_access(op, false, f);
}

}  // namespace sa
