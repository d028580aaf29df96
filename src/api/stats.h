#pragma once
// `stats`: the derived quantities of a graph on a device, and its --json
// object (the command line prints it, the Python module returns it).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost/device.h"
#include "graph/graph.h"
#include "graph/stats.h"
#include "search/no_swap.h"

namespace sa::api {

struct GraphSummary {
  GraphStats stats;
  double ideal_us = 0;                // the sum of op times
  OpId hungriest = kNoOp;             // the op that touches the most bytes at once
  int64_t largest_op = 0;             // its bytes: no plan fits a smaller budget
  NoSwapFloor floor;                  // Note [No-swap floor]
  std::vector<std::string> warnings;  // from timing the ops
};

// Throws sa::Error where an op's time cannot be had on the device.
GraphSummary summarize_graph(const Graph& g, const DeviceProfile& device);

// The fields of `stats --json`.
nlohmann::json stats_json(const GraphSummary& s);

}  // namespace sa::api
