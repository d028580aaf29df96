#include "api/planning.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "api/progress.h"
#include "cost/op_cost.h"
#include "graph/stats.h"
#include "plan/allocation.h"
#include "util/error.h"
#include "util/limits.h"
#include "util/units.h"

namespace sa::api {

PlanningInputs load_planning_inputs(const PlanningArgs& args, std::optional<Graph> graph,
                                    std::optional<int64_t> budget) {
  if (args.shard_optimizer && args.data_parallel < 2)
    throw Error("--shard-optimizer needs --data-parallel N with N of 2 or more");
  PlanningInputs in;
  in.dp.ranks = args.data_parallel;
  in.dp.shard_optimizer = args.shard_optimizer;
  in.device = rank_device(load_device(args.device), in.dp.ranks);
  in.graph = graph            ? std::move(*graph)
             : in.dp.active() ? data_parallel_graph(args.source.load(), in.dp, in.device)
                              : args.source.load();
  in.peak_live = peak_live_bytes(in.graph);
  if (budget) {
    in.budget = *budget;
  } else if (!args.memory.empty()) {
    auto b = parse_bytes(args.memory);
    if (!b)
      throw Error(fmt::format("--memory: cannot read '{}' as a size (e.g. 16GB, 11.5GiB, 4096)",
                              args.memory));
    in.budget = *b;
  } else if (args.memory_fraction > 0) {
    if (args.memory_fraction > 1 && !args.any_budget)
      throw Error(fmt::format(
          "--memory-fraction {:g} is over 1: it is a fraction of the peak live bytes ({}), so "
          "{:g} asks for {:.0f}% of the peak; for {:g}% give {:g} (or --allow-any-budget to plan "
          "it on purpose)",
          args.memory_fraction, format_bytes(in.peak_live), args.memory_fraction,
          100 * args.memory_fraction, args.memory_fraction, args.memory_fraction / 100));
    const double budget = static_cast<double>(in.peak_live) * args.memory_fraction;
    if (budget > static_cast<double>(kMaxBytes))
      throw Error(fmt::format(
          "--memory-fraction {:g}: a budget of {:.4g} bytes is over the limit of 2^50 (1 PiB)",
          args.memory_fraction, budget));
    in.budget = static_cast<int64_t>(budget);
  } else {
    in.budget = in.device.memory_bytes;
  }
  if (!args.host_memory.empty()) {
    const auto h = parse_bytes(args.host_memory);
    if (!h || *h < 1)
      throw Error(
          fmt::format("--host-memory: cannot read '{}' as a size of at least one byte (e.g. 64GiB)",
                      args.host_memory));
    in.host_budget = *h;
  }
  // A plan's own budget (report, sweep's placeholder) was checked when it was asked for.
  if (!budget && in.budget > in.device.memory_bytes && !args.any_budget)
    throw Error(fmt::format(
        "the budget of {} ({} B) is over {}'s memory of {} ({} B); give at most that (or "
        "--allow-any-budget to plan it on purpose, for a study)",
        format_bytes(in.budget), in.budget, in.device.name, format_bytes(in.device.memory_bytes),
        in.device.memory_bytes));
  check_op_times(in.graph, in.device, op_times_us(in.graph, in.device), args.compute_scale);
  OpId op = kNoOp;
  const int64_t need = min_budget(in.graph, &op);
  if (in.budget < need)
    throw Error(fmt::format(
        "the budget of {} ({} B) is below what {} touches at once: {} ({} B) for its "
        "inputs, outputs, updates and workspace",
        format_bytes(in.budget), in.budget, describe_op(in.graph, op), format_bytes(need), need));
  if (args.source.batch > 0) {
    in.batch = args.source.batch;
  } else {
    for (const Tensor& t : in.graph.tensors)
      if (t.kind == TensorKind::kInput && !t.shape.empty() && t.shape[0] > 0) {
        in.batch = t.shape[0];
        break;
      }
  }
  return in;
}

MethodOptions method_options(const PlanningArgs& args) {
  MethodOptions m;
  m.allocator = *allocator_from_string(args.allocator);
  SearchOptions& o = m.search;
  o.time_budget_s = args.time_budget_s;
  o.max_evaluations = args.evaluations;
  if (o.time_budget_s == 0 && o.max_evaluations == 0) o.time_budget_s = 10;
  o.threads = args.threads > 0 ? args.threads
                               : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  o.seed = args.seed;
  if (!args.quiet) o.progress = stderr_search_progress();
  o.planner.deadline_copy_order = args.copy_order == "deadline";
  o.planner.layout = args.arena_layout == "packed" ? MemoryLayout::kPacked : MemoryLayout::kPlaced;
  o.planner.host_policy = args.host_policy == "first-evicted"   ? HostTierPolicy::kFirstEvicted
                          : args.host_policy == "fewest-copies" ? HostTierPolicy::kFewestCopies
                                                                : HostTierPolicy::kLeastStall;
  o.allocator = m.allocator;
  o.recompute = !args.no_recompute;
  o.local_share = args.local_moves;
  o.islands = args.islands;
  return m;
}

std::string describe_budget(const PlanningInputs& in) {
  return fmt::format("{} ({:.0f}% of peak live {})", format_bytes(in.budget),
                     100.0 * static_cast<double>(in.budget) / static_cast<double>(in.peak_live),
                     format_bytes(in.peak_live));
}

}  // namespace sa::api
