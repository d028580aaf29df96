// checkpoint (Note [Segment checkpointing], baselines/checkpoint.h) on the
// hand-checkable chain of baseline_test_util.h: which activations k segments
// drop, that the plans recompute them instead of swapping, and which k the
// baseline chooses for a budget.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "baseline_test_util.h"
#include "baselines/baselines.h"
#include "baselines/checkpoint.h"
#include "cost/device.h"
#include "plan/problem.h"
#include "plan/simulator.h"
#include "plan/verify.h"

namespace sa {
namespace {

using testing::Chain;
using testing::chain_graph;
using testing::check_plan;
using testing::sorted;
using testing::tally_steps;
using testing::transients;

constexpr Allocator kAllocators[] = {Allocator::kArena, Allocator::kSizeClass};

// The 8-layer chain: every a_j is 100 B, and so is every other tensor.
// Segments balance the saved bytes (a_1..a_8, 100 B each): with k segments,
// f_j is in segment floor((j - 1) k / 8); the last segment keeps all.
TEST(Checkpoint, SegmentsDropTheActivationsOnlyTheirOwnOpsRead) {
  const Chain c = chain_graph(8);
  const auto order = program_order(c.g.num_ops());
  auto a = [&](std::vector<int> js) {
    std::vector<TensorId> ids;
    for (int j : js)
      ids.push_back(c.a[j]);
    return ids;
  };
  EXPECT_EQ(checkpoint_drops(c.g, order, 1), a({}));
  // k = 2: {f1..f4} {f5..f8}: a4 is read by f5 (a boundary), a1..a3 go.
  EXPECT_EQ(checkpoint_drops(c.g, order, 2), a({1, 2, 3}));
  // k = 3: {f1 f2 f3} {f4 f5 f6} {f7 f8}: a3 and a6 cross.
  EXPECT_EQ(checkpoint_drops(c.g, order, 3), a({1, 2, 4, 5}));
  EXPECT_EQ(checkpoint_drops(c.g, order, 4), a({1, 3, 5}));
  // One op per segment: every activation crosses a boundary.
  EXPECT_EQ(checkpoint_drops(c.g, order, 8), a({}));
  EXPECT_NE(testing::error_of([&] {
              checkpoint_drops(c.g, order, 0);
            }).find("checkpoint needs 1 segment or more, not 0"),
            std::string::npos);
}

// Two segments, checked (check_plan).
std::pair<BaselinePlan, testing::StepTally> two_segments(const Problem& pb, Allocator alloc) {
  BaselinePlan r = plan_checkpoint_segments(pb, alloc, 2);
  const auto t = check_plan(pb.graph, "checkpoint", r, pb.budget,
                            fmt::format("2 segments, {}", to_string(alloc)));
  return {std::move(r), t};
}

// Two segments: a1..a3 are dropped after f2..f4 and made again when b4
// first needs a3 (f3 needs a2, f2 needs a1, f1 needs x: three recomputes).
// Nothing is copied but x; the peak is at b8: params 800 + x + a4..a8
// (500) + d7 and g8 (200) = 1600 B instead of 1900 B.
TEST(Checkpoint, DroppedActivationsAreRecomputedNotSwapped) {
  const Chain c = chain_graph(8);
  const DeviceProfile dev = load_device("v100-16gb");
  const Problem pb(c.g, dev, 4000);
  for (Allocator alloc : kAllocators) {
    SCOPED_TRACE(std::string(to_string(alloc)));
    const auto [r, t] = two_segments(pb, alloc);
    EXPECT_EQ(t.swapped_in, std::vector<TensorId>{c.x});
    EXPECT_EQ(transients(c.g, t.dropped), (std::vector<TensorId>{c.a[1], c.a[2], c.a[3]}));
    // In the order they run: f3's inputs are made first.
    EXPECT_EQ(t.recomputed, (std::vector<OpId>{c.f[1], c.f[2], c.f[3]}));
    EXPECT_EQ(r.plan.arena_bytes(), 1600);
    const SimResult s = Simulator().run(c.g, r.plan, pb.op_us, dev);
    ASSERT_TRUE(s.ok) << s.error;
    EXPECT_DOUBLE_EQ(s.recompute_us, 3 * pb.op_us[c.f[1]]);
  }
}

// The peaks of Note [Segment checkpointing] on the chain (at b8, where the
// last segment is all there): k = 1 1900 B, 2 1600, 3 1500, 4 1600, 5 1600,
// 6 1700; recomputes: 0, 3, 4, 3, 3, 2. The fastest within the budget wins,
// the fewest segments among equals; k goes up to ceil(2 sqrt(8)) = 6.
TEST(Checkpoint, ChoosesTheFastestSegmentationWithinTheBudget) {
  const Chain c = chain_graph(8);
  const DeviceProfile dev = load_device("v100-16gb");
  struct Case {
    int64_t budget;
    int segments;
    int recomputes;
  };
  for (const Case& k :
       {Case{1900, 1, 0}, Case{1899, 6, 2}, Case{1700, 6, 2}, Case{1600, 2, 3}, Case{1500, 3, 4}})
    for (Allocator alloc : kAllocators) {
      SCOPED_TRACE(fmt::format("budget {}, {}", k.budget, to_string(alloc)));
      const Problem pb(c.g, dev, k.budget);
      const CheckpointPlan r = plan_checkpoint(pb, alloc);
      ASSERT_TRUE(r.result.feasible) << r.result.why;
      EXPECT_EQ(r.max_segments, 6);
      EXPECT_EQ(r.segments, k.segments);
      EXPECT_EQ(r.result.plan.memory_budget, k.budget);
      const auto t = check_plan(c.g, "checkpoint", r.result, k.budget, "chosen");
      EXPECT_EQ(static_cast<int>(t.recomputed.size()), k.recomputes);
      // The name dispatches to the same plan.
      const BaselinePlan named = plan_baseline("checkpoint", pb, alloc);
      ASSERT_TRUE(named.feasible);
      EXPECT_EQ(named.plan.steps.size(), r.result.plan.steps.size());
    }
}

TEST(Checkpoint, InfeasibleBelowItsMinimumWithAClearReason) {
  const Chain c = chain_graph(8);
  const DeviceProfile dev = load_device("v100-16gb");
  const Problem pb(c.g, dev, 1499);
  for (Allocator alloc : kAllocators) {
    SCOPED_TRACE(std::string(to_string(alloc)));
    // The arena rules a plan out by the most bytes alive at once (no
    // packing is lower); the pool by what the plan takes.
    const std::string keep = alloc == Allocator::kArena ? "keep at least" : "keep up to";
    const BaselinePlan r = plan_baseline("checkpoint", pb, alloc);
    ASSERT_FALSE(r.feasible);
    EXPECT_EQ(r.why, "no number of segments from 1 to 6 fits: at best, 3 segments " + keep +
                         " 1.5 KiB (1500 B) on the device, over the budget of 1.5 KiB (1499 B)");
    const BaselinePlan two = plan_checkpoint_segments(pb, alloc, 2);
    ASSERT_FALSE(two.feasible);
    EXPECT_EQ(two.why, "2 segments " + keep + " 1.6 KiB on the device, over the budget of 1.5 KiB");
  }
  EXPECT_NE(testing::error_of([&] {
              plan_checkpoint_segments(pb, Allocator::kArena, -1);
            }).find("checkpoint needs 1 segment or more, not -1"),
            std::string::npos);
  // Without a backward phase there is nothing to checkpoint.
  Graph fwd = c.g;
  for (Op& op : fwd.ops)
    op.phase = Phase::kForward;
  const Problem fp(fwd, dev, 4000);
  const BaselinePlan none = plan_baseline("checkpoint", fp, Allocator::kArena);
  EXPECT_FALSE(none.feasible);
  EXPECT_EQ(none.why, "the graph has no backward phase, which checkpointing needs");
}

// a2 is updated in place by u2 (relu_): two segments drop a1, a2 and a3,
// and a2 is made again by f2 and then u2 (Note [Update replay]).
TEST(Checkpoint, ReplaysInPlaceUpdatesAfterTheRecompute) {
  const Chain c = chain_graph(8, 2);
  const DeviceProfile dev = load_device("v100-16gb");
  const Problem pb(c.g, dev, 4000);
  for (Allocator alloc : kAllocators) {
    const auto t = two_segments(pb, alloc).second;
    EXPECT_EQ(transients(c.g, t.dropped), (std::vector<TensorId>{c.a[1], c.a[2], c.a[3]}));
    EXPECT_EQ(t.recomputed, (std::vector<OpId>{c.f[1], c.f[2], c.u, c.f[3]}));
  }
}

// a2 is updated in place by u2, which the graph forbids to run again, so
// f2 may not run again either: two segments drop a1 and a3 only, and keep
// a2 on the device instead of copying it out (Directives::drop_only).
TEST(Checkpoint, KeepsWhatMayNotBeRecomputed) {
  Chain c = chain_graph(8, 2);
  c.g.ops[c.u].recompute = false;
  const auto order = program_order(c.g.num_ops());
  EXPECT_EQ(checkpoint_drops(c.g, order, 2), (std::vector<TensorId>{c.a[1], c.a[2], c.a[3]}));
  const DeviceProfile dev = load_device("v100-16gb");
  const Problem pb(c.g, dev, 4000);
  for (Allocator alloc : kAllocators) {
    const auto t = two_segments(pb, alloc).second;
    EXPECT_EQ(transients(c.g, t.dropped), (std::vector<TensorId>{c.a[1], c.a[3]}));
    EXPECT_EQ(sorted(t.recomputed), (std::vector<OpId>{c.f[1], c.f[3]}));
  }
}

}  // namespace
}  // namespace sa
