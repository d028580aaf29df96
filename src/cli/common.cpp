#include "cli/common.h"

#include <limits>

#include <fmt/format.h>

#include "cli/options.h"
#include "graph/graph_io.h"
#include "plan/data_parallel.h"
#include "plan/plan_io.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/suggest.h"
#include "util/terminal.h"
#include "zoo/zoo.h"

namespace sa::cli {

void GraphSource::add_options(CLI::App* app) {
  app->add_option("file", file, "graph file in format v1 (.json or .json.gz)");
  add_model_options(app);
}

void GraphSource::add_model_options(CLI::App* app) {
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

CLI::Validator positive_int() {
  return integer_in(1, std::numeric_limits<int>::max());
}

std::string describe_parse_error(CLI::App& app, const CLI::ParseError& e) {
  // The subcommand being parsed: the deepest one CLI11 entered.
  CLI::App* cmd = &app;
  while (!cmd->get_subcommands().empty())
    cmd = cmd->get_subcommands().front();
  std::vector<std::string> names;
  if (cmd == &app) {
    for (const CLI::App* sub : app.get_subcommands({}))
      names.push_back(sub->get_name());
  }
  for (const CLI::Option* o : cmd->get_options()) {
    for (const std::string& l : o->get_lnames())
      names.push_back("--" + l);
    for (const std::string& s : o->get_snames())
      names.push_back("-" + s);
  }
  std::string hint;
  for (const std::string& word : cmd->remaining()) {
    const std::string key = word.substr(0, word.find('='));
    if (cmd != &app && key.rfind('-', 0) != 0) continue;  // a stray value, not a flag
    if (const auto near = closest(key, names)) {
      hint = fmt::format("; did you mean '{}'?", *near);
      break;
    }
  }
  const std::string where = cmd == &app ? "" : cmd->get_name() + ": ";
  const std::string help =
      cmd == &app ? "swapadvisor --help" : "swapadvisor " + cmd->get_name() + " --help";
  return fmt::format("swapadvisor: error: {}{}{}\n(`{}` lists the options)", where,
                     terminal_message(e.what()), terminal_message(hint), help);
}

void print_warnings(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings)
    fmt::print(stderr, "swapadvisor: warning: {}\n", terminal_message(w));
}

}  // namespace sa::cli
