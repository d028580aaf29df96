// Stall attribution and tensor traffic on the hand-built plan of
// plan_fixture.h, whose comment draws the timeline and lists every expected
// stall and culprit.

#include <gtest/gtest.h>

#include "plan/stalls.h"
#include "plan_fixture.h"
#include "report/traffic.h"

namespace sa {
namespace {

TEST(Stalls, FixtureTimelineIsAsDrawn) {
  testing::StallFixture f;
  ASSERT_TRUE(f.sim.ok) << f.sim.error;
  const double start[] = {0, 4, 4, 24, 29, 14, 24, 49, 54, 58, 58};
  const double end[] = {4, 14, 24, 29, 49, 14, 30, 54, 58, 58, 59};
  for (int s = 0; s < f.plan.num_steps(); ++s) {
    EXPECT_DOUBLE_EQ(f.sim.timeline[s].start_us, start[s]) << "step " << s;
    EXPECT_DOUBLE_EQ(f.sim.timeline[s].end_us, end[s]) << "step " << s;
  }
  EXPECT_DOUBLE_EQ(f.sim.stall_us, 38);
}

TEST(Stalls, EachStallBlamesTheWaitThatFinishedLast) {
  testing::StallFixture f;
  const StallReport r = attribute_stalls(f.graph, f.plan, f.sim.timeline);
  ASSERT_EQ(r.stalls.size(), 4u);
  const StepId step[] = {1, 3, 7, 10};
  const double idle[] = {4, 10, 20, 4};
  const StepId culprit[] = {0, 2, 4, 8};  // s10 waits on the drop s9: blamed on s8 behind it
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(r.stalls[i].step, step[i]);
    EXPECT_DOUBLE_EQ(r.stalls[i].idle_us, idle[i]);
    EXPECT_EQ(r.stalls[i].culprit, culprit[i]);
  }
  EXPECT_DOUBLE_EQ(r.total_us, 38);
  EXPECT_DOUBLE_EQ(r.total_us, f.sim.stall_us);
  EXPECT_DOUBLE_EQ(r.unattributed_us, 0);
}

// Why each culprit started when it did: s0 at time 0 (not held); s2 when
// s0 freed the host-to-device stream (link busy); s4 when op1 (s3) ended;
// s8 when op2 (s7) ended, the stream having been free since 30.
TEST(Stalls, CausesOfTheCulprits) {
  testing::StallFixture f;
  const StallReport r = attribute_stalls(f.graph, f.plan, f.sim.timeline);
  ASSERT_EQ(r.stalls.size(), 4u);
  const StallCause cause[] = {StallCause::kNotHeld, StallCause::kLinkBusy, StallCause::kWaitedForOp,
                              StallCause::kWaitedForOp};
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(r.stalls[i].cause, cause[i]) << "stall " << i;
  const auto in = [&](StallCause c) { return r.by_cause_us[0][static_cast<int>(c)]; };
  const auto out = [&](StallCause c) { return r.by_cause_us[1][static_cast<int>(c)]; };
  EXPECT_DOUBLE_EQ(in(StallCause::kNotHeld), 4);
  EXPECT_DOUBLE_EQ(in(StallCause::kLinkBusy), 10);
  EXPECT_DOUBLE_EQ(in(StallCause::kWaitedForOp), 4);
  EXPECT_DOUBLE_EQ(in(StallCause::kWaitedForCopy), 0);
  EXPECT_DOUBLE_EQ(out(StallCause::kWaitedForOp), 20);
  EXPECT_DOUBLE_EQ(
      out(StallCause::kLinkBusy) + out(StallCause::kNotHeld) + out(StallCause::kWaitedForCopy), 0);
  EXPECT_STREQ(to_string(StallCause::kLinkBusy), "link busy");
}

TEST(Stalls, GroupedByTensorMostIdleFirst) {
  testing::StallFixture f;
  const StallReport r = attribute_stalls(f.graph, f.plan, f.sim.timeline);
  ASSERT_EQ(r.by_tensor.size(), 2u);
  EXPECT_EQ(r.by_tensor[0].tensor, 1);
  EXPECT_DOUBLE_EQ(r.by_tensor[0].idle_us, 30);
  EXPECT_EQ(r.by_tensor[0].stalls, 2);
  EXPECT_EQ(r.by_tensor[0].via_swap_in, 1);
  EXPECT_EQ(r.by_tensor[0].via_swap_out, 1);
  EXPECT_EQ(r.by_tensor[1].tensor, 0);
  EXPECT_DOUBLE_EQ(r.by_tensor[1].idle_us, 8);
  EXPECT_EQ(r.by_tensor[1].stalls, 2);
  EXPECT_EQ(r.by_tensor[1].via_swap_in, 2);
}

// A data-parallel all-reduce runs on the collective stream (stream_of(g,
// step)): its start is no compute stall, and the compute step after it is
// timed against the compute step before it. Before, a collective counted as
// a compute step (stream_of(kind)): 2 us of "stall" here, and the next
// compute step's gap measured from the collective's end.
TEST(Stalls, ACollectiveIsNotAComputeStall) {
  Graph g;
  g.name = "dp";
  g.ops.resize(3);
  g.ops[0].type = "test::fwd";
  g.ops[1].type = std::string(kCollectiveTypes[0]);
  g.ops[2].type = "test::update";
  Plan p;
  p.steps = {Step::run(StepKind::kCompute, 0), Step::run(StepKind::kCompute, 1),
             Step::run(StepKind::kCompute, 2)};
  const std::vector<StepTiming> t = {{0, 10}, {12, 20}, {10, 15}};
  const StallReport r = attribute_stalls(g, p, t);
  EXPECT_TRUE(r.stalls.empty());
  EXPECT_EQ(r.total_us, 0);
}

TEST(Stalls, NoneWhenComputeNeverWaits) {
  testing::StallFixture f;
  Plan p;
  p.steps = {Step::run(StepKind::kCompute, 0), Step::run(StepKind::kCompute, 1)};
  const std::vector<StepTiming> t = {{0, 10}, {10, 15}};
  const StallReport r = attribute_stalls(f.graph, p, t);
  EXPECT_TRUE(r.stalls.empty());
  EXPECT_EQ(r.total_us, 0);
}

TEST(Traffic, TensorsByBytesMoved) {
  testing::StallFixture f;
  const std::vector<TensorTraffic> t = tensor_traffic(f.graph, f.plan);
  ASSERT_EQ(t.size(), 3u);
  // t1: in + out of 20 B; t0: two swap-ins of 4 B and a drop; t2: one 6 B swap-in, a drop.
  EXPECT_EQ(t[0].tensor, 1);
  EXPECT_EQ(t[0].bytes, 40);
  EXPECT_EQ(t[0].swap_ins, 1);
  EXPECT_EQ(t[0].swap_outs, 1);
  EXPECT_EQ(t[1].tensor, 0);
  EXPECT_EQ(t[1].bytes, 8);
  EXPECT_EQ(t[1].swap_ins, 2);
  EXPECT_EQ(t[1].drops, 1);
  EXPECT_EQ(t[2].tensor, 2);
  EXPECT_EQ(t[2].bytes, 6);
  EXPECT_EQ(t[2].drops, 1);
}

}  // namespace
}  // namespace sa
