#pragma once
// The executable part of a captured graph (docs/capture.md, "Exec file"):
// for every op, the ATen operator overload and its arguments, every tensor
// argument a view (dtype, sizes, strides, offset) of a graph tensor. Read
// here without libtorch; runtime/aten/aten_kernels.h runs it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/graph.h"

namespace sa::runtime {

// An argument of an op that takes the step's value of a step scalar (Note
// [Step scalars]): positional argument `position`, or keyword argument
// `kwarg` when that is not empty.
struct StepScalarUse {
  int position = -1;
  std::string kwarg;
  int slot = 0;  // index into the step's scalars
};

struct AtenOp {
  std::string qualname;    // "aten::addmm.default"
  std::string name;        // "aten::addmm"
  std::string overload;    // "" for .default
  nlohmann::json args;     // positional arguments (encoded)
  nlohmann::json kwargs;   // keyword arguments (encoded)
  nlohmann::json results;  // per return: a view of the graph tensor it creates, or null
  bool random = false;     // draws random numbers (a replay draws new ones)
  std::vector<StepScalarUse> step_scalars;  // arguments that change from step to step
  // Note [Skipped steps]: the op does not run when the first element of this
  // tensor (a float32 input of the graph's op) is not zero; -1: it runs.
  TensorId skip_if_nonzero = -1;
};

struct AtenProgram {
  std::string origin;  // the file
  std::string graph_name;
  std::string torch_version;
  std::string capture_device;
  std::vector<int64_t> storage_bytes;  // per tensor: the storage's bytes (<= the graph's bytes)
  std::vector<AtenOp> ops;             // per op
  OpId loss_after_op = kNoOp;          // the loss is read right after this op
  nlohmann::json loss_view;            // {"tensor": id, "dtype", "sizes", "strides", "offset"}
  double captured_loss = 0;            // the loss of the captured iteration (informative)
  // The default generator's seed at the start of the first iteration
  // ("rng": {"seed": S}; Note [ATen recompute]); none: left as it is.
  std::optional<uint64_t> rng_seed;
  // Note [Step scalars]: the captured step's value of each step scalar (what
  // a run uses when its caller gives none).
  std::vector<double> step_scalars;
};

// Note [Skipped steps]
// --------------------
// With FP16 and a GradScaler, a step whose scaled gradients overflowed does
// not update: torch's GradScaler.step reads found_inf into Python and calls
// optimizer.step() only when it is zero. A captured step records the
// optimizer's ops once, each with "skip_if_nonzero": found_inf's tensor (an
// input of its graph op, so that the plan keeps it on the device); the
// kernels run such an op only when found_inf's first element is zero, so a
// step that overflowed leaves parameters and optimizer state as they were,
// as eager PyTorch does. The scaler's update (_amp_update_scale_) runs
// either way. AtenKernels::steps_skipped() counts the iterations that
// skipped, so that a training loop does not count the step.

// Note [Step scalars]
// -------------------
// An optimizer's step computes some of its arguments in Python from its
// settings and its step count: SGD's -lr, Adam's -lr / (1 - beta1^t) and
// sqrt(1 - beta2^t), AdamW's 1 - lr * weight_decay. A captured step holds the
// values of one step. The exec file may name such arguments (an op's
// "step_scalars": [[argument, slot], ...], the argument a position or a
// keyword) and give their captured values ("step_scalars": {"values": [...]}).
// A caller that knows each step's values (swapadvisor.Trainer computes them
// with the user's own optimizer class, python/swapadvisor_capture/
// step_scalars.py) hands them in before each iteration
// (AtenKernels::set_step_scalars); the op then gets the value as a Python
// float reaches it in eager PyTorch (a double), so the step computes what
// eager PyTorch computes at that step, learning-rate schedules included.
// A run given none uses the captured values at every iteration.

// Reads an exec file (.json or .json.gz) and checks it against its graph:
// same name, op and tensor counts, every tensor argument a view that lies
// inside its graph tensor, and every tensor an op's arguments name is one it
// accesses in the graph. Throws sa::Error naming the file, op and argument.
// Ids, sizes, strides and offsets are whole numbers (not 5.5, not 2^32 + 1
// for a 32-bit id), and no view's extent overflows (Note [Input limits]).
AtenProgram read_aten_program(const std::string& path, const Graph& g);
// The same from the file's text (gunzipped); origin names it in errors.
AtenProgram parse_aten_program(std::string_view text, const std::string& origin, const Graph& g);

// The program of `with`, a graph that is p's graph with collective ops
// spliced in (data_parallel_graph in plan/data_parallel.h): p's ops in their
// order at the non-collective ops, and for each "sa::all_reduce" an entry of
// that name whose arguments are its updates, each viewed whole (Note [ATen
// data parallelism] in runtime/aten/aten_kernels.h). Throws sa::Error, naming the
// op, for a reduce-scatter or all-gather (--shard-optimizer plans), an
// update without a dtype the kernels can average, or a graph whose other
// ops are not p's.
AtenProgram with_collectives(const AtenProgram& p, const Graph& with);

// Bytes per element of a dtype name ("float32" -> 4); 0 when unknown.
int dtype_size(const std::string& dtype);

}  // namespace sa::runtime
