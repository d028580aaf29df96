// `swapadvisor stats`: the derived quantities of a graph and its ideal time.

#include <fmt/format.h>

#include "api/stats.h"
#include "cli/common.h"
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
  const api::GraphSummary sum = api::summarize_graph(g, dev);
  print_warnings(sum.warnings);
  if (args.json) {
    fmt::print("{}\n", dump_json(api::stats_json(sum), 2));
    return;
  }
  const GraphStats& s = sum.stats;
  const NoSwapFloor& floor = sum.floor;
  const double ideal = sum.ideal_us;
  const OpId hungriest = sum.hungriest;
  const int64_t largest_op = sum.largest_op;
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
  add_source_options(cmd, &args->source);
  cmd->add_option("--device", args->device, "built-in device name or profile file")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->callback([args] { run_stats(*args); });
}

}  // namespace sa::cli
