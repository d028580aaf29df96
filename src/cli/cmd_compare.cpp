// `swapadvisor compare`: every method side by side on one graph and budget.

#include <fmt/format.h>

#include "api/results.h"
#include "cli/planning.h"
#include "util/json.h"
#include "util/terminal.h"
#include "util/units.h"

namespace sa::cli {
namespace {

// The `ideal` method plans with unlimited memory in program order, and still
// copies the batch to the device: it can take longer than the ideal (the sum
// of op times, in the header), and its row, under that header, read as "the
// ideal" would contradict it. So the table calls it no-limit and says why
// (the report's comparison does the same; --json keeps the name "ideal").
constexpr const char* kNoLimitNote =
    "no-limit: the ideal method (--method ideal), unlimited memory in program order: its memory "
    "peak may pass the budget,\nand it still copies the batch to the device, so it can take "
    "longer than the ideal (the sum of op times).";

void run_compare(const PlanningArgs& args) {
  const PlanningInputs in = load_planning_inputs(args);
  const Problem problem(in.graph, in.device, in.budget, args.compute_scale, in.dp, in.host_budget);
  print_warnings(problem.warnings);
  const api::Comparison cmp = api::compare_methods(in, problem, method_options(args));
  if (args.json) {
    fmt::print("{}\n", dump_json(api::compare_json(in, problem, cmp), 2));
    return;
  }
  const std::vector<MethodResult>& results = cmp.results;
  const TimeBound& program_bound = cmp.program_bound;
  const TimeBound& search_bound = cmp.search_bound;
  const MethodResult& searched = results.front();
  auto samples = [&](const MethodResult& r) {
    return in.batch ? *in.batch / (r.sim.iteration_us * 1e-6) : 0.0;
  };
  // Names from files: Note [Names on a terminal].
  fmt::print("{} on {}, budget {}; ideal {} (sum of op times)\n", terminal_safe(in.graph.name),
             terminal_safe(in.device.name), describe_budget(in), format_us(problem.ideal_us));
  fmt::print(
      "no swap-only plan beats {} ({:.1f}% of ideal) in program order, {} ({:.1f}%) in the "
      "searched order (transfer bound, docs/results.md; recomputation can)\n",
      format_us(program_bound.bound_us()), 100 * problem.ideal_us / program_bound.bound_us(),
      format_us(search_bound.bound_us()), 100 * problem.ideal_us / search_bound.bound_us());
  const TimeBound& rc_program = cmp.program_recompute_bound;
  const TimeBound& rc_search = cmp.search_recompute_bound;
  fmt::print(
      "no plan beats {} ({:.1f}% of ideal) in program order, {} ({:.1f}%) in the searched "
      "order, whatever it recomputes (what must cross the link or be remade at its producers' "
      "cost: Note [Recompute bound])\n\n",
      format_us(rc_program.bound_us()), 100 * problem.ideal_us / rc_program.bound_us(),
      format_us(rc_search.bound_us()), 100 * problem.ideal_us / rc_search.bound_us());
  if (problem.host_budget > 0 && in.device.has_nvme())
    fmt::print(
        "(both bounds count the NVMe reads and writes that a host budget of {} forces: "
        "Note [Tiered transfer bound])\n\n",
        format_bytes(problem.host_budget));
  fmt::print("{:<12} {:>12} {:>10} {:>9} {:>9} {:>9} {:>11} {:>13}\n", "method", "iteration ms",
             "samples/s", "% ideal", "GB in", "GB out", "stall ms", "recompute ms");
  bool no_limit = false;
  for (const auto& r : results) {
    // The `ideal` method is no ideal: shown as no-limit, with a note below.
    const std::string name = r.name == "ideal" ? "no-limit" : r.name;
    if (!r.feasible) {
      fmt::print("{:<12} infeasible: {}\n", name, terminal_safe(r.why));
      continue;
    }
    no_limit |= r.name == "ideal";
    fmt::print("{:<12} {:>12.1f} {:>10} {:>9.1f} {:>9.2f} {:>9.2f} {:>11.1f} {:>13.1f}\n", name,
               r.sim.iteration_us / 1e3, in.batch ? fmt::format("{:.2f}", samples(r)) : "-",
               100 * problem.ideal_us / r.sim.iteration_us, r.sim.swap_in_bytes / 1e9,
               r.sim.swap_out_bytes / 1e9, r.sim.stall_us / 1e3, r.sim.recompute_us / 1e3);
  }
  if (!searched.from.empty())
    fmt::print(
        "\nswapadvisor returns {}'s plan: no candidate it evaluated in its budget was faster "
        "(Note [Search time])\n",
        searched.from);
  if (no_limit) fmt::print("\n{}\n", kNoLimitNote);
}

}  // namespace

void register_compare(CLI::App& app) {
  auto args = std::make_shared<PlanningArgs>();
  CLI::App* cmd = app.add_subcommand("compare", "every method side by side");
  add_planning_options(cmd, args.get());
  cmd->callback([args] { run_compare(*args); });
}

}  // namespace sa::cli
