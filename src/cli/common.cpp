#include "cli/common.h"

#include <limits>

#include <fmt/format.h>

#include "cli/options.h"
#include "graph/graph_io.h"
#include "plan/data_parallel.h"
#include "plan/plan_io.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/terminal.h"
#include "zoo/zoo.h"

namespace sa::cli {

void GraphSource::add_options(CLI::App* app) {
  app->add_option("file", file, "graph file in format v1 (.json or .json.gz)");
  app->add_option("--model", model,
                  "zoo model name instead of a file (see `swapadvisor zoo --list`)");
  app->add_option("--batch", batch, "batch size for --model")->check(positive_int());
  app->add_option("--optimizer", optimizer,
                  "optimizer for --model: sgd (with momentum), sgd-plain or adam")
      ->check(CLI::IsMember({"sgd", "sgd-plain", "adam"}));
  app->add_option("--seq-len", seq_len, "sequence length for sequence models (--model)")
      ->check(positive_int());
  add_precision_option(app, &precision);
}

void add_precision_option(CLI::App* app, std::string* precision) {
  app->add_option("--precision", *precision,
                  "for --model: fp32, or automatic mixed precision bf16 or fp16 (docs/zoo.md)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
}

GraphAndPlan read_graph_and_plan(Graph g, const std::string& plan_path,
                                 const DeviceProfile& device) {
  const std::string text = read_file(plan_path);
  const DataParallel dp = plan_data_parallel(g, text, plan_path);
  if (dp.active()) g = data_parallel_graph(g, dp, rank_device(device, dp.ranks));
  Plan p = parse_plan(g, text, plan_path);
  return {std::move(g), std::move(p)};
}

Graph GraphSource::load() const {
  if (!file.empty() && !model.empty())
    throw Error("give either a graph FILE or --model NAME, not both");
  if (!file.empty()) return read_graph(file);
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

CLI::Validator positive_int() {
  return integer_in(1, std::numeric_limits<int>::max());
}

void print_warnings(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings)
    fmt::print(stderr, "swapadvisor: warning: {}\n", terminal_message(w));
}

}  // namespace sa::cli
