#pragma once
// Where a planning command's graph comes from (a file, or a zoo model), and
// a plan read against its graph. Shared by the command line (cli/) and the
// Python module (python/), which fill in the same fields from their options.

#include <string>
#include <string_view>
#include <vector>

#include "cost/device.h"
#include "graph/graph.h"
#include "plan/plan.h"

namespace sa::api {

struct GraphSource {
  std::string file;
  std::string model;
  int batch = 0;
  std::string optimizer = "sgd";
  int seq_len = 0;
  std::string precision = "fp32";

  // From the positionals of `CMD GRAPH PLAN` or `CMD --model NAME ... PLAN`:
  // takes the graph file (when no --model) and returns the plan's path.
  std::string take_graph_and_plan(const std::vector<std::string>& files);
  // Reads the file or builds the zoo model; throws sa::Error with a clear
  // message when neither or both were given.
  Graph load() const;
};

// A plan and the graph it plans: a data-parallel plan (its data_parallel
// field) plans data_parallel_graph() of the graph given, with its
// collectives timed on `device`; any other plan the graph itself.
struct GraphAndPlan {
  Graph graph;
  Plan plan;
};
GraphAndPlan read_graph_and_plan(Graph g, const std::string& plan_path,
                                 const DeviceProfile& device);
// The same from the plan's text; origin names it in errors.
GraphAndPlan parse_graph_and_plan(Graph g, std::string_view plan_text, std::string_view origin,
                                  const DeviceProfile& device);

}  // namespace sa::api
