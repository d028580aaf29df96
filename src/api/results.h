#pragma once
// The --json objects of plan, compare, sweep and verify: the command line
// prints them, the Python module returns them, so the two cannot drift
// apart in their field names.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/planning.h"
#include "methods/methods.h"
#include "methods/sweep.h"
#include "plan/bounds.h"
#include "plan/problem.h"

namespace sa::api {

// `plan --json`: the method's simulated iteration, with the budget, the
// search's statistics and, for data-parallel plans, the collectives.
nlohmann::json plan_json(const PlanningInputs& in, const Problem& problem, const MethodResult& r);

// `compare`: every method (run_methods), and the lower bounds (plan/bounds.h)
// in program order and in the order the search chose: swap-only (Note
// [Transfer bound]) and whatever is recomputed (Note [Recompute bound]).
struct Comparison {
  std::vector<MethodResult> results;  // run_methods' order: the search first
  TimeBound program_bound;
  TimeBound search_bound;
  TimeBound program_recompute_bound;
  TimeBound search_recompute_bound;
};
Comparison compare_methods(const PlanningInputs& in, const Problem& problem,
                           const MethodOptions& options);
nlohmann::json compare_json(const PlanningInputs& in, const Problem& problem, const Comparison& c);

// `sweep`: the arguments' defaults applied (5 s of search per point), the
// inputs loaded and the sweep's options; the caller adds a progress line.
struct SweepArgs {
  PlanningArgs planning;
  int points = 10;
  double target = 0;       // 0: none
  bool over_host = false;  // --over host: the host budget at the given device budget
};
struct SweepSetup {
  PlanningInputs in;
  SweepOptions options;
};
SweepSetup prepare_sweep(SweepArgs args);
nlohmann::json sweep_json(const PlanningInputs& in, const SweepOptions& o, const SweepResult& r);
// budget / peak, 0 for an empty graph (no bytes live at all), not NaN.
double share_of(int64_t budget, int64_t peak);

// `verify --json`: a plan that passed the verifier (plan/verify.h), what it
// does and the graph it plans (`graph`: the graph's name, else `source`).
nlohmann::json verify_json(const Graph& g, const Plan& p, const std::string& source);

}  // namespace sa::api
