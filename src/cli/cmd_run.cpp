// `swapadvisor run`: execute a plan on the host-emulated device or a CUDA GPU,
// with its data integrity checked against an unconstrained run.

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "cli/options.h"
#include "cli/run_aten.h"
#include "cost/op_cost.h"
#include "graph/graph_io.h"
#include "plan/plan_io.h"
#include "plan/simulator.h"
#include "plan/verify.h"
#include "runtime/backends.h"
#include "runtime/executor.h"
#include "runtime/mpi/ranks.h"
#include "util/error.h"
#include "util/json.h"
#include "util/limits.h"
#include "util/terminal.h"
#include "util/units.h"

namespace sa::cli {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

struct RunArgs {
  GraphSource source;
  std::vector<std::string> files;  // GRAPH PLAN, or PLAN with --model
  std::string graph;
  std::string plan;
  std::string backend = "host";
  std::string device = "v100-16gb";
  int iterations = 3;
  std::string time_scale = "auto";  // or a number (zero_or_number_in)
  bool pace = true;
  int cuda_device = 0;
  bool json = false;
  bool quiet = false;
  std::string kernels = "synthetic";  // or "aten": a captured PyTorch model (cli/run_aten.h)
  AtenRunArgs aten;
};

// What run prints besides the run's own result.
struct RunSummary {
  double used_scale = 0;   // the time scale the run used
  double scale = 1;        // the same, 1 when unscaled
  double measured_us = 0;  // median iteration in device time
  double ratio = 0;        // measured / simulated
  double overrun_us = 0;   // host kernels past their op's time, device time, median iteration
  double late_kernels = 0;
  bool paced = false;
  bool auto_scale = false;
};

void print_run_json(const Graph& g, const Plan& p, const runtime::RankInfo& rank,
                    const runtime::Backend& backend, const DeviceProfile& device,
                    const SimResult& s, const runtime::RunResult& r, const RunSummary& m,
                    int iterations) {
  nlohmann::json j = {{"graph", g.name},
                      {"rank", rank.rank},
                      {"ranks", rank.size},
                      {"method", p.method},
                      {"backend", backend.name()},
                      {"device", backend.device_name()},
                      {"profile", device.name},
                      {"time_scale", m.used_scale},
                      {"time_scale_auto", m.auto_scale},
                      {"calibration_wall_us", r.calibration_wall_us},
                      {"paced", m.paced},
                      {"iterations", iterations},
                      {"wall_us", r.iteration_wall_us},
                      {"measured_us", m.measured_us},
                      {"simulated_us", s.iteration_us},
                      {"ratio", m.ratio},
                      {"swap_in_bytes", r.swap_in_bytes},
                      {"swap_out_bytes", r.swap_out_bytes},
                      {"recomputes", r.recomputes},
                      {"peak_device_bytes", r.peak_device_bytes},
                      {"memory_budget_bytes", p.memory_budget},
                      {"pool_bytes", p.arena_bytes()},
                      {"host_bytes", r.host_bytes},
                      {"nvme_bytes", r.nvme_bytes},
                      {"safety_waits", r.safety_waits},
                      {"late_kernels", r.late_kernels},
                      {"kernel_overrun_wall_us", r.kernel_overrun_wall_us},
                      {"kernel_overrun_us", m.overrun_us},
                      {"integrity", r.integrity}};
  fmt::print("{}\n", dump_json(j, 2));
}

void print_run_text(const Graph& g, const Plan& p, const runtime::RankInfo& rank,
                    const runtime::Backend& backend, const DeviceProfile& device,
                    const SimResult& s, const runtime::RunResult& r, const RunSummary& m,
                    const RunArgs& args) {
  // Names from files: Note [Names on a terminal].
  fmt::print("graph       {} ({} ops, {} tensors)\n", terminal_safe(g.name), g.num_ops(),
             g.num_tensors());
  if (rank.size > 1) fmt::print("rank        {} of {}\n", rank.rank, rank.size);
  fmt::print("plan        {} ({} steps), budget {}\n", terminal_safe(p.method), p.num_steps(),
             format_bytes(p.memory_budget));
  fmt::print("backend     {} ({}), time scale {:g}{}{}\n", backend.name(),
             terminal_safe(backend.device_name()), m.used_scale,
             m.auto_scale ? fmt::format(" (auto: a calibration iteration took {} as fast as the "
                                        "host goes)",
                                        format_us(r.calibration_wall_us))
                          : "",
             m.paced ? fmt::format(", copies paced to {}", terminal_safe(device.name))
                     : (args.backend == "host" ? ", copies unpaced" : ""));
  std::vector<std::string> walls;
  for (double w : r.iteration_wall_us)
    walls.push_back(format_us(w));
  fmt::print("iterations  {}: {} wall\n", r.iteration_wall_us.size(), fmt::join(walls, ", "));
  fmt::print("measured    {} per iteration (median{})\n", format_us(m.measured_us),
             m.scale != 1 ? ", wall time / time scale" : "");
  fmt::print("simulated   {} on {} (measured / simulated = {:.3f})\n", format_us(s.iteration_us),
             terminal_safe(device.name), m.ratio);
  fmt::print("swapped     {} in, {} out per iteration\n", format_bytes(r.swap_in_bytes),
             format_bytes(r.swap_out_bytes));
  if (r.recomputes > 0) fmt::print("recomputed  {} ops per iteration\n", r.recomputes);
  print_host_tier(p, r);
  if (args.backend == "host")
    fmt::print("late ops    {:.0f} kernels ran past their op time, by {} in all per iteration{}\n",
               m.late_kernels, format_us(m.overrun_us), m.scale != 1 ? " (device time)" : "");
  fmt::print("device      peak {} in use; arena {} (the budget), objects reach {}\n",
             format_bytes(r.peak_device_bytes), format_bytes(r.arena_bytes),
             format_bytes(p.arena_bytes()));
  fmt::print("integrity   {}\n",
             r.integrity_ok ? fmt::format("ok: every op's results and every persistent tensor "
                                          "match the reference run in all {} iterations",
                                          args.iterations)
                            : r.integrity);
}

void run_run(RunArgs& args) {
  args.plan = args.source.take_graph_and_plan(args.files);
  args.graph = args.source.file.empty() ? args.source.model : args.source.file;
  if (args.kernels == "aten") {
    if (!args.source.model.empty())
      throw Error(
          "--kernels aten runs a captured PyTorch model: give its graph file "
          "(swapadvisor-capture), not --model");
    AtenRunArgs a = args.aten;
    a.graph = args.graph;
    a.plan = args.plan;
    a.backend = args.backend;
    a.iterations = args.iterations;
    a.json = args.json;
    run_aten(a);
    return;
  }
  // Under mpirun: one rank of several (Note [Ranks] in runtime/mpi/ranks.h).
  const runtime::RankInfo rank = runtime::init_ranks();
  const bool tell = !args.quiet && rank.rank == 0;  // progress lines on stderr
  const DeviceProfile device = load_device(args.device);
  const auto [g, p] = read_graph_and_plan(args.source.load(), args.plan, device);
  if (rank.size > 1 && p.data_parallel.ranks != rank.size)
    print_warnings({fmt::format(
        "rank {}: {} ranks run a plan made for {} (its collectives are timed for that many)",
        rank.rank, rank.size, p.data_parallel.ranks)});
  const VerifyResult v = verify_plan(g, p);
  if (!v.ok)
    throw Error(
        fmt::format("{}: the plan is not valid for {}: {}", args.plan, args.graph, v.violation));
  std::vector<std::string> warnings;
  const std::vector<double> op_us = op_times_us(g, device, &warnings);
  check_op_times(g, device, op_us);
  print_warnings(warnings);
  // auto: the host backend measures the host first (Note [Automatic time
  // scale] in runtime/executor.h); CUDA runs at the device's own speed.
  const bool auto_scale = args.time_scale == "auto" && args.backend == "host";
  const double time_scale =
      args.time_scale == "auto" ? 1 : std::stod(args.time_scale);  // checked by its validator
  if (args.backend == "cuda" && time_scale != 1)
    print_warnings(
        {"--time-scale stretches the CUDA kernels but not the real copies; measured "
         "and simulated times then disagree by design"});

  Simulator sim;
  const SimResult s = sim.run(g, p, op_us, device);
  if (!s.ok) throw Error(fmt::format("the simulator cannot run the plan: {}", s.error));

  runtime::BackendOptions bo;
  bo.name = args.backend;
  bo.link = device;
  bo.time_scale = time_scale;
  bo.pace = args.pace;
  bo.cuda_device = args.cuda_device;
  const auto backend = runtime::make_backend(bo);
  runtime::RunOptions ro;
  ro.iterations = args.iterations;
  ro.ranks = rank;
  ro.time_scale = time_scale;
  ro.agree = fmt::format("kernels: synthetic; time scale: {}", args.time_scale);
  ro.nvme_path = args.aten.nvme_file;
  double run_scale = time_scale > 0 ? time_scale : 1;  // for the progress lines
  // Note [Host tier]: the disk's reads and writes take their wall time at
  // any time scale, so in device time (wall / scale) they run scale x
  // faster: the run is compared with a simulation at that NVMe speed.
  SimResult scaled_sim;
  double scaled_at = 1;
  auto simulated_at = [&](double scale) -> const SimResult& {
    if (p.nvme_tensors.empty() || scale == 1) return s;
    if (scale != scaled_at) {
      DeviceProfile d = device;
      d.nvme_read_gbps *= scale;
      d.nvme_write_gbps *= scale;
      d.nvme_latency_us /= scale;
      scaled_sim = sim.run(g, p, op_us, d);
      scaled_at = scale;
    }
    return scaled_sim.ok ? scaled_sim : s;
  };
  if (auto_scale)
    ro.choose_time_scale = [&](double wall_us) {
      // Every rank runs at the largest scale any of them needs.
      const double x =
          runtime::max_over_ranks(runtime::auto_time_scale(wall_us, s.iteration_us, kMaxTimeScale));
      run_scale = x;
      if (tell)
        fmt::print(stderr,
                   "run: calibration: one iteration as fast as this host goes took {} "
                   "(simulated: {}): time scale {:g}, {} per iteration\n",
                   format_us(wall_us), format_us(s.iteration_us), x, format_us(x * s.iteration_us));
      return x;
    };
  ro.on_iteration = [&](int it, double wall_us) {
    if (!tell) return;
    const double measured = wall_us / run_scale;
    const double simulated = simulated_at(run_scale).iteration_us;
    fmt::print(stderr, "run: iteration {}/{}: {} wall, {} measured ({:.3f} x simulated)\n", it + 1,
               args.iterations, format_us(wall_us), format_us(measured),
               simulated > 0 ? measured / simulated : 0);
  };
  if (tell)
    fmt::print(stderr, "run: setting up: a device arena of {}, host storage, the reference{}\n",
               format_bytes(p.memory_budget),
               auto_scale ? "; then a calibration iteration (time scale auto)" : "");
  const runtime::RunResult r = runtime::run_plan(*backend, g, p, op_us, ro);

  // Device time: wall time with the time scale taken out.
  const double used_scale = r.time_scale;
  const double scale = used_scale > 0 ? used_scale : 1;
  const double measured_us = r.median_wall_us() / scale;
  const SimResult& compared = simulated_at(scale);
  const double ratio = compared.iteration_us > 0 ? measured_us / compared.iteration_us : 0;
  const bool paced = args.backend == "host" && args.pace && used_scale > 0;
  // Host kernels that ran past their op's duration (Note [Time scale] in
  // runtime/executor.h): the median iteration's, in device time.
  const double overrun_us = median(r.kernel_overrun_wall_us) / scale;
  const double late_kernels =
      median(std::vector<double>(r.late_kernels.begin(), r.late_kernels.end()));
  // Most of an overrun is made up by the next ops (Note [Stream clocks] in
  // runtime/host/host_backend.cpp); a large one is a sign that it was not.
  if (overrun_us > 0.2 * measured_us)
    print_warnings({fmt::format(
        "the host's synthetic kernels ran {} per iteration past their ops' times ({:.1f}% of the "
        "measured time, {:.0f} ops late): time scale {:g} may be too small for this host; what "
        "the next ops did not make up is in the measured time",
        format_us(overrun_us), 100 * overrun_us / measured_us, late_kernels, used_scale)});
  RunSummary m;
  m.used_scale = used_scale;
  m.scale = scale;
  m.measured_us = measured_us;
  m.ratio = ratio;
  m.overrun_us = overrun_us;
  m.late_kernels = late_kernels;
  m.paced = paced;
  m.auto_scale = auto_scale;
  if (args.json)
    print_run_json(g, p, rank, *backend, device, compared, r, m, args.iterations);
  else
    print_run_text(g, p, rank, *backend, device, compared, r, m, args);
  if (!r.integrity_ok) throw Error("integrity check failed: " + r.integrity);
}

}  // namespace

