#pragma once
// How the baselines drive the planner (plan/planner.h) with either
// allocator: planned offsets (Allocator::kArena) or the paper's size-class
// pool (Allocator::kSizeClass). Shared by the baselines' files.

#include <span>
#include <string_view>

#include "plan/plan.h"
#include "plan/planner.h"
#include "plan/problem.h"

namespace sa {

// On demand: the planner's eviction policy makes room within the budget (in
// the arena the budget is the capacity; with size classes, the default
// allocation's pool). Not ok, with why, when the plan cannot fit.
PlanResult plan_within_budget(Planner& planner, const Problem& pb, std::span<const OpId> order,
                              Allocator allocator, const PlannerOptions& opt, Plan* out);

// By rules (unbounded directives): room for whatever they keep, which the
// plan's arena_bytes() says (it may exceed the budget). `method` names the
// baseline in the internal error raised if the planner fails anyway.
void plan_unbounded(Planner& planner, const Problem& pb, std::span<const OpId> order,
                    Allocator allocator, const PlannerOptions& opt, const Directives& d,
                    std::string_view method, Plan* out);

}  // namespace sa
