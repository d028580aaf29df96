#include "search/no_swap.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

#include "graph/stats.h"
#include "plan/planner.h"
#include "search/schedule.h"
#include "util/error.h"

namespace sa {

std::vector<OpId> memory_greedy_order(const Graph& g, const Dataflow& df) {
  const int m = g.num_ops(), n = g.num_tensors();
  std::vector<int32_t> uses_left(n, 0), missing(m, 0);
  for (const Op& op : g.ops)
    for_each_access(op, [&](TensorId t, Access) { ++uses_left[t]; });
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
  // The ready ops by (delta, id) in a heap with lazy deletion: an entry is
  // stale when its delta is no longer the op's. An op's delta changes only
  // when a transient it reads gets down to one use left, so each tensor
  // reaching that point re-keys its ready users once: O(accesses log m) in
  // all, where scanning every ready op at every step was quadratic on wide
  // graphs.
  enum : uint8_t { kWaiting, kReady, kDone };
  std::vector<uint8_t> state(m, kWaiting);
  std::vector<int64_t> key(m, 0);
  using Entry = std::pair<int64_t, OpId>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  auto make_ready = [&](OpId o) {
    state[o] = kReady;
    key[o] = delta(o);
    ready.push({key[o], o});
  };
  for (OpId o = 0; o < m; ++o) {
    missing[o] = static_cast<int32_t>(df.preds(o).size());
    if (missing[o] == 0) make_ready(o);
  }
  std::vector<OpId> order;
  order.reserve(m);
  while (!ready.empty()) {
    const auto [d, o] = ready.top();
    ready.pop();
    if (state[o] != kReady || d != key[o]) continue;  // stale
    state[o] = kDone;
    order.push_back(o);
    for_each_access(g.ops[o], [&](TensorId t, Access) {
      if (--uses_left[t] != 1 || !is_transient(g.tensors[t].kind)) return;
      for (const TensorUse& u : df.uses(t))
        if (state[u.op] == kReady) {
          const int64_t k = delta(u.op);
          if (k != key[u.op]) ready.push({key[u.op] = k, u.op});
        }
    });
    for (OpId s : df.succs(o))
      if (--missing[s] == 0) make_ready(s);
  }
  SA_CHECK(static_cast<int>(order.size()) == m, "memory-greedy order has {} of {} ops",
           order.size(), m);
  return order;
}

NoSwapFloor no_swap_floor(const Problem& pb) {
  const Graph& g = pb.graph;
  NoSwapFloor best;
  best.program_live = peak_live_bytes(g);
  Planner planner(pb);
  PlannerOptions o;
  o.layout = MemoryLayout::kPacked;
  o.deadline_copy_order = false;
  Directives keep;  // no rules: nothing is ever evicted
  keep.unbounded = true;
  const std::pair<const char*, std::vector<OpId>> orders[] = {
      {"program", program_order(g.num_ops())},
      {"eager-update", eager_update_order(g, pb.dataflow)},
      {"memory-greedy", memory_greedy_order(g, pb.dataflow)}};
  Plan plan;
  for (const auto& [name, order] : orders) {
    const PlanResult r = planner.plan(order, nullptr, o, &plan, nullptr, &keep);
    SA_CHECK(r.ok, "the {} order without swaps: {}", name, r.why);
    if (!best.order.empty() && r.arena_bytes >= best.bytes) continue;
    best.bytes = r.arena_bytes;
    best.live_bytes = max_live_bytes(planner.walk().last_packing());
    best.order_name = name;
    best.order = order;
  }
  return best;
}

}  // namespace sa
