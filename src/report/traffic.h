#pragma once
// How much each tensor travels between device and host in one iteration.

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "plan/plan.h"

namespace sa {

struct TensorTraffic {
  TensorId tensor = 0;
  int swap_ins = 0;
  int swap_outs = 0;
  int drops = 0;
  int64_t bytes = 0;  // copied both ways: (swap_ins + swap_outs) x the tensor's bytes
};

// Every tensor the plan swaps or drops, the most bytes first (ties: lower id).
std::vector<TensorTraffic> tensor_traffic(const Graph& g, const Plan& p);

}  // namespace sa
