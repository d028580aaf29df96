// `swapadvisor verify (GRAPH | --model NAME --batch N) PLAN`: checks a plan against its graph with
// the independent verifier (plan/verify.h) and names the first violation.

#include <fmt/format.h>

#include "api/results.h"
#include "cli/common.h"
#include "graph/graph_io.h"
#include "plan/verify.h"
#include "util/error.h"
#include "util/json.h"
#include "util/terminal.h"
#include "util/units.h"

namespace sa::cli {
namespace {

struct VerifyArgs {
  GraphSource source;
  std::vector<std::string> files;  // GRAPH PLAN, or PLAN with --model
  std::string graph;
  std::string plan;
  bool json = false;
};

void run_verify(VerifyArgs& args) {
  args.plan = args.source.take_graph_and_plan(args.files);
  args.graph = args.source.file.empty() ? args.source.model : args.source.file;
  // The device only times a data-parallel plan's collectives: not checked here.
  const auto [g, p] = read_graph_and_plan(args.source.load(), args.plan, load_device("v100-16gb"));
  const VerifyResult v = verify_plan(g, p);
  if (!v.ok) throw Error(fmt::format("{}: invalid plan: {}", args.plan, v.violation));
  if (args.json) {
    fmt::print("{}\n", dump_json(api::verify_json(g, p, args.graph), 2));
    return;
  }
  const PlanTraffic t = plan_traffic(g, p);
  fmt::print(
      "{}: valid plan for {}{} ({} steps: {} ops, {} swap-ins, {} swap-outs, {} drops, {} "
      "recomputes; {} {} of a {} budget)\n",
      terminal_safe(args.plan), terminal_safe(g.name.empty() ? args.graph : g.name),
      p.data_parallel.active() ? fmt::format(", one rank of {}", p.data_parallel.ranks) : "",
      p.num_steps(), g.num_ops(), t.swap_ins, t.swap_outs, t.drops, t.recomputes,
      p.allocator == Allocator::kArena ? "objects reach" : "pool", format_bytes(p.arena_bytes()),
      format_bytes(p.memory_budget));
}

}  // namespace

void register_verify(CLI::App& app) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* cmd = app.add_subcommand("verify", "check a plan against its graph");
  cmd->add_option("files", args->files,
                  "GRAPH PLAN: the graph file (format v1) and the plan file; with --model NAME "
                  "--batch N, the plan file alone")
      ->required()
      ->expected(1, 2);
  add_model_options(cmd, &args->source);
  cmd->add_flag("--json", args->json, "print one JSON object (for a valid plan)");
  cmd->callback([args] { run_verify(*args); });
}

}  // namespace sa::cli
