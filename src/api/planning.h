#pragma once
// What plan, compare, sweep and report share: the graph, device and budget
// arguments, the search arguments, and the problem they give. The command
// line fills PlanningArgs from its options (cli/planning.h), the Python
// module from keyword arguments (python/), so both plan the same problem.

#include <cstdint>
#include <optional>
#include <string>

#include "api/source.h"
#include "methods/methods.h"
#include "plan/data_parallel.h"
#include "plan/problem.h"
#include "search/ga.h"

namespace sa::api {

// The longest --time-budget: 10^6 s (11.6 days).
inline constexpr double kMaxTimeBudgetS = 1e6;

struct PlanningArgs {
  GraphSource source;
  std::string device = "v100-16gb";
  std::string memory;       // --memory SIZE
  std::string host_memory;  // --host-memory SIZE (Note [Host tier]); empty: unlimited
  std::string host_policy = "least-stall";  // or fewest-copies, first-evicted (HostTierPolicy)
  double memory_fraction = 0;               // --memory-fraction F
  double time_budget_s = 0;
  int64_t evaluations = 0;
  int threads = 0;  // 0: all hardware threads
  uint64_t seed = 1;
  double compute_scale = 1;             // multiplies every op time
  std::string copy_order = "deadline";  // or "release" (PlannerOptions::deadline_copy_order)
  std::string allocator{to_string(kDefaultAllocator)};  // "arena" or "size-class"
  std::string arena_layout = "placed";                  // or "packed" (MemoryLayout)
  bool no_recompute = false;                            // swap-only plans (Note [Recompute genes])
  double local_moves = SearchOptions{}.local_share;     // Note [Stall-guided moves]
  int islands = 1;                                      // Note [Islands]
  int data_parallel = 1;                                // ranks (Note [Data parallelism ...])
  bool shard_optimizer = false;                         // ZeRO-1 across the ranks
  bool any_budget = false;  // --allow-any-budget: over the device's memory or the peak (studies)
  bool quiet = false;
  bool json = false;
};

// The graph, device and budget of a planning command, checked: a budget
// below what some op touches at once is an error naming the op.
struct PlanningInputs {
  Graph graph;
  DeviceProfile device;
  int64_t budget = 0;
  int64_t peak_live = 0;
  int64_t host_budget = 0;  // --host-memory (Note [Host tier]); 0: unlimited
  std::optional<int64_t>
      batch;        // samples per iteration of one rank, when known (an input's shape[0])
  DataParallel dp;  // what the graph and device are one rank of
};
// With a graph already loaded (it is taken), or a budget given (a plan's),
// those are used instead of the arguments'. With --data-parallel N the graph
// is one rank's (data_parallel_graph; a graph given is taken as one already)
// and the device one rank's view (rank_device: shared host links).
PlanningInputs load_planning_inputs(const PlanningArgs& args, std::optional<Graph> graph = {},
                                    std::optional<int64_t> budget = {});

// The allocator and the search options the arguments give.
MethodOptions method_options(const PlanningArgs& args);

// "2.88 GiB (50% of peak live 5.76 GiB)".
std::string describe_budget(const PlanningInputs& in);

}  // namespace sa::api
