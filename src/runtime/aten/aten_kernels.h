#pragma once
// ATen kernels: each op of a captured graph (runtime/aten/aten_program.h) run
// through libtorch's dispatcher, on views into the memory the Plan gives it.
//
// Note [ATen kernels]
// -------------------
// run(o, ptrs) gets, for each access of op o in for_each_access order
// (outputs, inputs, updates), the address of the pool object that holds the
// tensor (on the host backend an address in the host-emulated device arena,
// on CUDA a device address). It builds, once per call, a c10::Storage over
// each object (non-owning, not resizable, the graph tensor's bytes) and, for
// every tensor argument, a TensorImpl on that storage with the captured
// dtype, sizes, strides and storage offset: a view, as the captured op saw
// it. Non-tensor arguments are decoded against the operator's schema;
// missing ones take the schema's defaults (as a Python call does). Python
// numbers in Tensor positions become wrapped-number CPU tensors, as PyTorch
// makes them. The op is called boxed (OperatorHandle::callBoxed) below
// autograd (AutoDispatchBelowADInplaceOrView).
//
// Outputs. In-place and out= ops write their objects directly (the views).
// An op that returns fresh tensors allocates them itself; on CPU the kernel
// backend installs a placing allocator (c10::SetAllocator) that, while op o
// runs, answers an allocation of exactly an output's storage size with that
// output's object, once per output, made by the thread running o or by its
// kernel's workers only (libtorch's allocator serves the whole process:
// runtime/aten/placement_slots.h says what another thread's allocation
// did). After the call each result is checked: if its storage is the
// object and its geometry is the captured one, it was written in place
// (counted as "placed"); otherwise - a kernel allocated a
// temporary of the same size first, or the device has no placing allocator
// (CUDA) - it is copied into its object and counted as "copied" with its
// bytes and time (AtenStats). Other allocations the kernels make (scratch,
// temporaries of composite kernels) go to the regular allocator, outside the
// plan's arena; their peak is reported as scratch_peak_bytes.
//
// Note [ATen on CUDA]
// -------------------
// With a libtorch that has CUDA (the plugin is then built with SA_ATEN_CUDA),
// the pointers are device addresses in the CUDA backend's arena and run()
// gets the backend's compute stream. It makes that stream libtorch's current
// one (c10::cuda::getStreamFromExternal, CUDAStreamGuard) while it queues
// the op, so the op's kernels are ordered with the swaps by the executor's
// events like any compute step, and it returns without waiting for them.
// Outputs are placed as on the CPU, by an allocator that takes libtorch's
// place for the whole process (torch 2.x's pluggable CUDA allocator,
// runtime/aten/aten_cuda.h): planned objects for the outputs, scratch from CUDA's
// stream-ordered pool (cudaMallocAsync on the stream asking, counted) for
// anything else. A libtorch that cannot swap its allocator gets its
// results copied into their objects (counted). The loss is copied on the
// stream and read when losses() is called, after the run.
//
// Note [ATen recompute]
// ---------------------
// A recompute step (Note [Plan semantics]) runs op o again: recompute(o,
// ptrs) gets the step's objects as run() gets the op's and makes the same
// call on them. The outputs go to the step's objects (placed or copied as
// run()'s are); one that no later op reads only passes through its object.
// The loss is read on the op's first run only. An op whose recompute skips
// its updates (batch norm's running statistics, Note [Recompute without
// updates] in graph/graph.h) gets no objects for them: it runs on zeroed
// scratch copies, so the outputs are the first run's (they do not depend on
// the statistics) and the statistics are updated once per iteration.
//
// Random draws. A recompute must give the values the first run gave, and
// a random op draws from its device's default generator (the capture
// refuses explicit generators), whose state moves on with every draw. So:
//   - run() of an op the exec file marks random first keeps the generator's
//     state (Generator::get_state: the CPU's mt19937 state, 5 KB; CUDA's
//     Philox seed and offset), replacing the previous iteration's;
//   - recompute() of it keeps the live state, puts back the one kept before
//     the op's latest run, runs the op - the same draws, the same values -
//     and puts the live state back, so that the ops after it draw what they
//     would without the recompute: a plan with recomputes trains bit for bit
//     as its order without them;
//   - recompute() of an op not marked random checks that the generator did
//     not move; if it did, the op drew numbers that the capture did not mark
//     and that cannot be replayed, and the run fails naming the op: never
//     silently different values.
// The generator starts from the exec file's seed (AtenProgram::rng_seed):
// the capture and the eager reference seed it so right before the first
// iteration, so a planned run draws what eager PyTorch draws as long as the
// plan runs the random ops in program order among themselves
// (random_ops_out_of_order in runtime/aten/aten_run.h; otherwise the training is
// as correct, with other numbers). On CUDA the state is read and set while
// the op is queued, which is when libtorch reads it for the kernels'
// arguments.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "runtime/aten/aten_program.h"
#include "runtime/aten/values_file.h"

