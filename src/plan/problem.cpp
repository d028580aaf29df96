#include "plan/problem.h"

#include "cost/op_cost.h"

namespace sa {

namespace {

// Collective ops (data-parallel plans) are link time, not compute: the
// calibration of compute does not apply to them.
std::vector<double> scaled(const Graph& g, std::vector<double> times, double scale) {
  for (size_t o = 0; o < times.size(); ++o)
    if (!is_collective(g.ops[o])) times[o] *= scale;
  return times;
}

// The ideal iteration runs every compute op back to back; collectives overlap
// with them (on their own stream) in the ideal.
double compute_ideal_us(const Graph& g, const std::vector<double>& times) {
  double sum = 0;
  for (size_t o = 0; o < times.size(); ++o)
    if (!is_collective(g.ops[o])) sum += times[o];
  return sum;
}

}  // namespace

Problem::Problem(const Graph& g, const DeviceProfile& d, int64_t b, double compute_scale,
                 DataParallel dp, int64_t host_budget)
    : graph(g),
      device(d),
      dataflow(g),
      op_us(scaled(g, op_times_us(g, d, &warnings), compute_scale)),
      sizes(make_size_table(g)),
      budget(b),
      data_parallel(dp),
      ideal_us(compute_ideal_us(g, op_us)),
      host_budget(host_budget) {}

}  // namespace sa
