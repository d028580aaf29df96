#pragma once
// The no-swap floor: the smallest budget at which a plan needs no swap at
// all (but the fetch of the inputs), from op order and planned offsets only.
//
// Note [No-swap floor]
// --------------------
// Every tensor stays on the device from its creation (persistent tensors
// and the optimizer state: throughout, as in the steady state; inputs: from
// their fetch) until its last use, and the tenancies are packed in one arena
// (plan/packing.h, greedy by size). The floor is the lowest packed peak over
// a few orders:
//   - the program order (the order the graph lists its ops in, as PyTorch
//     ran them);
//   - eager_update_order(): each optimizer update right after the gradient
//     it reads, so gradients die at once instead of at the end;
//   - memory_greedy_order(): a list schedule that always runs the ready op
//     that adds the fewest live bytes (its outputs minus the transients whose
//     last use it is), ties in program order.
// Its live bytes (the most bytes alive at once, which no packing beats) is
// reported beside it; the gap between the two is the packing's
// fragmentation. OLLA and MODeL (ICML 2023) search orders and offsets
// jointly with an integer program; this is the greedy counterpart, in
// milliseconds.

#include <cstdint>
#include <string>
#include <vector>

#include "plan/problem.h"

namespace sa {

struct NoSwapFloor {
  int64_t bytes = 0;         // the packed peak: the floor
  int64_t live_bytes = 0;    // the most bytes alive at once in that order
  int64_t program_live = 0;  // peak_live_bytes in program order, for comparison
  std::string order_name;    // "program", "eager-update" or "memory-greedy"
  std::vector<OpId> order;
};

NoSwapFloor no_swap_floor(const Problem& problem);

// Note [No-swap floor]'s memory-greedy list schedule.
std::vector<OpId> memory_greedy_order(const Graph& g, const Dataflow& df);

}  // namespace sa
