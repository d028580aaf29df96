#pragma once
// dtr: Dynamic Tensor Rematerialization (Kirisame et al., ICLR 2021) as a
// plan. The program order runs within the budget; when memory is short the
// planner drops the resident activation with the smallest DTR score h =
// cost / (bytes x staleness) (Note [DTR heuristic], plan/dtr_cost.h) and
// recomputes it before its next use (EvictionPolicy::kDtr, Note
// [Recomputation] in plan/swap_planner.h). Nothing is swapped but the batch
// input; parameters, optimizer state, inputs and transients whose producer
// may not run again are never evicted. Infeasible, with why, when no choice
// of victims makes room.

#include "baselines/baselines.h"
#include "plan/problem.h"

namespace sa {

BaselinePlan plan_dtr(const Problem& pb, Allocator allocator);

}  // namespace sa