void register_run(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run", "execute a plan on a host-emulated device or a CUDA GPU and check its data");
  cmd->add_option("files", args->files,
                  "GRAPH PLAN: the graph file (format v1) and the plan file (swapadvisor plan "
                  "-o); with --model NAME --batch N, the plan file alone")
      ->required()
      ->expected(1, 2);
  add_model_options(cmd, &args->source);
  cmd->add_option("--backend", args->backend, "host (an emulated device) or cuda")
      ->check(CLI::IsMember({"host", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--device", args->device,
                  "device profile: op times, simulated time, the host backend's link")
      ->capture_default_str();
  cmd->add_option("--iterations", args->iterations,
                  fmt::format("timed iterations, at most {}", kMaxIterations))
      ->check(integer_in(1, kMaxIterations))
      ->capture_default_str();
  cmd->add_option("--time-scale", args->time_scale,
                  fmt::format("stretch op times (and, on the host backend, paced copies) by this "
                              "factor, {:g} to {:g}; 0: as fast as possible; auto: the host "
                              "backend measures this host with one iteration first (CUDA: 1)",
                              kMinTimeScale, kMaxTimeScale))
      ->check(auto_zero_or_number_in(kMinTimeScale, kMaxTimeScale))
      ->capture_default_str();
  cmd->add_flag("--pace,!--no-pace", args->pace,
                "host backend: pace copies to the profile's PCIe bandwidths (default on)");
  cmd->add_option("--cuda-device", args->cuda_device, "CUDA device index")
      ->check(cuda_device_index());
  cmd->add_option("--nvme-file", args->aten.nvme_file,
                  "a plan with tensors on NVMe (--host-memory): the file that holds them, on a "
                  "disk file system that takes O_DIRECT; made by the run and removed after it")
      ->check(non_empty());
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->add_flag("--quiet", args->quiet, "no progress lines on stderr");
  cmd->add_option("--kernels", args->kernels,
                  "synthetic (checksummed stand-ins) or aten (a captured PyTorch model run "
                  "through libtorch: docs/capture.md)")
      ->check(CLI::IsMember({"synthetic", "aten"}))
      ->capture_default_str();
  cmd->add_option("--exec", args->aten.exec,
                  "aten: the capture's exec file (default: PREFIX.exec.json.gz beside the graph)");
  cmd->add_option(
      "--values", args->aten.values,
      "aten: the initial values (default: PREFIX.values.bin beside the graph); under mpirun "
      "{rank} in the name is the rank's number (each rank's own batch)");
  cmd->add_option("--save-values", args->aten.save_values,
                  "aten: write the trained parameters, buffers and optimizer state here ({rank} as "
                  "for --values)");
  cmd->add_option(
         "--threads", args->aten.threads,
         fmt::format("aten: intra-op threads, at most {} (default: libtorch's)", kMaxThreads))
      ->check(integer_in(0, kMaxThreads));
  // Under mpirun, one rank's error ends every rank (Note [Rank failures] in
  // runtime/mpi/ranks.h).
  cmd->callback([args] { runtime::run_rank([&] { run_run(*args); }); });
}

}  // namespace sa::cli
