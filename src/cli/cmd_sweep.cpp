// `swapadvisor sweep`: % of ideal against the memory budget (Note [Budget
// sweep] in methods/sweep.h).
//
//   swapadvisor sweep (GRAPH | --model M --batch N) [--points 10] [--target 0.9]
//                     [--time-budget S (per point)] [--json] [-o report.html]

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "api/results.h"
#include "cli/planning.h"
#include "methods/sweep.h"
#include "report/report.h"
#include "util/error.h"
#include "util/json.h"
#include "util/terminal.h"
#include "util/units.h"

namespace sa::cli {
namespace {

using api::share_of;

// The sweep's arguments (api/results.h) and the command line's report file.
struct SweepArgs : api::SweepArgs {
  std::string output;
  std::string over = "device";  // --over device|host
};

// --target: a share of ideal, finite and in (0, 1].
CLI::Validator target_fraction() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(input.c_str(), &end);
        if (input.empty() || *end != '\0' || !std::isfinite(v) || v <= 0 || v > 1)
          return fmt::format("a fraction in (0, 1], e.g. 0.9 for 90%, got '{}'", input);
        return "";
      },
      "FRACTION in (0, 1]");
}

void run_sweep(SweepArgs args) {
  args.over_host = args.over == "host";
  const bool host = args.over_host;
  if (host && !args.output.empty())
    throw Error("sweep --over host: the report (-o) draws device budgets only; use --json");
  if (host && !args.planning.host_memory.empty())
    print_warnings({"sweep --over host: --host-memory is ignored: the sweep chooses it"});
  if (!host && (!args.planning.memory.empty() || args.planning.memory_fraction > 0))
    print_warnings(
        {"sweep: --memory and --memory-fraction are ignored: the sweep chooses the "
         "budgets (--over host sweeps the host budget at theirs)"});
  if (host) args.planning.host_memory.clear();
  auto [in, o] = api::prepare_sweep(args);
  const bool tell = !args.planning.quiet;
  int64_t need = in.peak_live;  // what the points' shares are of
  o.progress = [&](const SweepPoint& p, int done, int total) {
    if (!tell) return;
    fmt::print(stderr, "sweep: {}/{}  {} {}: {}\n", done, total, host ? "host" : "",
               format_bytes(p.budget),
               p.feasible ? percent_floor(p.throughput) + "% of ideal" : "no plan");
  };
  const SweepResult r = sweep(in.graph, in.device, o);
  if (host) need = r.host_need;

  if (!args.output.empty()) {
    // The report draws the plan at the target's budget (else the peak) beside
    // the baselines, with the sweep above.
    const int64_t budget = r.target_budget.value_or(r.peak_live);
    const Problem pb(in.graph, in.device, budget, args.planning.compute_scale, in.dp,
                     in.host_budget);
    std::vector<MethodResult> methods = run_methods(pb, o.method);
    in.budget = budget;
    const ReportInput report{
        .graph = in.graph,
        .device = in.device,
        .budget = budget,
        .peak_live = in.peak_live,
        .batch = in.batch,
        .ideal_us = pb.ideal_us,
        .methods = methods,
        .main = 0,
        .origin = fmt::format("searched for {:.1f} s at {}", methods.front().planning_seconds,
                              format_bytes(budget)),
        .source = in.graph.name,
        .sweep = &r};
    write_report(report, args.output);
  }

  if (args.planning.json) {
    fmt::print("{}\n", dump_json(api::sweep_json(in, o, r), 2));
    return;
  }
  // Names from files: Note [Names on a terminal].
  fmt::print("{} on {}, {} allocator; ideal {}\n", terminal_safe(in.graph.name),
             terminal_safe(in.device.name), to_string(o.method.allocator), format_us(r.ideal_us));
  if (host)
    fmt::print(
        "device budget {}; host memory its plan takes without a host limit {}; budgets below "
        "it send the rest to NVMe (Note [Host tier])\n\n",
        format_bytes(in.budget), format_bytes(r.host_need));
  else
    fmt::print(
        "peak live bytes {} (program order); no-swap floor {} ({} order); smallest "
        "feasible budget {}\n\n",
        format_bytes(r.peak_live), format_bytes(r.no_swap_floor), r.floor_order,
        format_bytes(r.min_budget));
  fmt::print("{:>12} {:>7} {:>9} {:>13} {:>9} {:>9}\n", host ? "host budget" : "budget",
             host ? "% need" : "% peak", "% ideal", "iteration ms", "GB in", "GB out");
  for (const SweepPoint& p : r.points) {
    const double of_peak = 100 * share_of(p.budget, need);
    if (!p.feasible) {
      fmt::print("{:>12} {:>6.1f}% no plan: {}\n", format_bytes(p.budget), of_peak,
                 terminal_safe(p.why));
      continue;
    }
    // % of ideal rounded down: a row under the target never reads as reaching it.
    fmt::print("{:>12} {:>6.1f}% {:>8}% {:>13.1f} {:>9.2f} {:>9.2f}\n", format_bytes(p.budget),
               of_peak, percent_floor(p.throughput), p.iteration_us / 1e3, p.swap_in_bytes / 1e9,
               p.swap_out_bytes / 1e9);
  }
  if (r.target) {
    if (r.target_budget)
      fmt::print("\nsmallest {}budget found for {:g}% of ideal: {} ({:.1f}% of {})\n",
                 host ? "host " : "", 100 * *r.target, format_bytes(*r.target_budget),
                 100 * share_of(*r.target_budget, need), host ? "the need" : "peak live");
    else
      fmt::print("\nno {} reached {:g}% of ideal\n",
                 host ? "host budget up to the need" : "budget up to the peak live bytes",
                 100 * *r.target);
  }
  if (!args.output.empty())
    fmt::print("report written  {} ({})\n", terminal_safe(args.output),
               format_bytes(static_cast<int64_t>(std::filesystem::file_size(args.output))));
}

}  // namespace

void register_sweep(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "% of ideal against the memory budget, and the smallest budget for a target");
  add_planning_options(cmd, &args->planning);
  cmd->add_option("--points", args->points, "budgets from the smallest feasible to the peak")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  cmd->add_option("--target", args->target,
                  "a share of ideal, e.g. 0.9: the smallest budget found that keeps it")
      ->check(target_fraction());
  cmd->add_option("-o,--output", args->output, "also write an HTML report with the sweep");
  cmd->add_option("--over", args->over,
                  "device: the device budget from the smallest feasible to the peak; host: the "
                  "host budget (Note [Host tier]) at the device budget --memory or "
                  "--memory-fraction gives, up to what its plan takes without a host limit")
      ->check(CLI::IsMember({"device", "host"}))
      ->capture_default_str();
  cmd->callback([args] { run_sweep(*args); });
}

}  // namespace sa::cli
