#include "api/source.h"

#include <fmt/format.h>

#include "graph/graph_io.h"
#include "plan/data_parallel.h"
#include "plan/plan_io.h"
#include "util/error.h"
#include "util/file_io.h"
#include "zoo/zoo.h"

namespace sa::api {

GraphAndPlan read_graph_and_plan(Graph g, const std::string& plan_path,
                                 const DeviceProfile& device) {
  return parse_graph_and_plan(std::move(g), read_file(plan_path), plan_path, device);
}

GraphAndPlan parse_graph_and_plan(Graph g, std::string_view plan_text, std::string_view origin,
                                  const DeviceProfile& device) {
  Plan p = parse_plan(plan_text, origin, [&](const DataParallel& dp) -> const Graph& {
    if (dp.active()) g = data_parallel_graph(g, dp, rank_device(device, dp.ranks));
    return g;
  });
  return {std::move(g), std::move(p)};
}

std::string GraphSource::take_graph_and_plan(const std::vector<std::string>& files) {
  if (!model.empty()) {
    if (files.size() != 1)
      throw Error(
          fmt::format("with --model, give the PLAN file alone (got {} files)", files.size()));
    return files[0];
  }
  if (files.size() != 2)
    throw Error("give a GRAPH file and a PLAN file, or --model NAME --batch N and a PLAN file");
  file = files[0];
  return files[1];
}

Graph GraphSource::load() const {
  if (!file.empty() && !model.empty())
    throw Error("give either a graph FILE or --model NAME, not both");
  if (!file.empty()) {
    // A graph file has its own optimizer, sequence length and precision;
    // these options build a zoo model and would be ignored silently.
    if (optimizer != "sgd")
      throw Error("--optimizer applies to --model only: " + file + " has its own optimizer ops");
    if (seq_len > 0)
      throw Error("--seq-len applies to --model only: " + file + " has its own shapes");
    if (precision != "fp32")
      throw Error("--precision applies to --model only: " + file +
                  " has its own precision (capture it under autocast: docs/capture.md)");
    return read_graph(file);
  }
  if (model.empty()) throw Error("no graph: give a graph FILE or --model NAME --batch N");
  if (batch <= 0) throw Error("--model needs --batch N");
  ZooOptions o;
  o.model = model;
  o.batch = batch;
  o.optimizer = optimizer;
  o.seq_len = seq_len;
  o.precision = precision;
  return build_zoo_model(o);
}

}  // namespace sa::api
