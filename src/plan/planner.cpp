#include "plan/planner.h"

#include "plan/copy_order.h"
#include "plan/host_tier.h"

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
  // Stage 2a: the host tier (Note [Host tier]); kLeastStall reads the
  // plan's timeline without NVMe (one more simulation, only where the host
  // budget binds).
  out->host_budget = pb_.host_budget;
  out->nvme_tensors.clear();
  if (!host_fits(pb_.graph, *out)) {
    std::vector<double> cost;
    if (options.host_policy == HostTierPolicy::kLeastStall && pb_.device.has_nvme()) {
      const SimResult before =
          sim_.run(pb_.graph, *out, pb_.op_us, pb_.device, {.record_timeline = true});
      if (before.ok) cost = nvme_stall_cost(pb_.graph, *out, before, pb_.device);
    }
    if (!place_on_nvme(pb_.graph, pb_.device, options.host_policy, cost, out, &r.why)) {
      r.ok = false;
      return r;
    }
  }
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
