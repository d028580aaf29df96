#pragma once
// The executor: runs a Plan on a backend and proves that it computed what an
// unconstrained run computes.
//
//   auto backend = sa::runtime::make_host_backend({});
//   sa::runtime::RunOptions o;  o.iterations = 3;
//   sa::runtime::RunResult r = sa::runtime::run_plan(*backend, g, plan, op_us, o);
//   // r.integrity == "ok", r.iteration_wall_us, r.peak_device_bytes ...
//
// Note [Executing a plan]
// -----------------------
// Setup (untimed): one device arena of exactly plan.memory_budget bytes,
// allocated once; object k lives at arena offset objects[k].offset
// (Note [Plan semantics], plan/plan.h). Host storage, one buffer per tensor,
// for every persistent tensor and input (initialised with init_word) and for
// every tensor the plan swaps. The initial resident tensors are copied into
// their objects (the warm-up). Then N iterations run back to back, each
// starting from where the previous one ended.
//
// Issue: one host thread issues the steps in list order (every wait refers to
// an earlier step). A compute step launches its op's kernel on the compute
// stream, a swap-in copies host→device on the H2D stream, a swap-out
// device→host on the D2H stream, each followed by an event. Before issuing a
// step, its stream waits for the events of the steps in its `waits` (a drop,
// on no stream, stands for the steps it waits for). A stream never waits for
// its own earlier steps (streams run in order), nor twice for the same point
// of another stream.
//
// Object reuse (the safety net, as PyTorch's caching allocator does it): the
// executor remembers, per object, the last step of each stream that touched
// it. A step that puts a new tenant into an object (a swap-in, an op creating
// an output, an op's workspace) makes its stream wait for those steps too, so
// that a tenant never moves in while another stream still reads or writes
// the previous one, whatever the plan's own waits say. The verifier already
// checks the plan; this only makes a runtime bug or a bypassed verifier
// harmless to neighbours. It adds no wait to a verified plan's run unless the
// plan orders the release indirectly; RunResult::safety_waits counts them.
// Reads are NOT covered: a compute step that reads a tensor whose swap-in it
// does not wait for reads whatever is there, and the integrity check says so.
//
// Integrity (Note [Synthetic kernels], runtime/synthetic.h): each op kernel
// records the checksums of the outputs and updates it wrote; at the end of
// each iteration, the executor also checksums every persistent tensor where
// its latest value is (its initial-resident object if it is back there, else
// its host buffer). All of them must equal those of the reference run
// (runtime/reference.h); the first difference, in plan order, is reported
// with its iteration, op and tensor.
//
// Timing: each iteration is timed from an event recorded on the compute
// stream before its first step to the last event of its steps. The measured
// timeline (step end: its event; start: when its stream and its waits were
// done) gives the device bytes in use over time as the simulator computes
// them (memory_profile in plan/simulator.h).
//
// Note [Time scale]
// -----------------
// RunOptions::time_scale stretches every op: its kernel is launched with a
// duration of op_us x time_scale, and the host backend's paced copies are
// stretched alike (Note [Paced copies], runtime/host/link_pacer.h), so the wall
// time divided by the scale is comparable with the simulated iteration. On
// the host backend the compute thread runs the synthetic kernel, then sleeps
// until the op's end on the compute stream's clock (Note [Stream clocks] in
// runtime/host/host_backend.cpp). The kernel touches a few words per 4 KiB page
// of every tensor the op accesses, each a cache and TLB miss (tens of ns),
// so a memory-bound op on a large tensor, which a GPU finishes in a few
// hundred us, needs a scale of 20 to 60 for its kernel to fit. An op
// whose kernel does not fit is late, and so are the ops after it until they
// have made the time up; RunResult::late_kernels and kernel_overrun_wall_us
// say how many kernels ran past their op's duration and by how much. A
// measured time above the simulated one with a large overrun means the scale
// is too small for this host, not that the plan is slow.
//
// Note [Automatic time scale]
// ---------------------------
// Which scale is enough depends on the host and the graph (a 2-core VM
// needed 20 for ResNet-50; a graph of tiny ops needs more, for the threads'
// wake-ups), so a fixed default misleads: at 1, a run measured 24 x its
// simulated time. With RunOptions::choose_time_scale set, run_plan measures
// the host first: after the warm-up it runs one calibration iteration at
// time scale 0 (kernels do not wait out their ops, copies are not paced),
// checked like the others but not timed with them, and asks
// choose_time_scale for the scale of the timed iterations given its wall
// time. `run` chooses auto_time_scale(): the scaled iteration lasts
// kCalibrationHeadroom x that wall time, so that the host's own work (the
// kernels, memcpy at its own speed, the threads' wake-ups) takes a small
// share of every op's and copy's time; under mpirun the ranks take the
// largest scale any of them needs. The price is time: each timed
// iteration takes kCalibrationHeadroom x the calibration's wall time. At 10,
// plans of ResNet-50 and an LSTM at 50% of their peak measured within 0.3%
// of their simulated time on a loaded 2-core VM (docs/runtime.md, `swapadvisor
// run`); at half that headroom one LSTM iteration of three was 16% slow.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "plan/plan.h"
#include "plan/simulator.h"
#include "runtime/backend.h"
#include "runtime/mpi/ranks.h"

