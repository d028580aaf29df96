#pragma once
// The host-tier tests' case (Note [Host tier] in plan/host_tier.h): a graph
// planned in program order at 40% of its peak live bytes (at least what its
// largest op touches) with no host limit, and a host budget of 60% of what
// that plan's host slots take, so that a plan at it needs NVMe.

#include <algorithm>
#include <optional>
#include <vector>

#include "cost/device.h"
#include "graph/dataflow.h"
#include "graph/stats.h"
#include "plan/allocation.h"
#include "plan/host_tier.h"
#include "plan/planner.h"
#include "plan/problem.h"

namespace sa::testing {

struct HostBudgetCase {
  std::vector<OpId> order;  // the program order
  int64_t budget = 0;       // the device budget
  int64_t host_budget = 0;  // 60% of the unlimited plan's host slots
};

// Nothing when the graph does not plan at that device budget.
inline std::optional<HostBudgetCase> host_budget_case(const Graph& g, const DeviceProfile& d) {
  HostBudgetCase c;
  c.order = program_order(g.num_ops());
  c.budget = std::max(min_budget(g), peak_live_bytes(g) * 2 / 5);
  const Problem unlimited(g, d, c.budget);
  Planner planner(unlimited);
  Plan p;
  if (!planner.plan(c.order, nullptr, {}, &p).ok) return std::nullopt;
  c.host_budget = host_use(g, p).total() * 3 / 5;
  return c;
}

}  // namespace sa::testing
