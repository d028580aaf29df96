#pragma once
// The one way to make a plan: the stages of Note [Planning stages], run
// against a Problem's budget.
//
// Note [Planning stages]
// ----------------------
// A plan is made in three stages, each in its own files:
//   1. the walk (SwapPlanner, plan/swap/): every swap, drop, recompute and
//      offset; the plan written in release order, with each step's key
//      (SwapPlanner::last_keys);
//   2a. the host tier (plan/host_tier.h): with a host budget, which host
//      slots live on NVMe instead (Note [Host tier]);
//   2. the copy order (plan/copy_order.h): with
//      PlannerOptions::deadline_copy_order and no directives, the copies
//      ordered by need, the plan written again; choosing that order
//      simulates the plan;
//   3. the simulation (plan/simulator.h), unless stage 2 made it.
// The walk does not simulate and the simulator does not plan: each can be
// read and tested alone (tests/plan/copy_order_test.cpp calls stage 2 on
// hand-written plans). Planner runs the three; the search, the baselines,
// the no-swap floor and the CLI plan through it.

#include <span>

#include "plan/allocation.h"
#include "plan/plan.h"
#include "plan/problem.h"
#include "plan/simulator.h"
#include "plan/swap_planner.h"

namespace sa {

class Planner {
 public:
  // REQUIRES: pb outlives the planner.
  explicit Planner(const Problem& pb);

  // Plans order against pb.budget: with the size-class allocation *a, or,
  // when a is null, with planned offsets (Note [Arena planning]; the layout
  // is options.layout). Stages 1 and 2; when the plan is made and sim is
  // given, stage 3 too: *sim is the plan's simulation (without a timeline).
  [[nodiscard]] PlanResult plan(std::span<const OpId> order, const Allocation* a,
                                const PlannerOptions& options, Plan* out, SimResult* sim = nullptr,
                                const Directives* directives = nullptr);

  // Stage 1 alone, for what it measures besides the plan (last_packing).
  SwapPlanner& walk() { return walk_; }

 private:
  const Problem& pb_;
  SwapPlanner walk_;
  Simulator sim_;  // stages 2 and 3 (reusable buffers)
};

}  // namespace sa
