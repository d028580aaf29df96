#include "api/stats.h"

#include <algorithm>

#include "cost/op_cost.h"
#include "plan/allocation.h"
#include "plan/problem.h"

namespace sa::api {

GraphSummary summarize_graph(const Graph& g, const DeviceProfile& device) {
  GraphSummary s;
  const auto times = op_times_us(g, device, &s.warnings);
  check_op_times(g, device, times);
  s.stats = compute_stats(g);
  s.ideal_us = ideal_us(times);
  s.largest_op = min_budget(g, &s.hungriest);
  const Problem pb(g, device, std::max<int64_t>(1, s.stats.peak_live_bytes));
  s.floor = no_swap_floor(pb);
  return s;
}

nlohmann::json stats_json(const GraphSummary& s) {
  return {{"ops", s.stats.ops},
          {"tensors", s.stats.tensors},
          {"persistent_bytes", s.stats.persistent_bytes},
          {"peak_live_bytes", s.stats.peak_live_bytes},
          {"distinct_sizes", s.stats.distinct_sizes},
          {"flops", s.stats.flops},
          {"ideal_us", s.ideal_us},
          {"largest_op_bytes", s.largest_op},
          {"no_swap_floor_bytes", s.floor.bytes},
          {"no_swap_floor_live_bytes", s.floor.live_bytes},
          {"no_swap_floor_order", s.floor.order_name}};
}

}  // namespace sa::api
