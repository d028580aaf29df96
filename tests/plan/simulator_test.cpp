// Simulator tests with unit costs: 1 byte per microsecond each way alone,
// 1.5 bytes per microsecond in total when both directions run (each 0.75).

#include <gtest/gtest.h>

#include "plan/simulator.h"
#include "test_util.h"

namespace sa {
namespace {

using testing::GraphBuilder;

DeviceProfile unit_link() {
  DeviceProfile d;
  d.h2d_gbps = 0.001;  // 1 B/us
  d.d2h_gbps = 0.001;  // 1 B/us
  d.duplex_gbps = 0.0015;
  return d;
}

constexpr auto add = testing::add_step;

// Tensors: t0 (12 B), t1 (12 B). Ops: op0 (10 us), op1 (5 us).
//   step0 compute op0          [0, 10)
//   step1 swap_out t0  wait 0   d2h [10, ...)
//   step2 swap_in t1            h2d [0, 12)  alone until 10, then shares
//   step3 compute op1  wait 2
// h2d alone 0..10 moves 10 B; from 10 both run at 0.75 B/us: t1's last 2 B
// take 2/0.75 = 2.667 us → t1 done at 12.667. d2h: 0.75 B/us until 12.667
// (2 B moved), then 1 B/us for the last 10 B → done at 22.667.
// op1 runs [12.667, 17.667): stall = 12.667 - 10 = 2.667.
//
//   time →    0          10   12.7     17.7      22.7
//   compute   [== op0 ==]     [= op1 =]
//   h2d       [====== t1 =====]
//   d2h                  [======== t0 ===========]
TEST(Simulator, DuplexSharingByHand) {
  GraphBuilder b;
  b.tensor(12, TensorKind::kParam);
  b.tensor(12, TensorKind::kParam);
  b.op({}, {}, {}, 10);
  b.op({}, {}, {}, 5);
  Plan p;
  add(p, StepKind::kCompute, 0, kNoObject, {});
  add(p, StepKind::kSwapOut, 0, 0, {0});
  add(p, StepKind::kSwapIn, 1, 1, {});
  add(p, StepKind::kCompute, 1, kNoObject, {2});
  p.pool.class_bytes = {12};
  p.pool.class_count = {2};
  p.layout_pool();
  p.access_begin = {0, 0, 0};
  const std::vector<double> times{10, 5};
  Simulator sim;
  SimResult r = sim.run(b.g, p, times, unit_link(), {true});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NEAR(r.timeline[2].end_us, 12 + 2.0 / 3, 1e-9);
  EXPECT_NEAR(r.timeline[3].start_us, 12 + 2.0 / 3, 1e-9);
  EXPECT_NEAR(r.timeline[1].end_us, 22 + 2.0 / 3, 1e-9);
  EXPECT_NEAR(r.iteration_us, 22 + 2.0 / 3, 1e-9);
  EXPECT_NEAR(r.stall_us, 2 + 2.0 / 3, 1e-9);
  EXPECT_EQ(r.compute_us, 15);
  EXPECT_EQ(r.swap_in_bytes, 12);
  EXPECT_EQ(r.swap_out_bytes, 12);
}

TEST(Simulator, DropFinishesWithItsWaitsAndDeadlockIsReported) {
  GraphBuilder b;
  b.tensor(4, TensorKind::kParam);
  b.op({}, {}, {}, 3);
  Plan p;
  add(p, StepKind::kCompute, 0, kNoObject, {});
  add(p, StepKind::kDrop, 0, 0, {0});
  add(p, StepKind::kSwapIn, 0, 0, {1});  // reloads after the drop
  p.pool.class_bytes = {4};
  p.pool.class_count = {1};
  p.layout_pool();
  p.access_begin = {0, 0};
  const std::vector<double> times{3};
  Simulator sim;
  SimResult r = sim.run(b.g, p, times, unit_link(), {true});
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.timeline[1].end_us, 3);
  EXPECT_EQ(r.timeline[2].start_us, 3);
  EXPECT_EQ(r.iteration_us, 7);

  // A step that waits for a later step on its own stream never starts.
  Plan bad = p;
  bad.waits = {2, 0, 1};  // compute waits for the swap-in that waits for it
  bad.steps[0].wait_begin = 0;
  bad.steps[0].wait_end = 1;
  bad.steps[1].wait_begin = 1;
  bad.steps[1].wait_end = 2;
  bad.steps[2].wait_begin = 2;
  bad.steps[2].wait_end = 3;
  r = sim.run(b.g, bad, times, unit_link());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("deadlock"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace sa
