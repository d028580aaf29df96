#pragma once
// Everything a planner needs to know about one planning problem, computed
// once: the graph's dependency DAG, op times on the device, the size table,
// the budget and the ideal (unlimited-memory) iteration time.

#include <cstdint>
#include <string>
#include <vector>

#include "cost/device.h"
#include "graph/dataflow.h"
#include "graph/graph.h"
#include "plan/allocation.h"

namespace sa {

struct Problem {
  // REQUIRES: g passed validate_graph; g and device outlive the Problem.
  // compute_scale multiplies every op time (docs/devices.md: calibrating the
  // cost model to measured throughput, as bench/paper-fig6 does).
  Problem(const Graph& g, const DeviceProfile& device, int64_t budget, double compute_scale = 1.0);
  // A temporary would dangle (the Problem keeps references).
  Problem(Graph&&, const DeviceProfile&, int64_t, double = 1.0) = delete;
  Problem(const Graph&, DeviceProfile&&, int64_t, double = 1.0) = delete;

  const Graph& graph;
  const DeviceProfile& device;
  const Dataflow dataflow;
  std::vector<std::string> warnings;  // from the cost model (declared before op_us: set by it)
  const std::vector<double> op_us;
  const SizeTable sizes;
  const int64_t budget;
  const double ideal_us;  // sum of op times
};

}  // namespace sa
