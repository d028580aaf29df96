#pragma once
// `swapadvisor run --kernels aten`: a Plan of a captured graph executed by the
// runtime (runtime/executor.h) on the host backend, its compute stream
// running the ATen kernels (runtime/aten/aten_kernels.h) on the real data.
//
// The executor does everything as for synthetic kernels - one arena of
// exactly the budget, pool objects, host copies, three streams, swaps,
// events - with three differences: host copies of the tensors that exist at
// the start hold their captured values (the values file), every op runs its
// ATen operator on views into its objects instead of a synthetic kernel (and
// takes as long as it takes: no time scale), and at the end every persistent
// tensor's latest value, wherever it is, is read back. The synthetic
// integrity check does not apply; bench/torch-equivalence compares losses
// and final state with eager PyTorch instead.

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "plan/plan.h"
#include "runtime/aten/aten_kernels.h"
#include "runtime/aten/values_file.h"
#include "runtime/executor.h"

namespace sa::runtime {

struct AtenRunOptions {
  int iterations = 1;
  RankInfo ranks;    // as RunOptions::ranks
  AtenOptions aten;  // device "cpu": the host backend
  // A training loop (runtime/aten/aten_session.h). next_batch as in RunOptions:
  // before each iteration, false ends the run. batch_value then fills an
  // input's host copy (its bytes, zero-padded to the tensor's) with the batch
  // of the coming iteration, instead of its initial value; on_loss gets each
  // iteration's loss as soon as the iteration is done.
  std::function<bool(int iteration)> next_batch;
  std::function<void(TensorId, std::byte* host, int64_t bytes)> batch_value;
  // skipped: the iteration's optimizer ops were skipped (Note [Skipped steps]).
  std::function<void(int iteration, double loss, bool skipped)> on_loss;
  // Note [Step scalars] (runtime/aten/aten_program.h): the iteration's values
  // (empty: those of the iteration before, at first the captured ones),
  // asked for once per iteration, just before its first op that takes one
  // (on the thread that runs the kernels: it may wait for them).
  std::function<std::vector<double>(int iteration)> step_scalars;
  std::string nvme_path;  // RunOptions::nvme_path (Note [Host tier])
};

struct AtenRunResult {
  RunResult run;               // the executor's result (timing, traffic, peak, arena)
  std::vector<double> losses;  // one per iteration
  ValuesFile final_state;      // every persistent tensor after the last iteration
  AtenStats stats;             // placed and copied outputs, scratch outside the arena
  std::string kernels;         // AtenKernels::description()
};

// REQUIRES: p verified for g (verify_plan). Throws sa::Error for a values
// file without a value for some tensor that exists at the start.
AtenRunResult run_plan_aten(const Graph& g, const Plan& p, const AtenProgram& program,
                            const ValuesFile& initial, const AtenRunOptions& o);

// The first two random ops (a, b) that the plan's order runs against program
// order (a before b though b < a), or none. Such a plan draws other numbers
// than eager PyTorch, which draws in program order (Note [ATen recompute]):
// as correct a training, not comparable bit for bit.
std::optional<std::pair<OpId, OpId>> random_ops_out_of_order(const Plan& p,
                                                             const AtenProgram& program);

}  // namespace sa::runtime
