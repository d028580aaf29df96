// The swap baselines' rules (baselines/baselines.h) on the hand-checkable
// chain of baseline_test_util.h with 12 layers, whose forward and backward
// ops are convolutions (vDNN offloads only what convolutions read):
//
//   position  0..11  f1..f12        (f_j at j - 1)
//             12 + 2(12 - j)  b_j,  13 + 2(12 - j)  s_j   (b12 at 12, b1 at 34)
//
// a_j (j < 12) is last read in the forward pass by f_{j+1} (position j) and
// first read again by b_{j+1} (position 34 - 2j); a12 is made by f12 (11)
// and read by b12 (12). A directed swap-in "before position i" is issued
// once the op at i - 1 has run: it waits for that compute step.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "baseline_test_util.h"
#include "baselines/baselines.h"
#include "cost/device.h"
#include "plan/problem.h"

namespace sa {
namespace {

using testing::Chain;
using testing::chain_graph;

constexpr int kLayers = 12;
constexpr Allocator kAllocators[] = {Allocator::kArena, Allocator::kSizeClass};

Chain conv_chain() {
  Chain c = chain_graph(kLayers);
  for (Op& op : c.g.ops)
    if (op.phase == Phase::kForward)
      op.type = "aten::convolution";
    else if (op.phase == Phase::kBackward)
      op.type = "aten::convolution_backward";
  return c;
}

int last_forward(int j) {
  return j < kLayers ? j : kLayers - 1;
}
int first_backward(int j) {
  return j < kLayers ? 34 - 2 * j : kLayers;
}

// Per tensor swapped in: the position of the compute step its swap-in waits
// for (-1: none).
std::map<TensorId, int> swap_in_after(const Plan& p) {
  std::vector<int> pos_of_step(p.num_steps(), -1);
  std::vector<int> pos_of_op(p.order.size());
  for (size_t i = 0; i < p.order.size(); ++i)
    pos_of_op[p.order[i]] = static_cast<int>(i);
  std::map<TensorId, int> after;
  for (StepId s = 0; s < p.num_steps(); ++s) {
    const Step& st = p.steps[s];
    if (st.kind == StepKind::kCompute) pos_of_step[s] = pos_of_op[st.op()];
    if (st.kind != StepKind::kSwapIn) continue;
    int latest = -1;
    for (StepId w : p.waits_of(s))
      latest = std::max(latest, pos_of_step[w]);
    after[st.tensor()] = latest;
  }
  return after;
}

BaselinePlan plan(const char* name, const Chain& c, Allocator alloc) {
  const DeviceProfile dev = load_device("v100-16gb");  // (Problem keeps a reference)
  const Problem pb(c.g, dev, 1 << 20);
  BaselinePlan r = plan_baseline(name, pb, alloc);
  testing::check_plan(c.g, name, r, pb.budget, fmt::format("{}, {}", name, to_string(alloc)));
  return r;
}

// a_j goes out once and comes back once the op at position `after_pos` ran.
void expect_round_trip(const testing::StepTally& t, const std::map<TensorId, int>& after,
                       TensorId a, int after_pos, int j) {
  EXPECT_EQ(std::count(t.swapped_out.begin(), t.swapped_out.end(), a), 1) << "a" << j;
  ASSERT_TRUE(after.count(a)) << "a" << j;
  EXPECT_EQ(after.at(a), after_pos) << "a" << j;
}

TEST(BaselineRules, SwapAllMovesEverySavedActivationAndFetchesItForItsBackwardOp) {
  const Chain c = conv_chain();
  for (Allocator alloc : kAllocators) {
    SCOPED_TRACE(std::string(to_string(alloc)));
    const BaselinePlan r = plan("swap-all", c, alloc);
    const auto t = testing::tally_steps(r.plan);
    const auto after = swap_in_after(r.plan);
    for (int j = 1; j <= kLayers; ++j) {
      expect_round_trip(t, after, c.a[j], first_backward(j) - 1, j);
    }
  }
}

TEST(BaselineRules, VdnnOffloadsConvolutionInputsAndPrefetchesOneLayerAhead) {
  const Chain c = conv_chain();
  for (Allocator alloc : kAllocators) {
    SCOPED_TRACE(std::string(to_string(alloc)));
    const BaselinePlan r = plan("vdnn", c, alloc);
    const auto t = testing::tally_steps(r.plan);
    const auto after = swap_in_after(r.plan);
    // a1..a11 are read by a forward convolution (f2..f12); a12 is not.
    for (int j = 1; j < kLayers; ++j) {
      // Used by b_{j+1}; prefetched at the backward convolution before it,
      // b_{j+2} (two positions earlier), when that comes after a_j's
      // forward use: so once s_{j+3} (or f12, for a11) has run.
      const int prefetch = j + 1 < kLayers ? first_backward(j) - 2 : first_backward(j);
      expect_round_trip(t, after, c.a[j], prefetch - 1, j);
    }
    EXPECT_EQ(std::count(t.swapped_out.begin(), t.swapped_out.end(), c.a[kLayers]), 0);
  }
}

TEST(BaselineRules, TflmsFetchesAFixedLookAheadAndNeverEvictsParameters) {
  const Chain c = conv_chain();
  for (Allocator alloc : kAllocators) {
    SCOPED_TRACE(std::string(to_string(alloc)));
    const BaselinePlan r = plan("tflms", c, alloc);
    const auto t = testing::tally_steps(r.plan);
    const auto after = swap_in_after(r.plan);
    for (int j = 1; j <= kLayers; ++j) {
      const int fetch = std::max(last_forward(j) + 1, first_backward(j) - kTflmsLookahead);
      expect_round_trip(t, after, c.a[j], fetch - 1, j);
    }
    // Parameters stay once on the device: each is swapped in at most once
    // (its first use) and never out before its update.
    for (int j = 1; j <= kLayers; ++j)
      EXPECT_LE(std::count(t.swapped_in.begin(), t.swapped_in.end(), c.w[j]), 1) << "w" << j;
    for (TensorId x : t.dropped)
      EXPECT_NE(c.g.tensors[x].kind, TensorKind::kParam) << c.g.tensors[x].name;
  }
}

}  // namespace
}  // namespace sa