namespace sa::runtime {

struct AtenOptions {
  std::string device = "cpu";  // "cpu" or "cuda" (the device the pointers live on)
  int cuda_device = 0;         // cuda: which GPU
  bool place_outputs = true;   // CPU: install the placing allocator
  int threads = 0;             // intra-op threads (at::set_num_threads); 0: libtorch's default
  // An all-reduce op's exchange (Note [ATen data parallelism]): the mean
  // over the ranks, in place, of `count` host values of `elem_bytes` (4:
  // float, 8: double). Unset: one rank, the identity.
  std::function<void(void* data, int64_t count, int elem_bytes)> all_reduce_mean;
};

struct AtenStats {
  int64_t ops_run = 0;
  int64_t outputs_placed = 0;  // results the kernel wrote directly into their object
  int64_t outputs_copied = 0;  // results copied into their object after the kernel
  int64_t copied_bytes = 0;
  double copy_us = 0;              // time spent in those copies
  double kernel_us = 0;            // time in the operators (on CUDA: queueing them)
  int64_t scratch_peak_bytes = 0;  // CPU: peak of kernel allocations outside the plan
  int64_t ops_recomputed = 0;      // recompute() calls (Note [ATen recompute])
  int64_t random_replays = 0;      // of those, random ops run again on their kept state
  int64_t all_reduces = 0;         // all-reduce ops run (Note [ATen data parallelism])
};

class AtenKernels {
 public:
  virtual ~AtenKernels() = default;
  // Runs op o (Note [ATen kernels]). ptrs: one address per access of the op
  // in for_each_access order. stream: on CUDA the cudaStream_t to queue the
  // op's kernels on (libtorch's current stream while it runs; Note [ATen on
  // CUDA]); on the CPU null. Called from one thread at a time. Throws
  // sa::Error naming the op when the operator fails or a result differs in
  // shape from the capture.
  virtual void run(OpId o, std::span<std::byte* const> ptrs, void* stream) = 0;
  // Runs op o again for a recompute step, after run(o) in the same
  // iteration: ptrs are the step's objects, the draws of a random op those
  // of its latest run (Note [ATen recompute]). Throws sa::Error naming the
  // op when it drew random numbers the exec file did not mark.
  virtual void recompute(OpId o, std::span<std::byte* const> ptrs, void* stream) = 0;
  // The loss of every run of the loss op so far, in order (on CUDA it waits
  // for the compute stream).
  virtual std::vector<double> losses() const = 0;
  // The latest of them (NaN before the first): what a training loop reads
  // after each iteration, without copying them all (runtime/aten/aten_session.h).
  virtual double last_loss() const = 0;
  virtual AtenStats stats() const = 0;
  // Note [Skipped steps] (runtime/aten/aten_program.h): the iterations so far whose
  // ops with skip_if_nonzero found it set.
  virtual int64_t steps_skipped() const = 0;
  virtual std::string description() const = 0;
  // The values the program's step scalars take from the next op on (Note
  // [Step scalars] in runtime/aten/aten_program.h), one per slot; before the
  // first call, the captured ones. Called between iterations. Throws
  // sa::Error when the count is not the program's.
  virtual void set_step_scalars(
      std::span<const double> values) = 0;  // "libtorch 1.13.0 on cpu, 2 threads"
};

// Note [ATen data parallelism]
// -----------------------------
// A data-parallel plan (plan/data_parallel.h) is read against the captured
// graph with its collective ops spliced in; the exec file knows only the
// captured ops, so with_collectives (runtime/aten/aten_program.h) gives each
// "sa::all_reduce" op an entry whose arguments are its gradients, each
// viewed whole (the graph tensor's dtype, one dimension, its storage's
// elements). run() of such an op averages them over the ranks as PyTorch's
// DistributedDataParallel does: AtenOptions::all_reduce_mean (MPI on host
// memory, runtime/mpi/ranks.h) on the tensor itself when it is a float or double
// on the CPU, otherwise on a float copy on the CPU (on CUDA after the compute
// stream's work so far; staged, as the synthetic kernels' collectives are)
// copied back. Every rank starts from the same parameters and trains on its
// own batch (its values file), so the parameters and optimizer state stay
// the same on every rank; buffers (batch norm's running statistics) are each
// rank's own, as with DDP's broadcast_buffers=False. Reduce-scatter and
// all-gather (--shard-optimizer) would need the optimizer ops to run on
// shards of their tensors, which the exec file does not describe: such a
// plan is refused.
//
// Note [ATen plugin]
// ------------------
// The kernels live in a plugin, libswapadvisor_aten.so, built when libtorch
// is found (SA_WITH_TORCH) and loaded (dlopen) on first use by
// runtime/aten/aten_loader.cpp. Loading libtorch costs most of a second of static
// initialisation (operator registration), which every command and every test
// process would otherwise pay; now only `run --kernels aten` does. The plugin
// is looked up at $SA_ATEN_PLUGIN, then beside the executable, then where
// this build put it. It must come from the same build as the program (it
// shares these types); kAtenPluginAbi catches a stale one.

// True when the plugin loads (the first call loads it).
bool aten_available();
// Why it does not (empty when it does).
std::string aten_unavailable_reason();
// The libtorch version the plugin was built with, e.g. "2.6.0" (empty
// without a plugin).
std::string aten_torch_version();
// Whether a capture made with torch `captured` ("1.13.0a0+git...") runs on
// the same release's kernels as `kernels` (major and minor equal). Across
// releases an op's kernel may compute differently, so the capture's eager
// reference need not be reproduced.
bool same_torch_release(std::string_view captured, std::string_view kernels);

// Throws sa::Error when the plugin does not load (built without libtorch),
// when the device is not available, or when this libtorch lacks one of the
// program's operators.
std::unique_ptr<AtenKernels> make_aten_kernels(const Graph& g, const AtenProgram& p,
                                               const AtenOptions& o);

// What the plugin exports (extern "C" sa_aten_plugin()).
inline constexpr int kAtenPluginAbi = 8;  // 7: set_step_scalars; 8: steps_skipped
struct AtenPlugin {
  int abi = kAtenPluginAbi;        // first, so that any plugin's can be read
  const char* version = "";        // swapadvisor's version, as built
  const char* torch_version = "";  // libtorch's (TORCH_VERSION)
  std::unique_ptr<AtenKernels> (*make)(const Graph&, const AtenProgram&,
                                       const AtenOptions&) = nullptr;
};

// The captured step run in program order with every tensor in its own
// buffer (no plan, no swapping): the reference the planned runs are
// compared with, and a check of the exec file. CPU only.
struct ProgramOrderResult {
  std::vector<double> losses;  // one per iteration
  ValuesFile final_state;      // persistent tensors after the last iteration
  AtenStats stats;
};
ProgramOrderResult run_program_order(const Graph& g, const AtenProgram& p,
                                     const ValuesFile& initial, int iterations,
                                     const AtenOptions& o);

}  // namespace sa::runtime

extern "C" const sa::runtime::AtenPlugin* sa_aten_plugin();
