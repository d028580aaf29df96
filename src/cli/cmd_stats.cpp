// `swapadvisor stats`: the derived quantities of a graph and its ideal time.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "cost/op_cost.h"
#include "graph/stats.h"
#include "plan/allocation.h"
#include "plan/problem.h"
#include "search/no_swap.h"
#include "util/json.h"
#include "util/terminal.h"
#include "util/units.h"

namespace sa::cli {
namespace {

struct StatsArgs {
  GraphSource source;
  std::string device = "v100-16gb";
  bool json = false;
};

void run_stats(const StatsArgs& args) {
  const Graph g = args.source.load();
  const DeviceProfile dev = load_device(args.device);
  std::vector<std::string> warnings;
  const auto times = op_times_us(g, dev, &warnings);
  check_op_times(g, dev, times);
  print_warnings(warnings);
  const GraphStats s = compute_stats(g);
  const double ideal = ideal_us(times);
  OpId hungriest = kNoOp;
  const int64_t largest_op = min_budget(g, &hungriest);
  const Problem pb(g, dev, std::max<int64_t>(1, s.peak_live_bytes));
  const NoSwapFloor floor = no_swap_floor(pb);
  if (args.json) {
    nlohmann::json j = {{"ops", s.ops},
                        {"tensors", s.tensors},
                        {"persistent_bytes", s.persistent_bytes},
                        {"peak_live_bytes", s.peak_live_bytes},
                        {"distinct_sizes", s.distinct_sizes},
                        {"flops", s.flops},
                        {"ideal_us", ideal},
                        {"largest_op_bytes", largest_op},
                        {"no_swap_floor_bytes", floor.bytes},
                        {"no_swap_floor_live_bytes", floor.live_bytes},
                        {"no_swap_floor_order", floor.order_name}};
    fmt::print("{}\n", dump_json(j, 2));
    return;
  }
  // Names from files: Note [Names on a terminal].
  const std::string device = terminal_safe(dev.name);
  fmt::print("graph             {}\n", g.name.empty() ? "(unnamed)" : terminal_safe(g.name));
  fmt::print("device            {}\n", device);
  fmt::print("ops               {}\n", s.ops);
  fmt::print("tensors           {}\n", s.tensors);
  fmt::print("persistent bytes  {} ({} B)\n", format_bytes(s.persistent_bytes), s.persistent_bytes);
  fmt::print("peak live bytes   {} ({} B) in program order\n", format_bytes(s.peak_live_bytes),
             s.peak_live_bytes);
  fmt::print("no-swap floor     {} ({} B; {:.1f}% below peak live), {} order: live {}, packed\n",
             format_bytes(floor.bytes), floor.bytes,
             // An empty graph has nothing live: 0% below, not 0/0.
             s.peak_live_bytes > 0 ? 100.0 * (1.0 - static_cast<double>(floor.bytes) /
                                                        static_cast<double>(s.peak_live_bytes))
                                   : 0.0,
             floor.order_name, format_bytes(floor.live_bytes));
  if (hungriest != kNoOp)
    fmt::print("largest op        {} ({} B, {}): no plan fits a smaller budget\n",
               format_bytes(largest_op), largest_op, terminal_safe(describe_op(g, hungriest)));
  fmt::print("distinct sizes    {}\n", s.distinct_sizes);
  fmt::print("flops             {:.4g}\n", s.flops);
  fmt::print("ideal iteration   {} on {} (sum of op times)\n", format_us(ideal), device);
  if (s.peak_live_bytes > dev.memory_bytes)
    fmt::print("fits in memory    no: peak live is {:.1f}x the {}'s {}\n",
               static_cast<double>(s.peak_live_bytes) / static_cast<double>(dev.memory_bytes),
               device, format_bytes(dev.memory_bytes));
  else
    fmt::print("fits in memory    yes ({} of {})\n", format_bytes(s.peak_live_bytes),
               format_bytes(dev.memory_bytes));
}

}  // namespace

void register_stats(CLI::App& app) {
  auto args = std::make_shared<StatsArgs>();
  CLI::App* cmd = app.add_subcommand("stats", "sizes, peak memory and ideal time of a graph");
  args->source.add_options(cmd);
  cmd->add_option("--device", args->device, "built-in device name or profile file")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->callback([args] { run_stats(*args); });
}

}  // namespace sa::cli
