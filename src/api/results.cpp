#include "api/results.h"

#include "plan/data_parallel.h"
#include "plan/host_tier.h"
#include "plan/stalls.h"

namespace sa::api {

namespace {

// Note [Host tier]: what the plan keeps in host memory and on NVMe, and what
// crosses the NVMe link. Every plan has the host figure; the rest only with
// a host budget.
void add_host_fields(const Graph& g, const Plan& p, const SimResult& s, nlohmann::json* j) {
  const HostUse u = host_use(g, p);
  (*j)["host_bytes"] = u.total();
  if (p.host_budget <= 0) return;
  j->update({{"host_budget_bytes", p.host_budget},
             {"nvme_tensors", p.nvme_tensors.size()},
             {"nvme_bytes", u.nvme_bytes},
             {"nvme_read_bytes", s.nvme_read_bytes},
             {"nvme_write_bytes", s.nvme_write_bytes}});
}

}  // namespace

nlohmann::json plan_json(const PlanningInputs& in, const Problem& problem, const MethodResult& r) {
  const SimResult& s = r.sim;
  const StallReport stalls = attribute_stalls(in.graph, r.plan, s.timeline);
  nlohmann::json j = sim_result_json(s);
  j.update({{"method", r.name},
            {"ideal_us", problem.ideal_us},
            {"throughput_vs_ideal", problem.ideal_us / s.iteration_us},
            {"recompute_steps", plan_traffic(in.graph, r.plan).recomputes},
            {"stall_causes", stall_causes_json(stalls)},
            {"allocator", std::string(to_string(r.plan.allocator))},
            {"arena_bytes", r.plan.arena_bytes()},
            {"pool_bytes", r.plan.arena_bytes()},
            {"memory_budget_bytes", in.budget},
            {"search_seconds", r.planning_seconds},
            {"evaluations", r.evaluations}});
  add_host_fields(in.graph, r.plan, s, &j);
  if (const nlohmann::json m = method_result_json(r); m.contains("search"))
    j["search"] = m["search"];
  if (in.batch) j["samples_per_s"] = *in.batch / (s.iteration_us * 1e-6);
  if (in.dp.active()) {
    j["data_parallel"] = {{"ranks", in.dp.ranks},
                          {"shard_optimizer", in.dp.shard_optimizer},
                          {"collective_us", s.collective_us},
                          {"collective_exposed_us",
                           exposed_collective_us(in.graph, r.plan, problem.op_us, in.device)}};
    if (in.batch)
      j["samples_per_s_total"] = static_cast<double>(in.dp.ranks) * static_cast<double>(*in.batch) /
                                 (s.iteration_us * 1e-6);
  }
  return j;
}

Comparison compare_methods(const PlanningInputs& in, const Problem& problem,
                           const MethodOptions& options) {
  Comparison c;
  c.results = run_methods(problem, options);
  const std::vector<OpId> program = program_order(in.graph.num_ops());
  const MethodResult& searched = c.results.front();
  const std::span<const OpId> order = searched.feasible ? searched.plan.order : program;
  auto bound = [&](std::span<const OpId> o, bool recompute) {
    return time_bound(in.graph, o, problem.op_us, in.device, in.budget, recompute,
                      problem.host_budget);
  };
  c.program_bound = bound(program, false);
  c.search_bound = bound(order, false);
  c.program_recompute_bound = bound(program, true);
  c.search_recompute_bound = bound(order, true);
  return c;
}

nlohmann::json compare_json(const PlanningInputs& in, const Problem& problem, const Comparison& c) {
  nlohmann::json methods = nlohmann::json::array();
  for (const auto& r : c.results) {
    nlohmann::json j = method_result_json(r);
    if (r.feasible) {
      j["throughput_vs_ideal"] = problem.ideal_us / r.sim.iteration_us;
      add_host_fields(in.graph, r.plan, r.sim, &j);
      if (in.batch) j["samples_per_s"] = *in.batch / (r.sim.iteration_us * 1e-6);
    }
    methods.push_back(j);
  }
  return {{"graph", in.graph.name},
          {"device", in.device.name},
          {"memory_budget_bytes", in.budget},
          {"ideal_us", problem.ideal_us},
          {"bound_program_order_us", c.program_bound.bound_us()},
          {"bound_search_order_us", c.search_bound.bound_us()},
          {"bound_recompute_program_order_us", c.program_recompute_bound.bound_us()},
          {"bound_recompute_search_order_us", c.search_recompute_bound.bound_us()},
          {"methods", methods}};
}

double share_of(int64_t budget, int64_t peak) {
  return peak > 0 ? static_cast<double>(budget) / static_cast<double>(peak) : 0;
}

SweepSetup prepare_sweep(SweepArgs args) {
  if (args.planning.time_budget_s == 0 && args.planning.evaluations == 0)
    args.planning.time_budget_s = 5;  // per point
  // The sweep chooses the budgets: a placeholder over any device's memory;
  // over the host budget, the device budget is the arguments'.
  SweepSetup s{args.over_host ? load_planning_inputs(args.planning)
                              : load_planning_inputs(args.planning, std::nullopt, int64_t{1} << 62),
               {}};
  if (args.over_host)
    s.options.device_budget = s.in.budget;
  else
    s.options.host_budget = s.in.host_budget;
  s.options.points = args.points;
  if (args.target > 0) s.options.target = args.target;
  s.options.compute_scale = args.planning.compute_scale;
  s.options.method = method_options(args.planning);
  s.options.method.search.progress = nullptr;  // the sweep's own line per point instead
  return s;
}

namespace {

nlohmann::json point_json(const SweepPoint& p, int64_t peak) {
  nlohmann::json j = {{"budget_bytes", p.budget},
                      {"fraction_of_peak", share_of(p.budget, peak)},
                      {"feasible", p.feasible}};
  if (!p.feasible) {
    j["why"] = p.why;
    return j;
  }
  j["iteration_us"] = p.iteration_us;
  j["throughput_vs_ideal"] = p.throughput;
  j["swap_in_bytes"] = p.swap_in_bytes;
  j["swap_out_bytes"] = p.swap_out_bytes;
  j["search_seconds"] = p.search_seconds;
  return j;
}

}  // namespace

nlohmann::json sweep_json(const PlanningInputs& in, const SweepOptions& o, const SweepResult& r) {
  nlohmann::json points = nlohmann::json::array();
  for (const SweepPoint& p : r.points)
    points.push_back(point_json(p, r.over_host ? r.host_need : r.peak_live));
  nlohmann::json j = {{"graph", in.graph.name},
                      {"device", in.device.name},
                      {"allocator", std::string(to_string(o.method.allocator))},
                      {"ideal_us", r.ideal_us},
                      {"peak_live_bytes", r.peak_live},
                      {"largest_op_bytes", r.largest_op},
                      {"min_budget_bytes", r.min_budget},
                      {"no_swap_floor_bytes", r.no_swap_floor},
                      {"no_swap_floor_order", r.floor_order},
                      {"points", points},
                      {"over", r.over_host ? "host" : "device"}};
  if (r.over_host) {  // the points' budgets are host budgets; fraction_of_peak is of host_need
    j["device_budget_bytes"] = in.budget;
    j["host_need_bytes"] = r.host_need;
  }
  if (r.target) {
    j["target"] = *r.target;
    j["target_budget_bytes"] =
        r.target_budget ? nlohmann::json(*r.target_budget) : nlohmann::json(nullptr);
  }
  return j;
}

nlohmann::json verify_json(const Graph& g, const Plan& p, const std::string& source) {
  const PlanTraffic t = plan_traffic(g, p);
  return {{"valid", true},
          {"graph", g.name.empty() ? source : g.name},
          {"ranks", p.data_parallel.ranks},
          {"steps", p.num_steps()},
          {"ops", g.num_ops()},
          {"swap_ins", t.swap_ins},
          {"swap_outs", t.swap_outs},
          {"drops", t.drops},
          {"recomputes", t.recomputes},
          {"allocator", std::string(to_string(p.allocator))},
          {"arena_bytes", p.arena_bytes()},
          {"memory_budget_bytes", p.memory_budget}};
}

}  // namespace sa::api