namespace sa::runtime {

struct RunOptions {
  int iterations = 1;
  // This process's rank and how many run the plan, as init_ranks() gives
  // them under mpirun (passed in, not read from MPI here: a test can run
  // rank 1's inputs alone). Rank 0 of 1: no checkpoints, inputs unsalted
  // (Note [Ranks], Note [Rank failures] in runtime/mpi/ranks.h).
  RankInfo ranks;
  double time_scale = 1;        // each op's kernel lasts op_us x time_scale
  bool check_integrity = true;  // run the reference and compare
  // Real data (the ATen kernels, runtime/aten/aten_run.h). init_host, when set,
  // fills the host copy of every tensor that exists at the start instead of
  // the synthetic init_word pattern; final_value, when set, receives every
  // persistent tensor's latest bytes after the last iteration (from its
  // initial-resident object or its host copy).
  std::function<void(TensorId, std::byte* host, int64_t bytes)> init_host;
  std::function<void(TensorId, const std::byte* data, int64_t bytes)> final_value;
  bool safety_net = true;  // object-reuse waits (Note [Executing a plan]); off: tests only
  // When set, a calibration iteration at time scale 0 runs first, and the
  // timed iterations run at the scale this returns given its wall time (Note
  // [Automatic time scale]); time_scale is then not used.
  std::function<double(double calibration_wall_us)> choose_time_scale;
  // When set, called after each timed iteration (0-based) with its wall time:
  // a progress line.
  std::function<void(int iteration, double wall_us)> on_iteration;
  // A training loop (runtime/aten/aten_session.h). When set, called before each
  // timed iteration (0-based); false ends the run there (`iterations` is then
  // an upper bound). Every input tensor gets init_host again before each
  // iteration, not only those an op updates: the batch it is to train on. An
  // input the plan keeps resident is copied to its object again, untimed.
  std::function<bool(int iteration)> next_batch;
  // What else every rank must agree on, as "key: value" items separated by
  // "; " (e.g. "kernels: synthetic"), compared at the checkpoint before the
  // run with the graph, the plan and the options above (Note [Rank failures]
  // in runtime/mpi/ranks.h).
  std::string agree;
  // Note [Host tier] (plan/host_tier.h): the file (or block device) that
  // holds the plan's NVMe tensors (runtime/nvme/nvme_store.h); needed when
  // the plan has any, created and removed by the run.
  std::string nvme_path;
  // The staging chunk (0: nvme_staging_chunk, as the plan counts it); tests
  // give a smaller one, so that copies go in many chunks.
  int64_t nvme_chunk_bytes = 0;
};

struct RunResult {
  std::vector<double> iteration_wall_us;  // per iteration
  int64_t swap_in_bytes = 0;              // per iteration
  int64_t swap_out_bytes = 0;             // per iteration
  int recomputes = 0;                     // recompute steps, per iteration
  int64_t peak_device_bytes = 0;          // over all iterations, from the measured timelines
  int64_t arena_bytes = 0;                // the device arena: exactly the plan's budget
  int64_t pool_end_bytes = 0;             // the end of the last object in the arena
  int64_t host_bytes = 0;                 // host storage (NVMe staging included)
  int64_t nvme_bytes = 0;                 // the NVMe tensors' file (Note [Host tier])
  std::string nvme_backend;               // its engine: "io_uring" or "threads"; empty: none
  int safety_waits = 0;                   // per iteration (Note [Executing a plan])
  // Per iteration: the op kernels that ran past their op's duration, and by
  // how much in all (wall us); host backend only (Backend::take_kernel_overrun).
  std::vector<int> late_kernels;
  std::vector<double> kernel_overrun_wall_us;
  bool integrity_checked = false;
  bool integrity_ok = true;
  std::string integrity = "ok";      // "ok", or the first difference
  std::vector<StepTiming> timeline;  // of the last iteration, wall us from its start
  double time_scale = 1;             // the timed iterations' (RunOptions::choose_time_scale)
  double calibration_wall_us = 0;    // the calibration iteration's wall time; 0: none ran

  double median_wall_us() const;
};

inline constexpr double kCalibrationHeadroom = 10;

// The time scale after a calibration iteration of wall_us for a simulated
// iteration of simulated_us (Note [Automatic time scale]):
// kCalibrationHeadroom x wall_us / simulated_us, rounded up to two
// significant digits (24, 4.6, 1300) so that it reads as chosen, at least 1
// (a host that keeps up runs at the device's speed) and at most max_scale; 1
// when either time is not positive.
double auto_time_scale(double wall_us, double simulated_us, double max_scale);

// REQUIRES: g passed validate_graph and p passed read_plan's structural
// checks (ids in range, waits to earlier steps); it need not be correct (the
// integrity check reports what a wrong plan computes). op_us: op_times_us.
// Throws sa::Error when the pool does not fit the budget or memory runs out.
RunResult run_plan(Backend& backend, const Graph& g, const Plan& p, std::span<const double> op_us,
                   const RunOptions& options);

}  // namespace sa::runtime
