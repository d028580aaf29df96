// dtr (baselines/dtr.h): the DTR score and its evicted neighbourhoods
// (Note [DTR heuristic], plan/dtr_cost.h), the victim it picks on a
// hand-made case, and its plans on the chain of baseline_test_util.h: drops
// and recomputes, never a swap of anything but the input.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "baseline_test_util.h"
#include "baselines/baselines.h"
#include "cost/device.h"
#include "plan/dtr_cost.h"
#include "plan/problem.h"
#include "plan/swap_planner.h"
#include "plan/verify.h"

namespace sa {
namespace {

using testing::Chain;
using testing::chain_graph;
using testing::check_plan;
using testing::GraphBuilder;
using testing::sorted;
using testing::tally_steps;
using testing::transients;

constexpr Allocator kAllocators[] = {Allocator::kArena, Allocator::kSizeClass};

// x -> a -> b -> c, and x -> d; producer times 1, 2, 4, 8 us.
TEST(DtrCost, SumsTheEvictedNeighbourhoodOnce) {
  GraphBuilder gb;
  const TensorId x = gb.tensor(10, TensorKind::kInput, "x");
  const TensorId a = gb.tensor(10, TensorKind::kActivation, "a");
  const TensorId b = gb.tensor(10, TensorKind::kActivation, "b");
  const TensorId c = gb.tensor(10, TensorKind::kActivation, "c");
  const TensorId d = gb.tensor(10, TensorKind::kActivation, "d");
  gb.op({x}, {a});
  gb.op({a}, {b});
  gb.op({b}, {c});
  gb.op({x}, {d});
  const std::vector<double> op_us = {1, 2, 4, 8};
  DtrCost cost(gb.g, op_us);
  EXPECT_EQ(cost.cost(a), 1);
  cost.evict(b);
  EXPECT_EQ(cost.cost(a), 1 + 2);  // making a again is not needed, but b needs a
  EXPECT_EQ(cost.cost(c), 4 + 2);
  cost.evict(c);  // joins b's class: 2 + 4
  EXPECT_EQ(cost.cost(a), 1 + 6);
  EXPECT_EQ(cost.cost(d), 8);  // no evicted neighbour
  // Made again, b leaves its cost in the class (union-find does not split).
  cost.restore(b);
  EXPECT_FALSE(cost.evicted(b));
  EXPECT_EQ(cost.cost(a), 1);
  EXPECT_EQ(cost.cost(b), 2 + 6);
  cost.evict(a);  // its neighbours x and b are not evicted: a class of its own
  EXPECT_EQ(cost.cost(b), 2 + 1 + 6);
  cost.reset();
  EXPECT_EQ(cost.cost(b), 2);
  EXPECT_DOUBLE_EQ(DtrCost::score(6, 100, 2), 6.0 / (100 * 2));
  // Just used: staleness floored at 1 ns, a poor victim but a number.
  EXPECT_DOUBLE_EQ(DtrCost::score(1, 100, 0), 1 / (100 * 1e-3));
}

// x (10 B, read to the end), a, b, d (100 B) and c (200 B):
//   op0 a = f0(x)  op1 b = f1(x)  op2 c = f2(x) (5 us)  op3 d = f3(x)
//   op4 y = h(c)   op5 z = k(a, b, d, y, x)            (y, z: 10 B)
// With 420 B, d needs one of a, b, c to go before op3 (x a b c: 410 B). At
// op3 the staleness (op time from the start of its last access) is
// t0 + t1 + 5 for a, t1 + 5 for b and 5 for c, none has an evicted
// neighbour, so h = t / (bytes x staleness):
//   t0 = 1, t1 = 10:  a 1/1600,   b 10/1500,  c 5/1000  -> a
//   t0 = 10, t1 = 1:  a 10/1600,  b 1/600,    c 5/1000  -> b
// (LRU would evict a both times, Belady b: a and b are next used at op5,
// after c.) The victim comes back by recompute at op5, after c has died.
struct Handmade {
  Graph g;
  TensorId a, b;
};
Handmade handmade(double t0, double t1) {
  GraphBuilder gb;
  const TensorId x = gb.tensor(10, TensorKind::kInput, "x");
  const TensorId a = gb.tensor(100, TensorKind::kActivation, "a");
  const TensorId b = gb.tensor(100, TensorKind::kActivation, "b");
  const TensorId c = gb.tensor(200, TensorKind::kActivation, "c");
  const TensorId d = gb.tensor(100, TensorKind::kActivation, "d");
  const TensorId y = gb.tensor(10, TensorKind::kActivation, "y");
  const TensorId z = gb.tensor(10, TensorKind::kActivation, "z");
  gb.op({x}, {a}, {}, t0);
  gb.op({x}, {b}, {}, t1);
  gb.op({x}, {c}, {}, 5);
  gb.op({x}, {d}, {}, 1);
  gb.op({c}, {y}, {}, 1);
  gb.op({a, b, d, y, x}, {z}, {}, 1);
  validate_graph(gb.g, "handmade");
  return {gb.g, a, b};
}

TEST(Dtr, EvictsTheSmallestScore) {
  const DeviceProfile dev = load_device("v100-16gb");
  for (int variant = 0; variant < 2; ++variant) {
    const Handmade h = variant == 0 ? handmade(1, 10) : handmade(10, 1);
    const TensorId victim = variant == 0 ? h.a : h.b;
    const OpId maker = variant == 0 ? 0 : 1;
    SCOPED_TRACE(
        fmt::format("t0 {}, t1 {}", h.g.ops[0].time_us.value(), h.g.ops[1].time_us.value()));
    const Problem pb(h.g, dev, 420);
    // The walk with 420 B (the packing may take more: no repairs here).
    SwapPlanner planner(h.g, pb.sizes, pb.op_us, dev);
    const std::vector<uint8_t> any(h.g.num_ops(), 1);
    PlannerOptions opt;
    opt.eviction = EvictionPolicy::kDtr;
    opt.recompute = &any;
    Plan p;
    const PlanResult planned =
        planner.plan_arena(program_order(h.g.num_ops()), 420, 1 << 20, opt, &p);
    ASSERT_TRUE(planned.ok) << planned.why;
    EXPECT_EQ(planned.capacity, 420);
    const auto t = tally_steps(p);
    EXPECT_EQ(transients(h.g, t.dropped), std::vector<TensorId>{victim});
    EXPECT_EQ(t.recomputed, std::vector<OpId>{maker});
    EXPECT_EQ(t.swapped_out, std::vector<TensorId>{});
    const VerifyResult v = verify_plan(h.g, p);
    EXPECT_TRUE(v.ok) << v.violation;
    // The baseline verifies and fits with either allocator (the pool of
    // one class per size needs 530 B: op5's 330 B and one c).
    for (const auto& [alloc, budget] :
         {std::pair{Allocator::kArena, 420}, {Allocator::kSizeClass, 600}}) {
      const Problem bp(h.g, dev, budget);
      check_plan(h.g, "dtr", plan_baseline("dtr", bp, alloc), budget,
                 std::string(to_string(alloc)));
    }
  }
}

// The chain under pressure: activations are dropped and recomputed, never
// swapped; the only copy is x's swap-in (params stay: the steady state).
TEST(Dtr, RecomputesOnTheChainWithoutSwapping) {
  const Chain c = chain_graph(8);
  const DeviceProfile dev = load_device("v100-16gb");
  for (int64_t budget : {1900, 1700, 1500})
    for (Allocator alloc : kAllocators) {
      SCOPED_TRACE(fmt::format("budget {}, {}", budget, to_string(alloc)));
      const Problem pb(c.g, dev, budget);
      const BaselinePlan r = plan_baseline("dtr", pb, alloc);
      ASSERT_TRUE(r.feasible) << r.why;
      const auto t = check_plan(c.g, "dtr", r, budget, "chain");
      const auto dropped = transients(c.g, t.dropped);
      if (budget >= 1900) {  // the peak: nothing to evict
        EXPECT_EQ(dropped, std::vector<TensorId>{});
        continue;
      }
      EXPECT_FALSE(dropped.empty());
      // Every drop is an activation, made again by its own forward op.
      std::vector<OpId> makers;
      for (int j = 1; j <= c.layers; ++j)
        if (std::find(dropped.begin(), dropped.end(), c.a[j]) != dropped.end())
          makers.push_back(c.f[j]);
      EXPECT_EQ(makers.size(), dropped.size()) << "only activations are dropped";
      std::vector<OpId> recomputed = sorted(t.recomputed);
      recomputed.erase(std::unique(recomputed.begin(), recomputed.end()), recomputed.end());
      EXPECT_EQ(recomputed, sorted(makers));
    }
}

TEST(Dtr, NeverEvictsWhatItMayNotRecompute) {
  // a2 is updated in place by an op that may not run again: neither may
  // f2 (a recompute of it could not bring a2 to its updated version), so
  // a2 stays.
  Chain c = chain_graph(8, 2);
  c.g.ops[c.u].recompute = false;
  const DeviceProfile dev = load_device("v100-16gb");
  const Problem pb(c.g, dev, 1700);
  for (Allocator alloc : kAllocators) {
    const BaselinePlan r = plan_baseline("dtr", pb, alloc);
    ASSERT_TRUE(r.feasible) << to_string(alloc) << ": " << r.why;
    const auto t = check_plan(c.g, "dtr", r, pb.budget, std::string(to_string(alloc)));
    for (TensorId x : t.dropped)
      EXPECT_NE(x, c.a[2]) << to_string(alloc);
  }
}

// Parameters (800 B) never go, and f_j holds a_{j-1}, w_j and a_j at once.
TEST(Dtr, InfeasibleBelowItsMinimumWithAClearReason) {
  const Chain c = chain_graph(8);
  const DeviceProfile dev = load_device("v100-16gb");
  const Problem pb(c.g, dev, 900);
  for (Allocator alloc : kAllocators) {
    const BaselinePlan r = plan_baseline("dtr", pb, alloc);
    EXPECT_FALSE(r.feasible) << to_string(alloc);
    EXPECT_TRUE(
        r.why.starts_with("evicting only what it can recompute does not fit 900 B (parameters, "
                          "optimizer state, inputs and what may not run again stay): "))
        << to_string(alloc) << ": " << r.why;
  }
}

}  // namespace
}  // namespace sa
