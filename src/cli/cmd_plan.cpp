// `swapadvisor plan`: search for the fastest plan within a memory budget.

#include <fmt/format.h>

#include "api/results.h"
#include "cli/planning.h"
#include "plan/data_parallel.h"
#include "plan/plan_io.h"
#include "plan/stalls.h"
#include "report/trace.h"
#include "runtime/mpi/ranks.h"
#include "search/ga.h"
#include "util/error.h"
#include "util/json.h"
#include "util/terminal.h"
#include "util/units.h"

namespace sa::cli {
namespace {

struct PlanArgs {
  PlanningArgs planning;
  std::string output;
  std::string trace;  // --trace FILE: the simulated iteration as a Chrome trace
  std::string method = "swapadvisor";
};

// Note [Shared evaluations], Note [Islands]: under mpirun the processes
// share one search's evaluations, or search one island each; they
// first check at a checkpoint that they plan the same problem the same way
// (Note [Rank failures]), and only rank 0 writes and prints.
void run_plan(const PlanArgs& args) {
  const runtime::RankInfo rank = runtime::init_ranks();
  PlanningArgs planning = args.planning;
  if (rank.rank != 0) planning.quiet = true;
  const PlanningInputs in = load_planning_inputs(planning);
  const Problem problem(in.graph, in.device, in.budget, planning.compute_scale, in.dp,
                        in.host_budget);
  if (rank.rank == 0) print_warnings(problem.warnings);
  MethodOptions options = method_options(planning);
  if (rank.size > 1) {
    if (args.method != "swapadvisor")
      throw sa::Error(fmt::format(
          "under mpirun only the search (--method swapadvisor) runs on several processes, not {}",
          args.method));
    check_islands(rank.size, options.search.islands);  // before the checkpoint: one message
    runtime::RunFingerprint fp;
    fp.graph = graph_fingerprint(in.graph);
    fp.graph_text = fmt::format("'{}' ({} ops)", in.graph.name, in.graph.num_ops());
    const SearchOptions& so = options.search;
    fp.options = fmt::format(
        "budget {} B, host budget {} B, device {}, seed {}, evaluations {}, time budget {} s, "
        "population {}, recompute {}, islands {}",
        in.budget, in.host_budget, in.device.name, so.seed, so.max_evaluations, so.time_budget_s,
        so.population, so.recompute, so.islands);
    runtime::checkpoint(&fp, nullptr);
    options.search.comm = {rank.rank, rank.size, runtime::all_gather_text};
    runtime::collectives_begin();
  }
  const MethodResult r = run_method(args.method, problem, options);
  if (rank.size > 1) runtime::collectives_end();
  if (rank.rank != 0) return;
  if (!r.feasible)
    throw sa::Error(fmt::format("{} cannot plan within the budget: {}", r.name, r.why));
  if (!args.output.empty()) write_verified_plan(in.graph, r.plan, args.output);
  if (!args.trace.empty())
    write_trace(in.graph, r.plan, r.sim,
                {.title = fmt::format("{}: {} plan on {}, budget {}", in.graph.name, r.name,
                                      in.device.name, format_bytes(in.budget))},
                args.trace);
  if (args.planning.json) {
    fmt::print("{}\n", dump_json(api::plan_json(in, problem, r), 2));
    return;
  }
  const SimResult& s = r.sim;
  const StallReport stalls = attribute_stalls(in.graph, r.plan, s.timeline);
  const double exposed =
      in.dp.active() ? exposed_collective_us(in.graph, r.plan, problem.op_us, in.device) : 0;
  // Names from files: Note [Names on a terminal].
  fmt::print("graph         {} ({} ops, {} tensors)\n", terminal_safe(in.graph.name),
             in.graph.num_ops(), in.graph.num_tensors());
  fmt::print("device        {}\n", terminal_safe(in.device.name));
  fmt::print("budget        {}\n", describe_budget(in));
  fmt::print("method        {} ({:.1f} s, {} evaluations)\n", r.name, r.planning_seconds,
             r.evaluations);
  fmt::print(
      "iteration     {}  ({:.1f}% of the ideal {}){}\n", format_us(s.iteration_us),
      100 * problem.ideal_us / s.iteration_us, format_us(problem.ideal_us),
      in.batch ? fmt::format(", {:.2f} samples/s", *in.batch / (s.iteration_us * 1e-6)) : "");
  if (in.dp.active())
    fmt::print("ranks         {}{}: collectives {} per rank, {} of it exposed{}\n", in.dp.ranks,
               in.dp.shard_optimizer ? " (optimizer sharded)" : "", format_us(s.collective_us),
               format_us(exposed),
               in.batch ? fmt::format(", {:.2f} samples/s in all",
                                      static_cast<double>(in.dp.ranks) *
                                          static_cast<double>(*in.batch) / (s.iteration_us * 1e-6))
                        : "");
  fmt::print("compute stall {}{}\n", format_us(s.stall_us),
             stalls.total_us > 0 ? ": " + describe_stall_causes(stalls) : "");
  fmt::print("swapped       {} in, {} out\n", format_bytes(s.swap_in_bytes),
             format_bytes(s.swap_out_bytes));
  const PlanTraffic traffic = plan_traffic(in.graph, r.plan);
  if (traffic.recomputes > 0)
    fmt::print("recomputed    {} ops run again, {} of compute ({:.1f}% of the iteration)\n",
               traffic.recomputes, format_us(s.recompute_us),
               100 * s.recompute_us / s.iteration_us);
  if (r.plan.allocator == Allocator::kArena)
    fmt::print("device memory peak {} in an arena of {} (planned offsets, {} objects)\n",
               format_bytes(s.peak_device_bytes), format_bytes(r.plan.arena_bytes()),
               r.plan.num_objects());
  else
    fmt::print("device memory peak {} of a {} pool ({} classes, {} objects)\n",
               format_bytes(s.peak_device_bytes), format_bytes(r.plan.pool.total_bytes()),
               r.plan.pool.num_classes(), r.plan.num_objects());
  if (!args.output.empty()) fmt::print("plan written  {}\n", terminal_safe(args.output));
  if (!args.trace.empty()) fmt::print("trace written {}\n", terminal_safe(args.trace));
}

}  // namespace

void register_plan(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand("plan", "search for the fastest swap plan within a budget");
  add_planning_options(cmd, &args->planning);
  cmd->add_option("-o,--output", args->output, "write the plan (JSON; .gz to compress)");
  cmd->add_option("--trace", args->trace,
                  "write the simulated iteration as a Chrome trace (Perfetto, chrome://tracing)");
  cmd->add_option("--method", args->method, "swapadvisor (the search) or a baseline")
      ->capture_default_str();
  cmd->callback([args] { runtime::run_rank([&] { run_plan(*args); }); });
}

}  // namespace sa::cli
