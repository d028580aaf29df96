#include "baselines/run_planner.h"

#include "plan/allocation.h"
#include "util/error.h"

namespace sa {

PlanResult plan_within_budget(Planner& planner, const Problem& pb, std::span<const OpId> order,
                              Allocator allocator, const PlannerOptions& opt, Plan* out) {
  if (allocator == Allocator::kArena) return planner.plan(order, nullptr, opt, out);
  PlanResult r;
  Allocation a;
  if (!default_allocation(pb.graph, pb.sizes, order, pb.budget, &a, &r.why)) return r;
  return planner.plan(order, &a, opt, out);
}

void plan_unbounded(Planner& planner, const Problem& pb, std::span<const OpId> order,
                    Allocator allocator, const PlannerOptions& opt, const Directives& d,
                    std::string_view method, Plan* out) {
  PlanResult planned;
  if (allocator == Allocator::kArena) {
    planned = planner.plan(order, nullptr, opt, out, nullptr, &d);
  } else {
    // One class per size; the directives decide the counts.
    Allocation a;
    a.cls.resize(pb.sizes.num_sizes());
    for (int i = 0; i < pb.sizes.num_sizes(); ++i)
      a.cls[i] = i;
    a.cnt.assign(pb.sizes.num_sizes(), 0);
    planned = planner.plan(order, &a, opt, out, nullptr, &d);
  }
  SA_CHECK(planned.ok, "{} with room for everything: {}", method, planned.why);
}

}  // namespace sa
