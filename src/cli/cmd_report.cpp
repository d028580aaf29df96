// `swapadvisor report`: one self-contained HTML page about a plan.
//
//   swapadvisor report GRAPH PLAN [--device D] [--baselines] -o report.html
//       draws the given plan (simulated on D), alone or against the baselines
//       at the plan's budget;
//   swapadvisor report (GRAPH | --model M --batch N) [compare's options] -o report.html
//       runs every method, as compare does, and draws swapadvisor's plan.

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/planning.h"
#include "plan/plan_io.h"
#include "plan/verify.h"
#include "report/report.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/terminal.h"
#include "util/units.h"

namespace sa::cli {
namespace {

struct ReportArgs {
  PlanningArgs planning;
  std::string plan;  // PLAN: draw this plan instead of searching
  std::string output;
  bool baselines = false;
};

std::string graph_source(const GraphSource& s) {
  if (!s.file.empty()) return std::filesystem::path(s.file).filename().string();
  std::string out = fmt::format("--model {} --batch {}", s.model, s.batch);
  if (s.seq_len > 0) out += fmt::format(" --seq-len {}", s.seq_len);
  if (s.optimizer != "sgd") out += " --optimizer " + s.optimizer;
  if (s.precision != "fp32") out += " --precision " + s.precision;
  return out;
}

void run_report(ReportArgs args) {
  if (args.output.empty()) throw Error("report: give the page's file name with -o report.html");
  // `report --model M PLAN`: the one positional is the plan.
  if (!args.planning.source.model.empty() && !args.planning.source.file.empty() &&
      args.plan.empty())
    std::swap(args.planning.source.file, args.plan);
  const bool given_plan = !args.plan.empty();
  std::vector<MethodResult> methods;
  std::optional<Graph> graph;
  std::optional<int64_t> budget;
  if (given_plan) {
    // The plan, read and verified against its graph; the budget is the plan's.
    if (!args.planning.memory.empty() || args.planning.memory_fraction > 0)
      print_warnings(
          {"report: --memory and --memory-fraction are ignored with a PLAN: its "
           "memory_budget is used"});
    MethodResult r;
    auto [g, plan] = read_graph_and_plan(args.planning.source.load(), args.plan,
                                         load_device(args.planning.device));
    graph = std::move(g);
    r.plan = std::move(plan);
    // The plan says how many ranks it plans (its graph is one rank's already).
    args.planning.data_parallel = r.plan.data_parallel.ranks;
    args.planning.shard_optimizer = r.plan.data_parallel.shard_optimizer;
    const VerifyResult v = verify_plan(*graph, r.plan);
    if (!v.ok) throw Error(fmt::format("{}: the plan is not valid: {}", args.plan, v.violation));
    budget = r.plan.memory_budget;
    methods.push_back(std::move(r));
  }
  PlanningInputs in = load_planning_inputs(args.planning, std::move(graph), budget);

  std::string origin;
  if (given_plan) {
    MethodResult& r = methods.front();
    r.name = r.plan.method.empty() ? "plan" : r.plan.method;
    origin = fmt::format("read from {}", std::filesystem::path(args.plan).filename().string());
  }
  const Problem problem(in.graph, in.device, in.budget, args.planning.compute_scale, in.dp,
                        in.host_budget);
  print_warnings(problem.warnings);

  if (given_plan) {
    MethodResult& r = methods.front();
    r.sim = Simulator().run(in.graph, r.plan, problem.op_us, in.device, {.record_timeline = true});
    if (!r.sim.ok) throw Error(fmt::format("{}: the plan cannot run: {}", args.plan, r.sim.error));
    r.feasible = true;
    r.evaluations = 1;
    if (args.baselines)
      for (const auto& name : method_names())
        if (name != "swapadvisor")
          methods.push_back(run_method(name, problem, method_options(args.planning)));
  } else {
    methods = run_methods(problem, method_options(args.planning));
    origin = fmt::format("searched for {:.1f} s ({} plans)", methods.front().planning_seconds,
                         methods.front().evaluations);
  }

  const ReportInput report{.graph = in.graph,
                           .device = in.device,
                           .budget = in.budget,
                           .peak_live = in.peak_live,
                           .batch = in.batch,
                           .ideal_us = problem.ideal_us,
                           .methods = methods,
                           .main = 0,
                           .origin = origin,
                           .source = graph_source(args.planning.source)};
  write_report(report, args.output);
  const MethodResult& m = methods.front();
  // Names from files (the method: a plan's): Note [Names on a terminal].
  fmt::print("{}: {} plan, {} per iteration ({:.1f}% of the ideal {})\n",
             terminal_safe(in.graph.name), terminal_safe(m.name), format_us(m.sim.iteration_us),
             100 * problem.ideal_us / m.sim.iteration_us, format_us(problem.ideal_us));
  fmt::print("report written  {} ({})\n", terminal_safe(args.output),
             format_bytes(static_cast<int64_t>(std::filesystem::file_size(args.output))));
}

}  // namespace

void register_report(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "write an HTML report: a plan's timeline, memory, stalls and the comparison");
  add_planning_options(cmd, &args->planning);
  cmd->add_option("plan", args->plan, "a plan file to draw (else: search, as compare does)");
  cmd->add_option("-o,--output", args->output, "the HTML file to write")->required();
  cmd->add_flag("--baselines", args->baselines,
                "with a PLAN: also run the baselines at the plan's budget");
  cmd->callback([args] { run_report(*args); });
}

}  // namespace sa::cli
