#include "plan/bounds.h"

#include <algorithm>
#include <vector>

#include "graph/stats.h"

namespace sa {

TimeBound time_bound(const Graph& g, std::span<const OpId> order, std::span<const double> op_us,
                     const DeviceProfile& d, int64_t budget, bool recompute, int64_t host_budget) {
  const int m = g.num_ops();
  TimeBound b;
  for (double t : op_us)
    b.compute_us += t;
  // Transient live intervals [creation, last access] as a difference array.
  const std::vector<LiveInterval> live_at = live_intervals(g, order);
  // Note [Recompute bound]: the transients a plan may drop and make again
  // (their producer may run again) count only where op p touches them.
  std::vector<uint8_t> remakeable(g.num_tensors(), 0);
  if (recompute)
    for (const Op& op : g.ops)
      if (may_recompute(op))
        for (TensorId x : op.outputs)
          remakeable[x] = 1;
  std::vector<int64_t> diff(m + 1, 0);
  // Persistent bytes accessed after position i: suffix sums by last access.
  std::vector<int64_t> persistent_last(m + 1, 0);
  for (TensorId x = 0; x < g.num_tensors(); ++x) {
    const LiveInterval& v = live_at[x];
    if (!v.accessed()) continue;
    if (is_transient(g.tensors[x].kind)) {
      if (remakeable[x]) continue;
      diff[v.first] += g.tensors[x].bytes;
      diff[v.last + 1] -= g.tensors[x].bytes;
    } else {
      persistent_last[v.last] += g.tensors[x].bytes;
    }
  }
  std::vector<int64_t> persistent_after(m + 1, 0);  // accessed at a position > i
  for (int i = m - 1; i >= 0; --i)
    persistent_after[i] = persistent_after[i + 1] + persistent_last[i + 1];
  const double out_rate = d.d2h_bytes_per_us(), in_rate = d.h2d_bytes_per_us();
  const bool nvme = host_budget > 0 && d.has_nvme();
  const double nvme_read = d.nvme_read_gbps * 1e3, nvme_write = d.nvme_write_gbps * 1e3;  // B/us
  int64_t live = 0;
  double before_us = 0;                           // compute before position i
  std::vector<int32_t> counted(g.num_tensors());  // position + 1 where last counted
  for (int i = 0; i < m; ++i) {
    live += diff[i];
    const Op& op = g.ops[order[i]];
    // What op p holds besides `live`: its workspace, the persistent tensors and
    // (Note [Recompute bound]) the remakeable transients it touches.
    int64_t touched_persistent = op.workspace_bytes;
    int64_t touched_later = 0;  // persistent bytes op p touches and a later op too
    for_each_access(op, [&](TensorId x, Access) {
      if (counted[x] == i + 1) return;  // an op that reads x twice holds it once
      counted[x] = i + 1;
      if (is_transient(g.tensors[x].kind)) {
        // Live at p and not among `live`: it must be on the device now.
        if (remakeable[x]) touched_persistent += g.tensors[x].bytes;
        return;
      }
      touched_persistent += g.tensors[x].bytes;
      if (live_at[x].last > i) touched_later += g.tensors[x].bytes;
    });
    const double op_time = op_us[order[i]];
    const double after_us = b.compute_us - before_us - op_time;
    // Note [Transfer bound]: out (copied out before p) and in (back after p).
    const int64_t out = live + touched_persistent - budget;
    const int64_t in = out + persistent_after[i] - touched_later;
    double t = std::max(before_us, std::max<int64_t>(out, 0) / out_rate) + op_time +
               std::max(after_us, in / in_rate);
    if (nvme) {  // Note [Tiered transfer bound]
      const double nvme_out = static_cast<double>(std::max<int64_t>(out - host_budget, 0));
      const double nvme_in = static_cast<double>(std::max<int64_t>(in - host_budget, 0));
      t = std::max({before_us, std::max<int64_t>(out, 0) / out_rate, nvme_out / nvme_write}) +
          op_time + std::max({after_us, in / in_rate, nvme_in / nvme_read});
    }
    if (in > 0 && t > b.transfer_us) {
      b.transfer_us = t;
      b.at_op = order[i];
      b.off_device_bytes = in;
    }
    before_us += op_time;
  }
  return b;
}

}  // namespace sa
