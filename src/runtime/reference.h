#pragma once
// The reference run: what a plan's run must compute. Every op of the graph
// runs in program order, unconstrained (every tensor in its own buffer), with
// the same synthetic kernels (runtime/synthetic_op.h), for as many iterations
// as the run (parameters change every iteration). Buffers are compact: one
// word per sample, since the kernels read and write nothing else.

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "runtime/kernel_table.h"

namespace sa::runtime {

struct Reference {
  SlotLayout layout;
  std::vector<TensorId> persistent;                    // persistent tensors, by id
  std::vector<std::vector<uint64_t>> slots;            // per iteration: every op's checksums
  std::vector<std::vector<uint64_t>> persistent_sums;  // per iteration, at its end
};

// REQUIRES: validate_graph(g) passed.
Reference run_reference(const Graph& g, int iterations);

// Inputs that some op updates: a run restores them at the start of every
// iteration (a new batch), as the reference does.
std::vector<TensorId> updated_inputs(const Graph& g);

}  // namespace sa::runtime
