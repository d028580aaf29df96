#pragma once
// A training loop over a plan: the executor with ATen kernels
// (runtime/aten/aten_run.h) kept running between steps, each step on the batch
// its caller gives. What swapadvisor.Trainer (python/swapadvisor/trainer.py)
// runs every step with.
//
//   AtenSession s(graph, plan, program, initial_values, options);
//   for (...) loss = s.step({{input_id, bytes}, {target_id, bytes}});
//   ValuesFile state = s.finish();  // every persistent tensor, trained
//
// Note [Training session]
// -----------------------
// run_plan_aten does the setup once (the arena of exactly the budget, the
// host copies, the kernels, the warm-up) and then runs iterations back to
// back; a session runs it on a thread of its own with a next_batch hook
// (RunOptions) that waits for the caller's next step. step() hands the batch
// over, the run copies it into the inputs' host buffers (and into the
// objects of inputs the plan keeps resident), runs one iteration and hands
// back its loss; finish() ends the run, which reads every persistent
// tensor back from where its latest value is. Between steps the run waits
// with every stream idle, so the plan's steady state (an iteration starts
// where the previous one ended) holds across steps as across `run`'s
// iterations: a session trains exactly as `swapadvisor run --kernels aten`
// with a new batch at every iteration.
//
// An error in the run (a kernel that fails, a batch that does not fit its
// tensor) ends it: that step() and every later call throw it.

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "plan/plan.h"
#include "runtime/aten/aten_program.h"
#include "runtime/aten/aten_run.h"
#include "runtime/aten/values_file.h"

namespace sa::runtime {

// One input's value for a step: the bytes of its storage (at most the
// tensor's bytes; the rest is zeroed).
struct BatchValue {
  TensorId tensor = 0;
  std::span<const std::byte> bytes;
};

class AtenSession {
 public:
  // REQUIRES: plan verified for graph. The arguments are copied; the run
  // starts at once (its setup errors come from the first step()).
  // ranks: as RunOptions::ranks (init_ranks() under mpirun).
  AtenSession(Graph graph, Plan plan, AtenProgram program, ValuesFile initial, AtenOptions options,
              RankInfo ranks = {});
  ~AtenSession();  // finish()es, its errors dropped
  AtenSession(const AtenSession&) = delete;
  AtenSession& operator=(const AtenSession&) = delete;

  // Runs one iteration on `batch`, one value for every input tensor of the
  // graph (any order), and returns its loss. The bytes are copied before it
  // returns. Throws sa::Error for a batch that names a tensor that is not an
  // input, misses one or is larger than it, and the run's errors.
  // scalars: the step's values of the program's step scalars (Note [Step
  // scalars] in runtime/aten/aten_program.h); empty keeps the last step's (at
  // first the captured ones). Throws sa::Error for a count that is not the
  // program's.
  double step(std::span<const BatchValue> batch, std::span<const double> scalars = {});
  // step() in two halves, so that the caller computes the step's scalars
  // while the iteration's forward and backward passes run: begin() checks
  // and hands over the batch and returns at once; the iteration waits for
  // end()'s scalars before its first op that takes one; end() returns the
  // loss. Between them the only other call is abandon(why): the iteration
  // (and the run) ends with sa::Error(why), thrown by end() and later calls.
  void begin(std::span<const BatchValue> batch);
  double end(std::span<const double> scalars = {});
  void abandon(const std::string& why);
  // Ends the run and returns every persistent tensor's value; later calls
  // return the same. Throws the run's error, if it had one.
  const ValuesFile& finish();

  int steps() const { return steps_; }
  // Whether the last step's optimizer ops were skipped (Note [Skipped steps]
  // in runtime/aten/aten_program.h: FP16 gradients that overflowed).
  bool last_step_skipped() const { return skipped_; }
  const Graph& graph() const { return graph_; }
  // The executor's result (timing of every iteration, traffic, arena), once
  // finished.
  const RunResult& result() const { return result_; }

 private:
  void run();
  bool wait_for_batch(int iteration);
  std::vector<double> wait_for_scalars();
  void check_scalars(std::span<const double> scalars) const;
  void rethrow_locked();

  Graph graph_;
  Plan plan_;
  AtenProgram program_;
  ValuesFile initial_;
  AtenOptions options_;
  RankInfo ranks_;

  std::mutex m_;
  std::condition_variable cv_;
  std::vector<std::vector<std::byte>> batch_;  // per tensor: the pending step's bytes
  std::vector<double> scalars_;                // the pending step's scalars (empty: as before)
  bool have_batch_ = false;                    // a step waits for its iteration
  bool in_step_ = false;                       // between begin() and end()
  bool have_scalars_ = false;                  // end() gave the pending step's scalars
  std::string abandoned_;                      // abandon()'s reason
  bool have_loss_ = false;
  double loss_ = 0;
  bool skipped_ = false;
  bool closing_ = false;
  bool done_ = false;  // the run returned or threw
  std::exception_ptr error_;
  ValuesFile final_;
  RunResult result_;
  int steps_ = 0;
  std::thread thread_;
};

}  // namespace sa::runtime
