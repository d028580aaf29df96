#pragma once
// A method: a way to plan one problem, by name. "swapadvisor" is the search
// (search/ga.h); the others are the baselines (baselines/baselines.h). Every
// method yields the same Plan type and is timed by the same simulator, so
// compare, report and the bench scripts run them all the same way:
//
//   sa::Problem pb(g, device, budget);
//   for (const std::string& name : sa::method_names()) {
//     sa::MethodResult r = sa::run_method(name, pb, options);
//     if (r.feasible) use(r.plan, r.sim);  // else r.why says why not
//   }

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/plan.h"
#include "plan/problem.h"
#include "plan/simulator.h"
#include "search/ga.h"

namespace sa {

struct MethodOptions {
  Allocator allocator = kDefaultAllocator;  // for the search and the baselines alike
  SearchOptions search;                     // for "swapadvisor"
};

struct MethodResult {
  std::string name;
  bool feasible = false;
  std::string why;  // when infeasible
  Plan plan;        // when feasible
  SimResult sim;    // when feasible; with timeline
  double planning_seconds = 0;
  int64_t evaluations = 0;  // plans simulated (1 for the baselines)
  // The search only: the baseline whose plan it returned, being faster than
  // every candidate it evaluated (Note [Search time] in search/ga.h).
  std::string from;
  // The search only (Note [Search time]): what its seeds took and gave.
  struct SearchStats {
    double seeds_seconds = 0;         // planning the seeds
    bool seeds_cut = false;           // the time budget ended among the seeds
    double best_seed_us = 0;          // the fastest seed's iteration time (inf: none planned)
    double longest_evaluation_s = 0;  // the slowest single evaluation
    int64_t repeats = 0;              // evaluations answered from the cache
    double seconds_to_95 = 0;         // SearchResult::seconds_to_95
  };
  std::optional<SearchStats> search;
};

// "swapadvisor", then the baselines: ideal, odswap, vdnn, swap-all, tflms,
// checkpoint, dtr.
std::vector<std::string> method_names();

// Plans and simulates (with a timeline) one method. Throws sa::Error for an
// unknown name, or when the budget is too small for the search.
MethodResult run_method(const std::string& name, const Problem& problem,
                        const MethodOptions& options);

// Every method of method_names(), in that order: the baselines first, then
// the search, which returns a baseline's plan (within the budget) where it
// found nothing faster, so that it is never behind one.
std::vector<MethodResult> run_methods(const Problem& problem, const MethodOptions& options);

// A simulated iteration as JSON, the keys every output of one shares
// (compare and plan --json, the report, the trace): iteration_us,
// compute_us, recompute_us, stall_us, swap_in_bytes, swap_out_bytes and
// peak_device_bytes (0 unless simulated with a timeline).
nlohmann::json sim_result_json(const SimResult& s);

// A method's result as JSON, the fields `compare --json` and the report
// share: name, feasible, and either why (infeasible) or the simulated
// iteration (sim_result_json, arena_bytes, allocator) with planning_seconds
// and evaluations, plan_from where the search returned a baseline's plan,
// and the search's seeds ("search": seeds_seconds, seeds_cut, best_seed_us,
// longest_evaluation_s). Callers add their own fields (throughput, samples/s, main).
nlohmann::json method_result_json(const MethodResult& r);

}  // namespace sa
