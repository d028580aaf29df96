#pragma once
// Baselines from the literature, producing the same Plan type and evaluated
// by the same simulator as swapadvisor's search:
//
//   ideal     unlimited memory: nothing is swapped (the upper bound)
//   odswap    on-demand LRU swapping in program order, with swap-ins issued as
//             early as their object allows (the paper's ODSwap: LRU in the
//             first iteration, then prefetching in its order)
//   vdnn      vDNN: the forward activations that conv/matmul ops read are
//             swapped out after their last forward use and prefetched one
//             layer (conv/matmul backward op) ahead of their backward use
//   swap-all  every activation saved for backward goes to host after its last
//             forward use and is fetched when backward needs it, as PyTorch's
//             save_on_cpu does
//   tflms     TFLMS: saved activations only, parameters never swapped, each
//             swap-in issued a fixed look-ahead (kTflmsLookahead ops) before
//             its use
//   checkpoint  segment checkpointing (Chen et al. 2016, torch.utils.
//             checkpoint): the forward pass in k segments; activations saved
//             inside a segment are dropped after their last forward use and
//             recomputed when backward needs them, segment boundaries stay;
//             the fastest k that fits (baselines/checkpoint.h)
//   dtr       Dynamic Tensor Rematerialization (Kirisame et al. 2021): on
//             demand, the activation with the smallest cost / (bytes x
//             staleness) is dropped and recomputed when needed; nothing
//             swapped (baselines/dtr.h)
//
// odswap and dtr plan within the budget with the default allocation (size
// classes) or the whole budget as their capacity (planned offsets). The
// rule-based ones (vdnn, swap-all, tflms, checkpoint) keep everything else
// on the device; their plan is infeasible when what their rules keep exceeds
// the budget, which the result says. checkpoint and dtr recompute only what
// the planner may (Note [Recomputation] in plan/swap_planner.h): never an op
// that updates in place, nor one whose output is updated in place or whose
// inputs have changed or died by then. All use the program order.
// methods/methods.h runs them by name.

#include <string>
#include <string_view>
#include <vector>

#include "plan/plan.h"
#include "plan/problem.h"

namespace sa {

inline constexpr int kTflmsLookahead = 8;  // ops between a swap-in's issue and its use

struct BaselinePlan {
  bool feasible = false;
  std::string why;  // when infeasible
  Plan plan;        // when feasible
};

// ideal, odswap, vdnn, swap-all, tflms, checkpoint, dtr.
std::vector<std::string> baseline_names();

// Plans one baseline with the given allocator. Throws sa::Error for an
// unknown name.
BaselinePlan plan_baseline(std::string_view name, const Problem& problem, Allocator allocator);

}  // namespace sa
