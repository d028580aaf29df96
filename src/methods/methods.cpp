#include "methods/methods.h"

#include <chrono>
#include <cmath>

#include "baselines/baselines.h"
#include "util/error.h"

namespace sa {

std::vector<std::string> method_names() {
  std::vector<std::string> names = {"swapadvisor"};
  for (const std::string& b : baseline_names())
    names.push_back(b);
  return names;
}

MethodResult run_method(const std::string& name, const Problem& problem,
                        const MethodOptions& options) {
  MethodResult r;
  r.name = name;
  if (name == "swapadvisor") {
    SearchOptions so = options.search;
    so.allocator = options.allocator;
    SearchResult s = search(problem, so);
    r.feasible = true;
    r.plan = std::move(s.plan);
    r.sim = std::move(s.sim);
    r.planning_seconds = s.seconds;
    r.evaluations = s.evaluations;
    r.from = std::move(s.from);
    r.search = MethodResult::SearchStats{s.seeds_seconds,        s.seeds_cut, s.best_seed_us,
                                         s.longest_evaluation_s, s.repeats,   s.seconds_to_95};
    return r;
  }
  const auto start = std::chrono::steady_clock::now();
  BaselinePlan b = plan_baseline(name, problem, options.allocator);
  if (!b.feasible) {
    r.why = std::move(b.why);
    return r;
  }
  r.feasible = true;
  r.plan = std::move(b.plan);
  r.plan.method = name;
  Simulator sim;
  r.sim = sim.run(problem.graph, r.plan, problem.op_us, problem.device, {.record_timeline = true});
  SA_CHECK(r.sim.ok, "{} plan does not simulate: {}", name, r.sim.error);
  r.evaluations = 1;
  r.planning_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::vector<MethodResult> run_methods(const Problem& problem, const MethodOptions& options) {
  std::vector<MethodResult> results(1);
  for (const std::string& name : baseline_names())
    results.push_back(run_method(name, problem, options));
  MethodOptions o = options;
  for (const MethodResult& r : results)
    // "ideal" ignores the budget; a plan over the budget is no answer to it.
    if (r.feasible && r.name != "ideal" && r.plan.arena_bytes() <= problem.budget)
      o.search.plans.push_back({r.name, &r.plan, r.sim.iteration_us});
  results[0] = run_method("swapadvisor", problem, o);
  return results;
}

nlohmann::json sim_result_json(const SimResult& s) {
  return {{"iteration_us", s.iteration_us},          {"compute_us", s.compute_us},
          {"recompute_us", s.recompute_us},          {"stall_us", s.stall_us},
          {"swap_in_bytes", s.swap_in_bytes},        {"swap_out_bytes", s.swap_out_bytes},
          {"peak_device_bytes", s.peak_device_bytes}};
}

nlohmann::json method_result_json(const MethodResult& r) {
  nlohmann::json j = {{"name", r.name}, {"feasible", r.feasible}};
  if (!r.feasible) {
    j["why"] = r.why;
    return j;
  }
  j.update(sim_result_json(r.sim));
  j["allocator"] = std::string(to_string(r.plan.allocator));
  j["arena_bytes"] = r.plan.arena_bytes();
  j["pool_bytes"] = r.plan.arena_bytes();  // the name before planned offsets (kept for scripts)
  j["planning_seconds"] = r.planning_seconds;
  j["evaluations"] = r.evaluations;
  if (!r.from.empty()) j["plan_from"] = r.from;
  if (r.search) {
    j["search"] = {{"seeds_seconds", r.search->seeds_seconds},
                   {"seeds_cut", r.search->seeds_cut},
                   {"longest_evaluation_s", r.search->longest_evaluation_s},
                   {"repeats", r.search->repeats},
                   {"time_to_95_s", r.search->seconds_to_95}};
    // JSON has no infinity: a search none of whose seeds planned has none.
    if (std::isfinite(r.search->best_seed_us)) j["search"]["best_seed_us"] = r.search->best_seed_us;
  }
  return j;
}

}  // namespace sa
