// `swapadvisor zoo`: list the zoo's models or write one as a format v1 file.

#include <fmt/format.h>

#include "cli/common.h"
#include "graph/graph_io.h"
#include "graph/stats.h"
#include "util/error.h"
#include "util/terminal.h"
#include "util/units.h"
#include "zoo/zoo.h"

namespace sa::cli {
namespace {

struct ZooArgs {
  bool list = false;
  GraphSource source;
  std::string output;
};

void run_zoo(const ZooArgs& args) {
  if (args.list) {
    fmt::print("{:<20} {:>6}  {}\n", "model", "batch", "description");
    for (const auto& m : zoo_models())
      fmt::print("{:<20} {:>6}  {}\n", m.name, m.default_batch, m.description);
    return;
  }
  if (args.source.model.empty()) throw Error("zoo: give --list, or --model NAME --batch N -o FILE");
  if (args.output.empty())
    throw Error("zoo: give the output file with -o FILE (.json or .json.gz)");
  const Graph g = args.source.load();
  write_graph(g, args.output);
  fmt::print("wrote {}: {} ops, {} tensors, peak live {}\n", terminal_safe(args.output),
             g.num_ops(), g.num_tensors(), format_bytes(peak_live_bytes(g)));
}

}  // namespace

void register_zoo(CLI::App& app) {
  auto args = std::make_shared<ZooArgs>();
  CLI::App* cmd = app.add_subcommand("zoo", "list the model zoo or write a model's graph");
  cmd->add_flag("--list", args->list, "list the models");
  cmd->add_option("--model", args->source.model, "model name");
  cmd->add_option("--batch", args->source.batch, "batch size")->check(positive_int());
  cmd->add_option("--optimizer", args->source.optimizer,
                  "sgd (with momentum), sgd-plain (no momentum) or adam")
      ->check(CLI::IsMember({"sgd", "sgd-plain", "adam"}));
  cmd->add_option("--seq-len", args->source.seq_len, "sequence length (sequence models)")
      ->check(positive_int());
  add_precision_option(cmd, &args->source.precision);
  cmd->add_option("-o,--output", args->output, "output file (.json or .json.gz)");
  cmd->callback([args] { run_zoo(*args); });
}

}  // namespace sa::cli
