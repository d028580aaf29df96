#pragma once
// The reference run: what a plan's run must compute. Every op of the graph
// runs in program order, unconstrained (every tensor in its own buffer), with
// the same synthetic kernels (runtime/synthetic_op.h), for as many iterations
// as the run (parameters change every iteration). Buffers are compact: one
// word per sample, since the kernels read and write nothing else.
//
// Incremental: run_reference() only sets the run up; iteration i is computed
// when its checksums are first asked for (slots[i] or persistent_sums[i]),
// after the iterations before it, and only the latest one is kept. The
// memory and the work before the first iteration do not grow with the
// number of iterations (a run of 2^31 iterations starts at once).
//
//   Reference ref = run_reference(g, iterations);
//   for (int it = 0; it < iterations; ++it) {
//     ... run iteration it ...
//     compare(ref.slots[it], ref.persistent_sums[it]);  // it in increasing order
//   }

#include <cstdint>
#include <memory>
#include <vector>

#include "graph/graph.h"
#include "runtime/kernel_table.h"

namespace sa::runtime {

struct ReferenceState;  // reference.cpp: the compact buffers and the latest iteration

// One kind of per-iteration checksums, computed on demand.
class ReferenceIterations {
 public:
  using Sums = std::vector<uint64_t>;
  ReferenceIterations() = default;
  ReferenceIterations(std::shared_ptr<ReferenceState> state, Sums ReferenceState::*which)
      : state_(std::move(state)), which_(which) {}

  // Iteration it's checksums. REQUIRES: it < the run's iterations, and no
  // earlier than the latest iteration asked for (an SA_CHECK otherwise).
  const Sums& operator[](int it) const;

 private:
  std::shared_ptr<ReferenceState> state_;
  Sums ReferenceState::*which_ = nullptr;
};

struct Reference {
  SlotLayout layout;
  std::vector<TensorId> persistent;     // persistent tensors, by id
  ReferenceIterations slots;            // [it]: every op's checksums
  ReferenceIterations persistent_sums;  // [it]: every persistent tensor's, at its end
};

// REQUIRES: validate_graph(g) passed; g outlives the result.
// rank: whose inputs (Note [Ranks] in runtime/mpi/ranks.h: salted by rank).
Reference run_reference(const Graph& g, int iterations, int rank = 0);

// Inputs that some op updates: a run restores them at the start of every
// iteration (a new batch), as the reference does.
std::vector<TensorId> updated_inputs(const Graph& g);

}  // namespace sa::runtime
