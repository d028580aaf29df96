#include "baselines/dtr.h"

#include <fmt/format.h>

#include "baselines/run_planner.h"
#include "plan/planner.h"
#include "util/units.h"

namespace sa {

BaselinePlan plan_dtr(const Problem& pb, Allocator allocator) {
  BaselinePlan r;
  const Graph& g = pb.graph;
  const auto order = program_order(g.num_ops());
  Planner planner(pb);
  // Every op may be asked to run again; the planner keeps to those that may
  // (may_recompute, and the conditions of Note [Recomputation]).
  const std::vector<uint8_t> any(g.num_ops(), 1);
  PlannerOptions opt;
  opt.eviction = EvictionPolicy::kDtr;
  opt.recompute = &any;
  opt.dead_input_depth = kAnyDepth;    // Note [Recompute through dead inputs]
  opt.layout = MemoryLayout::kPacked;  // DTR counts bytes against its budget
  opt.deadline_copy_order = false;     // Note [Copy order] is this project's, not the baseline's
  const PlanResult planned = plan_within_budget(planner, pb, order, allocator, opt, &r.plan);
  if (!planned.ok) {
    r.why = fmt::format(
        "evicting only what it can recompute does not fit {} (parameters, optimizer state, inputs "
        "and what may not run again stay): {}",
        format_bytes(pb.budget), planned.why);
    r.plan = Plan();
    return r;
  }
  r.feasible = true;
  return r;
}

}  // namespace sa
