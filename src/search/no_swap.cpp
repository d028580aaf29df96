#include "search/no_swap.h"

#include <algorithm>

#include "graph/stats.h"
#include "plan/swap_planner.h"
#include "search/schedule.h"
#include "util/error.h"

namespace sa {

std::vector<OpId> memory_greedy_order(const Graph& g, const Dataflow& df) {
  const int m = g.num_ops(), n = g.num_tensors();
  std::vector<int32_t> uses_left(n, 0), missing(m, 0);
  for (const Op& op : g.ops)
    for_each_access(op, [&](TensorId t, Access) { ++uses_left[t]; });
  std::vector<OpId> ready, order;
  for (OpId o = 0; o < m; ++o) {
    missing[o] = static_cast<int32_t>(df.preds(o).size());
    if (missing[o] == 0) ready.push_back(o);
  }
  // Bytes op o adds to what is alive: its outputs, less the transients it
  // is the last to use.
  auto delta = [&](OpId o) {
    int64_t d = 0;
    for (TensorId t : g.ops[o].outputs)
      d += g.tensors[t].bytes;
    for_each_access(g.ops[o], [&](TensorId t, Access a) {
      if (a != Access::kCreate && is_transient(g.tensors[t].kind) && uses_left[t] == 1)
        d -= g.tensors[t].bytes;
    });
    return d;
  };
  order.reserve(m);
  while (!ready.empty()) {
    size_t best = 0;
    int64_t best_delta = delta(ready[0]);
    for (size_t k = 1; k < ready.size(); ++k) {
      const int64_t d = delta(ready[k]);
      if (d < best_delta || (d == best_delta && ready[k] < ready[best])) {
        best = k;
        best_delta = d;
      }
    }
    const OpId o = ready[best];
    ready[best] = ready.back();
    ready.pop_back();
    order.push_back(o);
    for_each_access(g.ops[o], [&](TensorId t, Access) { --uses_left[t]; });
    for (OpId s : df.succs(o))
      if (--missing[s] == 0) ready.push_back(s);
  }
  SA_CHECK(static_cast<int>(order.size()) == m, "memory-greedy order has {} of {} ops",
           order.size(), m);
  return order;
}

NoSwapFloor no_swap_floor(const Problem& pb) {
  const Graph& g = pb.graph;
  NoSwapFloor best;
  best.program_live = peak_live_bytes(g);
  SwapPlanner planner(g, pb.sizes, pb.op_us, pb.device);
  PlannerOptions o;
  o.layout = ArenaLayout::kPacked;
  o.deadline_copy_order = false;
  Directives keep;  // no rules: nothing is ever evicted
  keep.unbounded = true;
  const std::pair<const char*, std::vector<OpId>> orders[] = {
      {"program", program_order(g.num_ops())},
      {"eager-update", eager_update_order(g, pb.dataflow)},
      {"memory-greedy", memory_greedy_order(g, pb.dataflow)}};
  Plan plan;
  for (const auto& [name, order] : orders) {
    const PlanResult r = planner.plan_arena(order, pb.budget, pb.budget, o, &plan, &keep);
    SA_CHECK(r.ok, "the {} order without swaps: {}", name, r.why);
    if (!best.order.empty() && r.arena_bytes >= best.bytes) continue;
    best.bytes = r.arena_bytes;
    best.live_bytes = max_live_bytes(planner.last_packing());
    best.order_name = name;
    best.order = order;
  }
  return best;
}

}  // namespace sa
