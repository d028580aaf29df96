#include "plan/problem.h"

#include "cost/op_cost.h"

namespace sa {

Problem::Problem(const Graph& g, const DeviceProfile& d, int64_t b)
    : graph(g),
      device(d),
      dataflow(g),
      op_us(op_times_us(g, d, &warnings)),
      sizes(make_size_table(g)),
      budget(b),
      ideal_us(sa::ideal_us(op_us)) {}

}  // namespace sa
