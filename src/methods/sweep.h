#pragma once
// The budget sweep: % of ideal against the memory budget, from the smallest
// budget a plan fits in up to the graph's peak live bytes, and the smallest
// budget that keeps a target share of ideal.
//
//   sa::SweepOptions o;  o.points = 10;  o.target = 0.9;  o.method.search.time_budget_s = 5;
//   sa::SweepResult r = sa::sweep(g, device, o);
//   // r.points[k].budget, r.points[k].throughput ...; r.target_budget
//
// Note [Budget sweep]
// -------------------
// The points are spaced evenly from the smallest feasible budget to the
// peak live bytes in program order: the smallest feasible budget is the
// largest op's footprint (no plan fits in less), or, for the size-class
// pool, the pool's minimum (min_pool_classes), whichever the allocator
// needs. Each point is one search (methods/methods.h, "swapadvisor") with
// the given options. With a target (a share of ideal, e.g. 0.9), the two
// neighbouring points that bracket it are bisected (target_steps more
// searches) and the smallest budget found to reach it is reported; the
// share of ideal is not monotone in the budget for a heuristic search, so
// this is the smallest budget *found*, as a user would find it by hand.
// The no-swap floor (search/no_swap.h) is reported beside the points.
//
// Over the host budget (SweepOptions::device_budget set; Note [Host tier]
// in plan/host_tier.h): the device budget stays, and the points are host
// budgets spaced evenly from need / points up to `need`, the host memory
// the search's plan takes at that device budget with no host limit
// (SweepResult::host_need); the target is bisected the same way. What does
// not fit a point's host budget goes to the profile's NVMe tier, or the
// point has no plan.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cost/device.h"
#include "graph/graph.h"
#include "methods/methods.h"

namespace sa {

struct SweepPoint {
  int64_t budget = 0;
  bool feasible = false;
  std::string why;          // when infeasible
  double iteration_us = 0;  // when feasible
  double throughput = 0;    // ideal_us / iteration_us
  int64_t swap_in_bytes = 0;
  int64_t swap_out_bytes = 0;
  double search_seconds = 0;
};

struct SweepResult {
  double ideal_us = 0;
  int64_t peak_live = 0;           // peak live bytes in program order
  int64_t min_budget = 0;          // the smallest feasible budget (Note [Budget sweep])
  int64_t largest_op = 0;          // the largest op's footprint
  int64_t no_swap_floor = 0;       // Note [No-swap floor]
  std::string floor_order;         // the order that gives it
  std::vector<SweepPoint> points;  // evenly spaced, then the bisection's, by budget
  std::optional<double> target;
  std::optional<int64_t> target_budget;  // the smallest budget found to reach the target
  // Over the host budget: the points' budgets are host budgets, up to this.
  bool over_host = false;
  int64_t host_need = 0;
};

struct SweepOptions {
  int points = 10;
  std::optional<double> target;  // a share of ideal in (0, 1]
  int target_steps = 4;          // bisection searches for the target
  double compute_scale = 1;
  MethodOptions method;  // the search's options and the allocator
  // Set: sweep the host budget at this device budget (Note [Budget sweep]).
  std::optional<int64_t> device_budget;
  int64_t host_budget = 0;  // over the device budget: every point's (0: unlimited)
  // Called after every search (for a progress line): the point, and how
  // many of how many searches have run (the bisection's count is a guess).
  std::function<void(const SweepPoint&, int done, int total)> progress;
};

// A share of ideal as a percent with one decimal, rounded down ("89.9" for
// 0.89998), so that a point under a target never reads as reaching it.
std::string percent_floor(double share);

// REQUIRES: validate_graph(g) passed. Throws sa::Error on bad options.
SweepResult sweep(const Graph& g, const DeviceProfile& device, const SweepOptions& options);

}  // namespace sa
