// methods/sweep.h (Note [Budget sweep]) on the 8-layer chain of
// baseline_test_util.h: where the points lie, what the target's bisection
// reports, and the options it refuses.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "baselines/baseline_test_util.h"
#include "cost/device.h"
#include "methods/sweep.h"
#include "plan/host_tier.h"
#include "plan/problem.h"
#include "test_util.h"

namespace sa {
namespace {

DeviceProfile sweep_link() {  // 1 B/us each way, 2 B/us together
  DeviceProfile d;
  d.h2d_gbps = 0.001;
  d.d2h_gbps = 0.001;
  d.duplex_gbps = 0.002;
  return d;
}

SweepOptions quick_sweep(int points) {
  SweepOptions o;
  o.points = points;
  o.method.search.max_evaluations = 16;
  o.method.search.threads = 1;
  return o;
}

// The chain (every tensor 100 B, 24 ops of 1 us): its largest op touches
// 500 B (b8), its peak live bytes in program order are 1900 B (at b8). With
// planned offsets the smallest feasible budget is the largest op's, so 3
// points lie at 500, 1200 and 1900 B; every one plans, and progress is told
// after each search.
TEST(Sweep, PointsRunEvenlyFromTheLargestOpToThePeak) {
  const testing::Chain c = testing::chain_graph(8);
  const DeviceProfile dev = sweep_link();
  SweepOptions o = quick_sweep(3);
  std::vector<std::pair<int64_t, int>> told;
  o.progress = [&](const SweepPoint& p, int done, int total) {
    EXPECT_EQ(total, 3);
    told.push_back({p.budget, done});
  };
  const SweepResult r = sweep(c.g, dev, o);
  EXPECT_EQ(r.largest_op, 500);
  EXPECT_EQ(r.min_budget, 500);
  EXPECT_EQ(r.peak_live, 1900);
  EXPECT_EQ(r.ideal_us, 24);
  ASSERT_EQ(r.points.size(), 3u);
  EXPECT_EQ(r.points[0].budget, 500);
  EXPECT_EQ(r.points[1].budget, 1200);
  EXPECT_EQ(r.points[2].budget, 1900);
  EXPECT_EQ(told, (std::vector<std::pair<int64_t, int>>{{500, 1}, {1200, 2}, {1900, 3}}));
  for (const SweepPoint& p : r.points) {
    SCOPED_TRACE(p.budget);
    EXPECT_TRUE(p.feasible) << p.why;
    // x's copy in (100 us) alone keeps every point below ideal.
    EXPECT_GE(p.iteration_us, 124);
    EXPECT_DOUBLE_EQ(p.throughput, 24 / p.iteration_us);
  }
  EXPECT_FALSE(r.target.has_value());
  EXPECT_FALSE(r.target_budget.has_value());
}

// With a target, the two points around the first that reaches it are
// bisected (target_steps more searches), and the smallest budget found to
// reach it is reported; the points stay sorted by budget. The target here
// is 126 us (24 / 126 of ideal): x's copy and two recomputes, what
// checkpoint reaches at 1700 B. Of the 3 points only 1900 B reaches it
// (the searches find 2410 us at 500 B, 1312 us at 1200 B), so the
// bisection tries (1200 + 1900) / 2 = 1550 B (128 us: short of it) and then
// (1550 + 1900) / 2 = 1725 B, which reaches it.
TEST(Sweep, TheTargetIsBisectedBetweenTheNeighbouringPoints) {
  const testing::Chain c = testing::chain_graph(8);
  const DeviceProfile dev = sweep_link();
  SweepOptions o = quick_sweep(3);
  o.target = 24.0 / 126;
  o.target_steps = 2;
  const SweepResult r = sweep(c.g, dev, o);
  EXPECT_EQ(r.target, o.target);
  EXPECT_EQ(r.target_budget, 1725);
  std::vector<int64_t> budgets;
  std::vector<double> times;
  for (const SweepPoint& p : r.points) {
    budgets.push_back(p.budget);
    times.push_back(p.iteration_us);
  }
  EXPECT_EQ(budgets, (std::vector<int64_t>{500, 1200, 1550, 1725, 1900}));
  EXPECT_EQ(times[2], 128);
  EXPECT_EQ(times[3], 126);
  EXPECT_EQ(times[4], 124);
}

TEST(Sweep, RefusesFewerThanTwoPointsAndATargetOutsideZeroToOne) {
  const testing::Chain c = testing::chain_graph(2);
  const DeviceProfile dev = sweep_link();
  EXPECT_EQ(testing::error_of([&] { sweep(c.g, dev, quick_sweep(1)); }),
            "sweep: --points must be at least 2, not 1");
  for (double bad : {0.0, 1.5, -0.5}) {
    SweepOptions o = quick_sweep(2);
    o.target = bad;
    EXPECT_EQ(testing::error_of([&] { sweep(c.g, dev, o); }),
              fmt::format("--target {}: a fraction in (0, 1], e.g. 0.9 for 90%", bad));
  }
}

// Over the host budget (Note [Budget sweep]): at a device budget of 800 B
// the search's plan takes host_need bytes of host memory without a limit;
// the points run from need / 3 up to the need, and the last one plans as
// the unlimited search does. Points below it either plan with NVMe tensors
// or say why not (here the staging buffers, 4 x 4096 B, do not fit beside
// what stays: these tensors are too small for NVMe to pay).
TEST(Sweep, OverTheHostBudgetRunsUpToWhatThePlanNeeds) {
  const testing::Chain c = testing::chain_graph(8);
  DeviceProfile dev = sweep_link();
  dev.nvme_read_gbps = 0.0005;
  dev.nvme_write_gbps = 0.0005;
  SweepOptions o = quick_sweep(3);
  o.device_budget = 800;
  const SweepResult r = sweep(c.g, dev, o);
  EXPECT_TRUE(r.over_host);
  const Problem unlimited(c.g, dev, 800);
  const MethodResult m = run_method("swapadvisor", unlimited, o.method);
  ASSERT_TRUE(m.feasible) << m.why;
  EXPECT_EQ(r.host_need, host_use(c.g, m.plan).total());
  ASSERT_GT(r.host_need, 0);
  const int64_t lo = r.host_need / 3;
  ASSERT_EQ(r.points.size(), 3u);
  EXPECT_EQ(r.points[0].budget, lo);
  EXPECT_EQ(r.points[1].budget, lo + (r.host_need - lo + 1) / 2);
  EXPECT_EQ(r.points[2].budget, r.host_need);
  EXPECT_TRUE(r.points[2].feasible) << r.points[2].why;
  EXPECT_EQ(r.points[2].iteration_us, m.sim.iteration_us);
  for (const SweepPoint& pt : r.points)
    if (!pt.feasible) EXPECT_NE(pt.why.find("staging"), std::string::npos) << pt.why;
}

}  // namespace
}  // namespace sa
