#pragma once
// Everything a planner needs to know about one planning problem, computed
// once: the graph's dependency DAG, op times on the device, the size table,
// the budget, what the graph is one rank of, and the ideal (unlimited-
// memory) iteration time. Planner (plan/planner.h) writes the budget and the
// data-parallel settings into every plan it makes, so that a plan describes
// itself.

#include <cstdint>
#include <string>
#include <vector>

#include "cost/device.h"
#include "graph/dataflow.h"
#include "graph/graph.h"
#include "plan/allocation.h"
#include "plan/plan.h"

namespace sa {

struct Problem {
  // REQUIRES: g passed validate_graph; g and device outlive the Problem.
  // compute_scale multiplies every op time (docs/devices.md: calibrating the
  // cost model to measured throughput, as bench/paper-fig6 does).
  // A data-parallel problem's g is data_parallel_graph() of the model's
  // graph for dp (plan/data_parallel.h).
  // host_budget: Note [Host tier] (0: unlimited).
  Problem(const Graph& g, const DeviceProfile& device, int64_t budget, double compute_scale = 1.0,
          DataParallel dp = {}, int64_t host_budget = 0);
  // A temporary would dangle (the Problem keeps references).
  Problem(Graph&&, const DeviceProfile&, int64_t, double = 1.0, DataParallel = {},
          int64_t = 0) = delete;
  Problem(const Graph&, DeviceProfile&&, int64_t, double = 1.0, DataParallel = {},
          int64_t = 0) = delete;

  const Graph& graph;
  const DeviceProfile& device;
  const Dataflow dataflow;
  std::vector<std::string> warnings;  // from the cost model (declared before op_us: set by it)
  const std::vector<double> op_us;
  const SizeTable sizes;
  const int64_t budget;
  const DataParallel data_parallel;  // one rank of this (ranks 1: not data-parallel)
  const double ideal_us;             // sum of op times
  // Note [Host tier]: bytes of host memory a plan may use (0: unlimited, as
  // the paper assumed); what does not fit goes to the device's NVMe tier.
  const int64_t host_budget;
};

}  // namespace sa
