#include "plan/planner.h"

#include "plan/copy_order.h"

namespace sa {

Planner::Planner(const Problem& pb) : pb_(pb), walk_(pb.graph, pb.sizes, pb.op_us, pb.device) {}

PlanResult Planner::plan(std::span<const OpId> order, const Allocation* a,
                         const PlannerOptions& options, Plan* out, SimResult* sim,
                         const Directives* directives) {
  // Stage 1: the walk.
  PlanResult r = a ? walk_.plan(order, *a, pb_.budget, options, out, directives)
                   : walk_.plan_arena(order, pb_.budget, pb_.budget, options, out, directives);
  if (!r.ok) return r;
  out->data_parallel = pb_.data_parallel;  // the plan describes itself
  // Stage 2: the copy order (the rule-based baselines keep their rules').
  SimResult picked;
  const bool simulated = options.deadline_copy_order && directives == nullptr &&
                         put_copies_in_deadline_order(pb_.graph, walk_.last_keys(), pb_.op_us,
                                                      pb_.device, sim_, out, &picked);
  // Stage 3: the simulation, where stage 2 did not make it.
  if (sim) *sim = simulated ? std::move(picked) : sim_.run(pb_.graph, *out, pb_.op_us, pb_.device);
  return r;
}

}  // namespace sa
