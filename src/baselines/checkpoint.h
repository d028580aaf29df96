#pragma once
// checkpoint: segment checkpointing (Chen et al., "Training Deep Nets with
// Sublinear Memory Cost", 2016; torch.utils.checkpoint_sequential).
//
// Note [Segment checkpointing]
// ----------------------------
// The forward ops, in program order, are cut into k segments of about equal
// saved-activation bytes (saved_activations(), baselines/saved_activations.h).
// A saved activation that a later segment's forward ops read (a boundary:
// the segment's output, or a skip connection across the cut) stays on the
// device, and so does every one of the last segment (checkpoint_sequential
// runs the last segment without checkpointing, so k = 1 keeps everything).
// Every other one is dropped after its last forward use (Directives::
// drop_only) and made again by its producer when backward first needs it;
// chains of them are recomputed back to the nearest tensor still there, the
// way a segment is replayed from its input checkpoint, and stay until their
// last backward use. One whose producer may not run again (Note
// [Recomputation] in plan/swap_planner.h) stays on the device. Nothing is
// swapped but the batch input (fetched again when a recompute reads it after
// its last use); parameters and optimizer state stay on the device, as for
// the other rule baselines.
//
//   k = 2 on a 4-layer chain x -> a1 -> a2 -> a3 -> a4 (ai saved):
//   segment 0 {a1, a2}: a2 is read by segment 1 (kept), a1 is dropped;
//   segment 1 {a3, a4}: kept. Backward recomputes a1 from x.
//
// plan_checkpoint() tries k = 1 .. max(1, ceil(2 sqrt(F))) (F: the forward
// ops that save activations, at most F), once per distinct set of dropped
// tensors, and keeps the fastest simulated plan within the budget (ties:
// fewer segments). In the arena each k is packed the fast way
// (PackPolicy::kSweepBestFit), and the greedy way only when that is over
// the budget but the most bytes alive at once are not: packing greedily is
// most of the planning time on the captured graphs.

#include <span>
#include <vector>

#include "baselines/baselines.h"
#include "graph/graph.h"
#include "plan/problem.h"

namespace sa {

struct CheckpointPlan {
  BaselinePlan result;
  int segments = 0;      // the k chosen (0 when infeasible)
  int max_segments = 0;  // the largest k tried
};

// The saved activations that k segments of the forward ops of `order` drop
// after their last forward use, in increasing id order (before the producer
// check of Note [Recomputation]: the planner keeps those it may not drop).
std::vector<TensorId> checkpoint_drops(const Graph& g, std::span<const OpId> order, int segments);

// Plans k segments (k >= 1); infeasible, with why, when what they keep
// exceeds the budget or the graph has no backward phase.
BaselinePlan plan_checkpoint_segments(const Problem& pb, Allocator allocator, int segments);

// Plans checkpoint with the given allocator (Note [Segment checkpointing]).
CheckpointPlan plan_checkpoint(const Problem& pb, Allocator allocator);

}  // namespace sa
