// Host memory and NVMe over an iteration (Note [Host memory over time]), by hand.
#include "report/host_memory.h"

#include <gtest/gtest.h>

#include "plan/host_tier.h"
#include "test_util.h"

namespace sa {
namespace {

using testing::add_step;
using testing::GraphBuilder;

// p (param, 100 B, home on the host: held all along), q (param, on the
// device all along: no slot), a (activation, 30 B: out [0, 10), in [30, 40)),
// o (optimizer state, 40 B, on the device at the start: out [10, 20), in
// [40, 50)). Slots take 128, 64 and 64 B (kHostSlotAlignment).
struct Case {
  GraphBuilder b;
  TensorId p, a, o;
  Plan pl;
  SimResult sim;
  Case() {
    p = b.tensor(100, TensorKind::kParam);
    const TensorId q = b.tensor(50, TensorKind::kParam);
    a = b.tensor(30, TensorKind::kActivation);
    o = b.tensor(40, TensorKind::kOptimizerState);
    pl.initial_resident = {{q, 0}, {o, 1}};
    add_step(pl, StepKind::kSwapOut, a, 2, {});
    add_step(pl, StepKind::kSwapOut, o, 1, {});
    add_step(pl, StepKind::kSwapIn, a, 2, {});
    add_step(pl, StepKind::kSwapIn, o, 1, {});
    sim.iteration_us = 60;
    sim.timeline = {{0, 10}, {10, 20}, {30, 40}, {40, 50}};
  }
};

void expect_points(const std::vector<HostMemoryPoint>& got,
                   const std::vector<HostMemoryPoint>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(got[i].time_us, want[i].time_us);
    EXPECT_EQ(got[i].host_bytes, want[i].host_bytes);
    EXPECT_EQ(got[i].nvme_bytes, want[i].nvme_bytes);
  }
}

TEST(HostMemoryOverTime, SlotsHoldValuesFromFirstOutToLastInByHand) {
  Case c;
  // 0: p + a; 10: + o; 40: a read back for the last time; 50: o too.
  expect_points(host_memory_over_time(c.b.g, c.pl, c.sim),
                {{0, 192, 0}, {10, 256, 0}, {40, 192, 0}, {50, 128, 0}});
  // Never above the arena the runtime reserves.
  EXPECT_EQ(host_use(c.b.g, c.pl).total(), 256);
}

TEST(HostMemoryOverTime, NvmeValuesAndTheStagingAreCountedApart) {
  Case c;
  c.pl.host_budget = 1 << 20;
  c.pl.nvme_tensors = {c.p};  // p's 100 B on NVMe; staging 4 x 4096 B held all along
  expect_points(
      host_memory_over_time(c.b.g, c.pl, c.sim),
      {{0, 16384 + 64, 100}, {10, 16384 + 128, 100}, {40, 16384 + 64, 100}, {50, 16384, 100}});
}

TEST(HostMemoryOverTime, NothingOnTheHostGivesNoPoints) {
  GraphBuilder b;
  const TensorId q = b.tensor(50, TensorKind::kParam);
  Plan pl;
  pl.initial_resident = {{q, 0}};
  EXPECT_TRUE(host_memory_over_time(b.g, pl, SimResult{}).empty());
}

}  // namespace
}  // namespace sa
