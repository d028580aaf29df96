#include "plan/problem.h"

#include "cost/op_cost.h"

namespace sa {

namespace {

std::vector<double> scaled(std::vector<double> times, double scale) {
  for (double& t : times)
    t *= scale;
  return times;
}

}  // namespace

Problem::Problem(const Graph& g, const DeviceProfile& d, int64_t b, double compute_scale)
    : graph(g),
      device(d),
      dataflow(g),
      op_us(scaled(op_times_us(g, d, &warnings), compute_scale)),
      sizes(make_size_table(g)),
      budget(b),
      ideal_us(sa::ideal_us(op_us)) {}

}  // namespace sa
