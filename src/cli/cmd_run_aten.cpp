// `swapadvisor run --kernels aten` (cli/run_aten.h).

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "cli/run_aten.h"
#include "cost/device.h"
#include "graph/graph_io.h"
#include "plan/plan_io.h"
#include "plan/verify.h"
#include "runtime/aten/aten_run.h"
#include "runtime/mpi/ranks.h"
#include "util/error.h"
#include "util/json.h"
#include "util/terminal.h"
#include "util/units.h"

namespace sa::cli {
namespace {

// "out/resnet18.graph.json.gz" -> "out/resnet18" (the capture's prefix).
std::string capture_prefix(const std::string& graph) {
  for (const char* suffix : {".graph.json.gz", ".graph.json"}) {
    const std::string s(suffix);
    if (graph.size() > s.size() && graph.compare(graph.size() - s.size(), s.size(), s) == 0)
      return graph.substr(0, graph.size() - s.size());
  }
  return "";
}

// Every "{rank}" in path replaced by the rank's number.
std::string with_rank(std::string path, int rank) {
  const std::string key = "{rank}", r = std::to_string(rank);
  for (size_t at = path.find(key); at != std::string::npos; at = path.find(key, at + r.size()))
    path.replace(at, key.size(), r);
  return path;
}

}  // namespace

void print_host_tier(const Plan& p, const runtime::RunResult& r) {
  if (p.nvme_tensors.empty()) return;
  fmt::print("host        arena {} (host budget {}), {} tensors ({}) on NVMe ({})\n",
             format_bytes(r.host_bytes), format_bytes(p.host_budget), p.nvme_tensors.size(),
             format_bytes(r.nvme_bytes), r.nvme_backend);
}

void run_aten(const AtenRunArgs& a) {
  const Graph captured = read_graph(a.graph);
  // A data-parallel plan is one rank's: the captured graph with collective
  // ops spliced in (Note [ATen data parallelism] in runtime/aten/aten_kernels.h).
  // Their times do not matter here; the device only times them.
  GraphAndPlan gp = read_graph_and_plan(captured, a.plan, load_device("v100-16gb"));
  Graph& g = gp.graph;
  const Plan& p = gp.plan;
  g.name = captured.name;  // the values files are the captured graph's
  const runtime::RankInfo rank = runtime::init_ranks();
  if (p.data_parallel.active() && rank.size != p.data_parallel.ranks)
    print_warnings(
        {fmt::format("rank {}: {} ranks run a plan made for {}: the gradients are averaged over {}",
                     rank.rank, rank.size, p.data_parallel.ranks, rank.size)});
  if (!p.data_parallel.active() && rank.size > 1)
    print_warnings(
        {fmt::format("rank {} of {}: the plan has no all-reduce (plan with "
                     "--data-parallel {}): every rank trains alone",
                     rank.rank, rank.size, rank.size)});
  const VerifyResult v = verify_plan(g, p);
  if (!v.ok)
    throw Error(fmt::format("{}: the plan is not valid for {}: {}", a.plan, a.graph, v.violation));
  const std::string prefix = capture_prefix(a.graph);
  const std::string exec = !a.exec.empty() ? a.exec : prefix + ".exec.json.gz";
  const std::string values =
      !a.values.empty() ? with_rank(a.values, rank.rank) : prefix + ".values.bin";
  const std::string save_values = with_rank(a.save_values, rank.rank);
  if ((a.exec.empty() || a.values.empty()) && prefix.empty())
    throw Error(
        fmt::format("{}: not named PREFIX.graph.json[.gz]; give --exec and --values", a.graph));
  if (a.backend != "host" && a.backend != "cuda")
    throw Error(fmt::format("--kernels aten: unknown backend '{}' (host or cuda)", a.backend));
  runtime::AtenProgram program = runtime::read_aten_program(exec, captured);
  if (p.data_parallel.active()) program = runtime::with_collectives(program, g);
  const runtime::ValuesFile initial = runtime::read_values_file(values);
  runtime::check_values_against(initial, g, values, program.storage_bytes);
  if (runtime::aten_available() &&
      !runtime::same_torch_release(program.torch_version, runtime::aten_torch_version()))
    fmt::print(stderr,
               "swapadvisor: warning: {} was captured with torch {}, the kernels are libtorch "
               "{}'s: an op may compute differently across releases (capture again with the "
               "torch this swapadvisor was built against to compare with eager PyTorch)\n",
               terminal_safe(exec),
               terminal_safe(program.torch_version.empty() ? "(unknown)" : program.torch_version),
               runtime::aten_torch_version());
  if (const auto late = runtime::random_ops_out_of_order(p, program))
    fmt::print(stderr,
               "swapadvisor: warning: the plan runs random op {} ({}) before op {} ({}), against "
               "program order: they draw other numbers than eager PyTorch does (as correct a "
               "training, not comparable bit for bit)\n",
               late->first, terminal_safe(program.ops[late->first].qualname), late->second,
               terminal_safe(program.ops[late->second].qualname));
  if (!program.step_scalars.empty() && a.iterations > 1)
    fmt::print(stderr,
               "swapadvisor: note: {} names {} step scalars (an optimizer's per-step values, "
               "Note [Step scalars]); `run` keeps their captured values at every iteration, "
               "as if each were the captured step (swapadvisor.Trainer gives each step its "
               "own)\n",
               terminal_safe(exec), program.step_scalars.size());
  runtime::AtenRunOptions o;
  o.iterations = a.iterations;
  o.ranks = rank;
  o.aten.threads = a.threads;
  o.aten.device = a.backend == "cuda" ? "cuda" : "cpu";
  o.aten.all_reduce_mean = runtime::all_reduce_mean_buffer;
  o.nvme_path = a.nvme_file;
  const runtime::AtenRunResult r = runtime::run_plan_aten(g, p, program, initial, o);
  if (!save_values.empty()) runtime::write_values_file(save_values, r.final_state);

  const runtime::AtenStats& s = r.stats;
  if (a.json) {
    nlohmann::json j = {{"graph", g.name},
                        {"rank", rank.rank},
                        {"ranks", rank.size},
                        {"method", p.method},
                        {"backend", a.backend},
                        {"kernels", r.kernels},
                        {"iterations", a.iterations},
                        {"losses", r.losses},
                        {"wall_us", r.run.iteration_wall_us},
                        {"median_iteration_us", r.run.median_wall_us()},
                        {"swap_in_bytes", r.run.swap_in_bytes},
                        {"swap_out_bytes", r.run.swap_out_bytes},
                        {"recomputes", r.run.recomputes},
                        {"peak_device_bytes", r.run.peak_device_bytes},
                        {"arena_bytes", r.run.arena_bytes},
                        {"memory_budget_bytes", p.memory_budget},
                        {"pool_bytes", p.arena_bytes()},
                        {"host_bytes", r.run.host_bytes},
                        {"nvme_bytes", r.run.nvme_bytes},
                        {"nvme_backend", r.run.nvme_backend},
                        {"aten",
                         {{"ops_run", s.ops_run},
                          {"outputs_placed", s.outputs_placed},
                          {"outputs_copied", s.outputs_copied},
                          {"copied_bytes", s.copied_bytes},
                          {"copy_us", s.copy_us},
                          {"kernel_us", s.kernel_us},
                          {"scratch_peak_bytes", s.scratch_peak_bytes},
                          {"ops_recomputed", s.ops_recomputed},
                          {"random_replays", s.random_replays},
                          {"all_reduces", s.all_reduces}}}};
    fmt::print("{}\n", dump_json(j, 2));
    return;
  }
  // Names from files: Note [Names on a terminal].
  fmt::print("graph       {} ({} ops, {} tensors)\n", terminal_safe(g.name), g.num_ops(),
             g.num_tensors());
  if (rank.size > 1)
    fmt::print("rank        {} of {}, {} all-reduces of gradients\n", rank.rank, rank.size,
               s.all_reduces);
  fmt::print("plan        {} ({} steps), budget {}\n", terminal_safe(p.method), p.num_steps(),
             format_bytes(p.memory_budget));
  fmt::print("kernels     ATen: {}\n", r.kernels);
  for (size_t i = 0; i < r.losses.size(); ++i)
    fmt::print("iteration {:<3} loss {:.9g}  ({})\n", i + 1, r.losses[i],
               i < r.run.iteration_wall_us.size() ? format_us(r.run.iteration_wall_us[i]) : "");
  fmt::print("swapped     {} in, {} out per iteration\n", format_bytes(r.run.swap_in_bytes),
             format_bytes(r.run.swap_out_bytes));
  print_host_tier(p, r.run);
  // As `run` says it: an arena plan has no pool, its objects reach
  // arena_bytes() (a size-class plan's pool is as large).
  fmt::print("device      peak {} in use; arena {} (the budget), objects reach {}\n",
             format_bytes(r.run.peak_device_bytes), format_bytes(r.run.arena_bytes),
             format_bytes(p.arena_bytes()));
  fmt::print("outputs     {} placed by the allocator, {} copied ({}, {})\n", s.outputs_placed,
             s.outputs_copied, format_bytes(s.copied_bytes), format_us(s.copy_us));
  // Per iteration, as the swaps are (aten.ops_recomputed in --json counts
  // all the iterations').
  if (s.ops_recomputed > 0)
    fmt::print("recomputed  {} ops per iteration, {} of them random with their draws replayed\n",
               r.run.recomputes, s.random_replays / std::max(1, a.iterations));
  fmt::print("scratch     kernels' own allocations outside the arena peaked at {}\n",
             format_bytes(s.scratch_peak_bytes));
  if (!save_values.empty()) fmt::print("state       written to {}\n", terminal_safe(save_values));
}

}  // namespace sa::cli
