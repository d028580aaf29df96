#include "plan/bounds.h"

#include <algorithm>
#include <vector>

#include "util/error.h"

namespace sa {

TimeBound time_bound(const Graph& g, std::span<const OpId> order, std::span<const double> op_us,
                     const DeviceProfile& d, int64_t budget) {
  const int m = g.num_ops();
  SA_CHECK(static_cast<int>(order.size()) == m, "order has {} ops, graph {}", order.size(), m);
  TimeBound b;
  for (double t : op_us)
    b.compute_us += t;
  std::vector<int32_t> pos(m);
  for (int i = 0; i < m; ++i)
    pos[order[i]] = i;
  // Transient live intervals [creation, last access] as a difference array.
  std::vector<int32_t> first(g.num_tensors(), -1), last(g.num_tensors(), -1);
  for (OpId o = 0; o < m; ++o)
    for_each_access(g.ops[o], [&](TensorId x, Access) {
      if (first[x] < 0 || pos[o] < first[x]) first[x] = pos[o];
      last[x] = std::max(last[x], pos[o]);
    });
  std::vector<int64_t> diff(m + 1, 0);
  for (TensorId x = 0; x < g.num_tensors(); ++x) {
    if (!is_transient(g.tensors[x].kind) || first[x] < 0) continue;
    diff[first[x]] += g.tensors[x].bytes;
    diff[last[x] + 1] -= g.tensors[x].bytes;
  }
  const double out_rate = d.d2h_bytes_per_us(), in_rate = d.h2d_bytes_per_us();
  int64_t live = 0;
  for (int i = 0; i < m; ++i) {
    live += diff[i];
    const Op& op = g.ops[order[i]];
    int64_t touched_persistent = op.workspace_bytes;
    for_each_access(op, [&](TensorId x, Access) {
      if (!is_transient(g.tensors[x].kind)) touched_persistent += g.tensors[x].bytes;
    });
    const int64_t off = live + touched_persistent - budget;
    if (off <= 0) continue;
    const double t = off / out_rate + op_us[order[i]] + off / in_rate;
    if (t > b.transfer_us) {
      b.transfer_us = t;
      b.at_op = order[i];
      b.off_device_bytes = off;
    }
  }
  return b;
}

}  // namespace sa
