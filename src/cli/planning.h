#pragma once
// What plan, compare and report share: the graph, device and budget options,
// the search options, and running one method by name.

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "baselines/baselines.h"
#include "cli/common.h"
#include "plan/problem.h"
#include "search/ga.h"

namespace sa::cli {

// The longest --time-budget: 10^6 s (11.6 days).
inline constexpr double kMaxTimeBudgetS = 1e6;

struct PlanningArgs {
  GraphSource source;
  std::string device = "v100-16gb";
  std::string memory;          // --memory SIZE
  double memory_fraction = 0;  // --memory-fraction F
  double time_budget_s = 0;
  int64_t evaluations = 0;
  int threads = 0;  // 0: all hardware threads
  uint64_t seed = 1;
  double compute_scale = 1;             // multiplies every op time
  std::string copy_order = "deadline";  // or "release" (PlannerOptions::deadline_copy_order)
  bool quiet = false;
  bool json = false;

  void add_options(CLI::App* app);
};

// The graph, device and budget of a planning command, checked: a budget
// below what some op touches at once is an error naming the op.
struct PlanningInputs {
  Graph graph;
  DeviceProfile device;
  int64_t budget = 0;
  int64_t peak_live = 0;
  std::optional<int> batch;  // samples per iteration, when known
};
PlanningInputs load_planning_inputs(const PlanningArgs& args);

SearchOptions search_options(const PlanningArgs& args);

// "swapadvisor" (the search) or a baseline name.
MethodResult run_method(const std::string& name, const Problem& problem,
                        const SearchOptions& search);

// "2.88 GiB (50% of peak live 5.76 GiB)".
std::string describe_budget(const PlanningInputs& in);

}  // namespace sa::cli
