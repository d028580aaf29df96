#pragma once
// What a report is made from: one graph, device and budget, the methods that
// planned for it, and which of them the report draws in detail.

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "cost/device.h"
#include "graph/graph.h"
#include "methods/methods.h"
#include "methods/sweep.h"

namespace sa {

struct ReportInput {
  const Graph& graph;
  const DeviceProfile& device;
  int64_t budget = 0;
  int64_t peak_live = 0;         // the graph's peak live bytes in program order
  std::optional<int64_t> batch;  // samples per iteration, when known
  double ideal_us = 0;           // sum of op times
  // The comparison. Feasible methods carry their plan and its simulation with
  // a timeline (SimOptions::record_timeline).
  std::span<const MethodResult> methods;
  int main = 0;        // the method drawn in detail; REQUIRES: feasible
  std::string origin;  // how that plan came about: "searched for 10.0 s", "read from plan.json"
  std::string source;  // where the graph came from: a file name or "--model resnet50 --batch 64"
  const SweepResult* sweep = nullptr;  // `swapadvisor sweep -o`: the budget sweep to plot
};

}  // namespace sa
