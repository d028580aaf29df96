#include "cli/planning.h"

#include <limits>

#include <fmt/format.h>

#include "cli/options.h"
#include "util/limits.h"

namespace sa::cli {

void add_planning_options(CLI::App* app, PlanningArgs* args) {
  PlanningArgs& a = *args;
  add_source_options(app, &a.source);
  app->add_option("--device", a.device, "built-in device name or profile file")
      ->capture_default_str();
  auto* mem = app->add_option("--memory", a.memory,
                              "device memory budget, e.g. 16GB or 11.5GiB (default: the device's)")
                  ->check(non_empty());
  auto* frac = app->add_option("--memory-fraction", a.memory_fraction,
                               "budget as a fraction of the graph's peak live bytes")
                   ->check(number_in(1e-6, 1e6));
  mem->excludes(frac);
  app->add_option("--host-memory", a.host_memory,
                  "host memory budget for what leaves the device, e.g. 64GiB (default: "
                  "unlimited); what does not fit goes to the device profile's NVMe tier (Note "
                  "[Host tier], docs/devices.md)")
      ->check(non_empty());
  app->add_option("--host-policy", a.host_policy,
                  "with --host-memory: which host slots go to NVMe first: least-stall (those whose "
                  "slower copies would stall least per byte, from a simulation), fewest-copies "
                  "(copied least often per byte) or first-evicted (host memory kept in the order "
                  "tensors first leave the device, the rest to NVMe: the static baseline; Note "
                  "[Host tier])")
      ->check(CLI::IsMember({"least-stall", "fewest-copies", "first-evicted"}))
      ->capture_default_str();
  app->add_option(
         "--time-budget", a.time_budget_s,
         fmt::format("search time in seconds, at most {:g} (default 10 s)", kMaxTimeBudgetS))
      ->check(number_in(0, kMaxTimeBudgetS));
  app->add_option("--evaluations", a.evaluations, "stop the search after N evaluations")
      ->check(integer_in(0, std::numeric_limits<int64_t>::max()));
  app->add_option("--threads", a.threads, "search threads (default: all cores)")
      ->check(integer_in(0, kMaxThreads));
  app->add_option("--seed", a.seed, "search seed, 0 to 2^64-1")
      ->check(seed_value())
      ->capture_default_str();
  app->add_option("--compute-scale", a.compute_scale,
                  "multiply every op time by this factor (calibrate the cost model to a measured "
                  "iteration time)")
      ->check(number_in(1e-6, 1e6));
  app->add_option("--copy-order", a.copy_order,
                  "order of the search's copies on each link: deadline, or release (as "
                  "before; Note [Copy order])")
      ->check(CLI::IsMember({"deadline", "release"}))
      ->capture_default_str();
  app->add_option("--allocator", a.allocator,
                  "device memory: arena (planned offsets in one arena) or size-class (the "
                  "paper's pool)")
      ->check(CLI::IsMember({"arena", "size-class"}))
      ->capture_default_str();
  app->add_option("--arena-layout", a.arena_layout,
                  "with --allocator arena: placed (offsets chosen as the swaps are planned) or "
                  "packed (bytes counted, offsets packed afterwards; Note [Arena planning])")
      ->check(CLI::IsMember({"placed", "packed"}))
      ->capture_default_str();
  app->add_flag("--no-recompute", a.no_recompute,
                "plan swaps only: never drop a tensor to run its op again (Note [Recomputation])");
  app->add_option("--local-moves", a.local_moves,
                  "the search's share of children that are its best plan with one change where "
                  "it stalls (Note [Stall-guided moves]); 0: crossover and mutation only")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app->add_option("--islands", a.islands,
                  "search N populations side by side, each migrating its best to the next "
                  "every few generations (Note [Islands]); the plan depends on the seed, N and "
                  "--evaluations, not on --threads. Under mpirun -np P: 1 (the default) shares "
                  "one population's evaluations among the P processes (Note [Shared "
                  "evaluations]), P searches one island a process")
      ->check(integer_in(1, 1024))
      ->capture_default_str();
  app->add_option("--data-parallel", a.data_parallel,
                  "plan one rank of N training data-parallel: gradients all-reduced on the "
                  "device's collective link, host links shared (docs/devices.md)")
      ->check(integer_in(1, kMaxRanks))
      ->capture_default_str();
  app->add_flag("--shard-optimizer", a.shard_optimizer,
                "with --data-parallel: shard the optimizer state and its update across the "
                "ranks (ZeRO stage 1), all-gathering the updated parameters");
  app->add_flag("--allow-any-budget", a.any_budget,
                "plan a budget over the device's memory, or a --memory-fraction over 1, on "
                "purpose (for studies); refused otherwise");
  app->add_flag("--quiet", a.quiet, "no progress line on stderr");
  app->add_flag("--json", a.json, "print one JSON object");
}

}  // namespace sa::cli
