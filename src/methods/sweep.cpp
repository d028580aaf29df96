#include "methods/sweep.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "graph/stats.h"
#include "plan/allocation.h"
#include "plan/host_tier.h"
#include "plan/problem.h"
#include "search/no_swap.h"
#include "util/error.h"
#include "util/units.h"

namespace sa {
namespace {

// The smallest pool of the size classes that min_pool_classes() finds.
int64_t min_pool_bytes(const Graph& g, const SizeTable& t) {
  const std::vector<ClassId> cls = min_pool_classes(g, t);
  const std::vector<int32_t> cnt = min_counts(g, t, cls);
  const std::vector<int64_t> bytes = class_bytes(t, cls);
  int64_t sum = 0;
  for (size_t c = 0; c < cnt.size(); ++c)
    sum += cnt[c] * bytes[c];
  return sum;
}

}  // namespace

std::string percent_floor(double share) {
  // The nearest tenth first when within rounding error of it, so that 0.9
  // (899.9999... tenths in binary) reads 90.0, not 89.9.
  const double tenths = share * 1000;
  const double near = std::round(tenths);
  const double shown = std::abs(tenths - near) < 1e-6 ? near : std::floor(tenths);
  return fmt::format("{:.1f}", shown / 10);
}

SweepResult sweep(const Graph& g, const DeviceProfile& device, const SweepOptions& o) {
  if (o.points < 2)
    throw Error(fmt::format("sweep: --points must be at least 2, not {}", o.points));
  if (o.target && !(*o.target > 0 && *o.target <= 1))
    throw Error(fmt::format("--target {}: a fraction in (0, 1], e.g. 0.9 for 90%", *o.target));
  SweepResult r;
  r.peak_live = peak_live_bytes(g);
  r.largest_op = min_budget(g);
  {
    const Problem at_peak(g, device, std::max<int64_t>(r.peak_live, 1), o.compute_scale);
    r.ideal_us = at_peak.ideal_us;
    const NoSwapFloor floor = no_swap_floor(at_peak);
    r.no_swap_floor = floor.bytes;
    r.floor_order = floor.order_name;
    r.min_budget = o.method.allocator == Allocator::kArena
                       ? r.largest_op
                       : std::max(r.largest_op, min_pool_bytes(g, at_peak.sizes));
  }
  int64_t lo = r.min_budget;
  int64_t hi = std::max(lo, r.peak_live);
  if (o.device_budget) {  // Note [Budget sweep]: over the host budget
    const Problem unlimited(g, device, *o.device_budget, o.compute_scale);
    const MethodResult m = run_method("swapadvisor", unlimited, o.method);
    if (!m.feasible)
      throw Error(fmt::format("sweep: no plan at the device budget of {}: {}",
                              format_bytes(*o.device_budget), m.why));
    r.over_host = true;
    r.host_need = host_use(g, m.plan).total();
    if (r.host_need == 0)
      throw Error(fmt::format(
          "sweep: at the device budget of {} the plan keeps nothing in host memory: there is no "
          "host budget to sweep",
          format_bytes(*o.device_budget)));
    hi = r.host_need;
    lo = std::max<int64_t>(1, hi / o.points);
  }
  const int total = o.points + (o.target ? o.target_steps : 0);
  int done = 0;
  auto run = [&](int64_t budget) {
    SweepPoint p;
    p.budget = budget;
    const Problem pb(g, device, o.device_budget.value_or(budget), o.compute_scale, {},
                     o.device_budget ? budget : o.host_budget);
    try {
      const MethodResult m = run_method("swapadvisor", pb, o.method);
      p.feasible = m.feasible;
      p.why = m.why;
      p.iteration_us = m.sim.iteration_us;
      // An empty iteration (0 us, as is its ideal) runs at ideal, not 0/0.
      p.throughput = !m.feasible              ? 0
                     : m.sim.iteration_us > 0 ? pb.ideal_us / m.sim.iteration_us
                                              : 1;
      p.swap_in_bytes = m.sim.swap_in_bytes;
      p.swap_out_bytes = m.sim.swap_out_bytes;
      p.search_seconds = m.planning_seconds;
    } catch (const Error& e) {  // no plan at this budget
      p.why = e.what();
    }
    if (o.progress) o.progress(p, ++done, total);
    r.points.push_back(p);
    return p;
  };
  for (int k = 0; k < o.points; ++k) {
    const double f = static_cast<double>(k) / (o.points - 1);
    run(lo + static_cast<int64_t>(std::llround(f * static_cast<double>(hi - lo))));
  }
  if (o.target) {
    // The first point that reaches the target, and the one before it.
    auto reaches = [&](const SweepPoint& p) { return p.feasible && p.throughput >= *o.target; };
    int first = -1;
    for (int k = 0; k < static_cast<int>(r.points.size()); ++k)
      if (reaches(r.points[k])) {
        first = k;
        break;
      }
    if (first >= 0) {
      int64_t good = r.points[first].budget;
      int64_t bad = first > 0 ? r.points[first - 1].budget : good;
      for (int s = 0; s < o.target_steps && good - bad > 1; ++s) {
        const int64_t mid = bad + (good - bad) / 2;
        if (reaches(run(mid)))
          good = mid;
        else
          bad = mid;
      }
      r.target_budget = good;
    }
    r.target = o.target;
  }
  std::sort(r.points.begin(), r.points.end(),
            [](const SweepPoint& a, const SweepPoint& b) { return a.budget < b.budget; });
  return r;
}

}  // namespace sa
