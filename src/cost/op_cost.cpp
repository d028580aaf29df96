#include "cost/op_cost.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "util/error.h"
#include "util/limits.h"

namespace sa {

double estimate_op_us(const Op& op, const DeviceProfile& d) {
  if (op.time_us) return *op.time_us;
  double t = 0;
  // flop/s → flop/us: TFLOP/s * 1e6. The peak of the op's math (its dtype).
  if (op.flops) t = std::max(t, *op.flops / (d.math_tflops(op.math) * 1e6 * d.compute_efficiency));
  // GB/s → B/us: * 1e3.
  if (op.bytes_accessed)
    t = std::max(t, *op.bytes_accessed / (d.hbm_gbps * 1e3 * d.memory_efficiency));
  return t + d.launch_overhead_us;
}

std::vector<double> op_times_us(const Graph& g, const DeviceProfile& d,
                                std::vector<std::string>* warnings) {
  std::vector<double> times(g.ops.size());
  int uncosted = 0;
  OpId first = kNoOp;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const Op& op = g.ops[o];
    if (!op.time_us && !op.flops && !op.bytes_accessed) {
      if (uncosted++ == 0) first = o;
    }
    times[o] = estimate_op_us(op, d);
  }
  if (uncosted > 0 && warnings)
    warnings->push_back(fmt::format(
        "{}: {} of {} ops have no time_us, flops or bytes_accessed (first: ops[{}] {}); they are "
        "costed at the launch overhead alone ({} us)",
        g.name.empty() ? "graph" : g.name, uncosted, g.num_ops(), first, g.ops[first].type,
        d.launch_overhead_us));
  return times;
}

void check_op_times(const Graph& g, const DeviceProfile& d, const std::vector<double>& times,
                    double scale) {
  for (OpId o = 0; o < g.num_ops() && o < static_cast<OpId>(times.size()); ++o) {
    const double t = times[o] * scale;
    if (std::isfinite(t) && t >= 0 && t <= kMaxOpUs) continue;
    const Op& op = g.ops[o];
    const std::string from =
        op.time_us ? "its time_us"
                   : fmt::format(
                         "estimated from its flops and bytes_accessed and device {}'s "
                         "peak_tflops, hbm_gbps, efficiencies and launch_overhead_us",
                         d.name);
    throw Error(fmt::format(
        "{}: ops[{}] ({}): its time is {:g} us{} ({}), over the limit of {:g} us per op",
        g.name.empty() ? "graph" : g.name, o, op.type, t,
        scale != 1 ? fmt::format(" with --compute-scale {:g}", scale) : "", from, kMaxOpUs));
  }
}

double ideal_us(const std::vector<double>& op_times) {
  double sum = 0;
  for (double t : op_times)
    sum += t;
  return sum;
}

}  // namespace sa
