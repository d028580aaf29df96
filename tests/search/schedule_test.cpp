#include <gtest/gtest.h>

#include <cstdio>

#include "graph/dataflow.h"
#include "search/rng.h"
#include "search/schedule.h"
#include "search_graphs.h"
#include "test_util.h"

namespace sa {
namespace {

using testing::GraphBuilder;

// op0 → op1, op0 → op2, (op1, op2) → op3; op4 independent.
Graph diamond() {
  GraphBuilder b;
  auto a = b.tensor(10, TensorKind::kActivation);
  auto x = b.tensor(10, TensorKind::kActivation);
  auto y = b.tensor(10, TensorKind::kActivation);
  auto z = b.tensor(10, TensorKind::kActivation);
  b.op({}, {a});
  b.op({a}, {x});
  b.op({a}, {y});
  b.op({x, y}, {});
  b.op({}, {z});
  return b.g;
}

TEST(Schedule, CrossoverByHand) {
  const Graph g = diamond();
  const Dataflow df(g);
  Scheduler s(df);
  const std::vector<OpId> p1{0, 1, 2, 3, 4};
  const std::vector<OpId> p2{4, 0, 2, 1, 3};
  std::vector<OpId> c1, c2;
  // cut 2: c1 = p2[0, 2) = 4 0, then 1 2 3 in p1's order  → 4 0 1 2 3
  //        c2 = p1[0, 2) = 0 1, then 4 2 3 in p2's order  → 0 1 4 2 3
  s.crossover(p1, p2, 2, &c1, &c2);
  EXPECT_EQ(c1, (std::vector<OpId>{4, 0, 1, 2, 3}));
  EXPECT_EQ(c2, (std::vector<OpId>{0, 1, 4, 2, 3}));
  // cut 0 swaps nothing in: each child is its tail parent; cut 5 the head one.
  s.crossover(p1, p2, 0, &c1, &c2);
  EXPECT_EQ(c1, p1);
  EXPECT_EQ(c2, p2);
  s.crossover(p1, p2, 5, &c1, &c2);
  EXPECT_EQ(c1, p2);
  EXPECT_EQ(c2, p1);
}

TEST(Schedule, MutationWithoutRandomPicksKeepsTheParent) {
  const Graph g = diamond();
  const Dataflow df(g);
  Scheduler s(df);
  Rng rng(1);
  const std::vector<OpId> parent{4, 0, 2, 1, 3};
  std::vector<OpId> out;
  s.mutate(parent, 0.0, false, rng, &out);
  EXPECT_EQ(out, parent);
  s.mutate(parent, 0.0, true, rng, &out);
  EXPECT_EQ(out, parent);
  // p = 1: every step a random ready op: still topological.
  s.mutate(parent, 1.0, false, rng, &out);
  EXPECT_TRUE(is_topological(df, out));
}

TEST(Schedule, PriorityOrderFollowsKeysWhereDependenciesAllow) {
  const Graph g = diamond();
  const Dataflow df(g);
  Scheduler s(df);
  std::vector<OpId> out;
  // op3 has the smallest key but waits for op1 and op2.
  s.priority_order(std::vector<double>{1, 3, 2, 0, 5}, &out);
  EXPECT_EQ(out, (std::vector<OpId>{0, 2, 1, 3, 4}));
}

TEST(Schedule, EagerUpdatesFollowTheirGradients) {
  const Graph g = testing::random_training_graph(7, 6);
  const Dataflow df(g);
  const auto order = eager_update_order(g, df);
  std::string why;
  ASSERT_TRUE(is_topological(df, order, &why)) << why;
  // Every update op comes before the last backward op, except those of the
  // parameter whose gradient is computed last.
  int last_backward = -1;
  std::vector<int> pos(g.num_ops());
  for (int i = 0; i < g.num_ops(); ++i) {
    pos[order[i]] = i;
    if (g.ops[order[i]].phase == Phase::kBackward) last_backward = i;
  }
  int early = 0;
  for (OpId o = 0; o < g.num_ops(); ++o)
    if (g.ops[o].phase == Phase::kUpdate && pos[o] < last_backward) ++early;
  EXPECT_EQ(early, 3 * 5);  // 3 update ops per layer; layer 0's come last
  // The momentum scaling (no dependencies) sits right before its consumer.
  for (OpId o = 0; o < g.num_ops(); ++o)
    if (g.ops[o].phase == Phase::kUpdate && df.preds(o).empty()) {
      ASSERT_EQ(df.succs(o).size(), 1u);
      EXPECT_LT(pos[o], pos[df.succs(o)[0]]);
      EXPECT_GE(pos[o], pos[df.succs(o)[0]] - 2);
    }
}

TEST(Schedule, RandomizedOperatorsKeepOrdersTopological) {
  const uint64_t seed = 20240601;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  for (int round = 0; round < 20; ++round) {
    const Graph g = testing::random_training_graph(seed + round, 3 + round);
    const Dataflow df(g);
    Scheduler s(df);
    Rng rng = Rng::derive(seed, round);
    std::vector<OpId> a, b, c1, c2, m;
    s.random_order(rng, &a);
    s.random_order(rng, &b);
    std::string why;
    ASSERT_TRUE(is_topological(df, a, &why)) << "round " << round << ": " << why;
    ASSERT_TRUE(is_topological(df, b, &why)) << "round " << round << ": " << why;
    for (int k = 0; k < 10; ++k) {
      const int cut = rng.between(0, g.num_ops());
      s.crossover(a, b, cut, &c1, &c2);
      ASSERT_TRUE(is_topological(df, c1, &why))
          << "round " << round << " cut " << cut << ": " << why;
      ASSERT_TRUE(is_topological(df, c2, &why))
          << "round " << round << " cut " << cut << ": " << why;
      const double p = rng.uniform();
      const bool reverse = rng.chance(0.5);
      s.mutate(c1, p, reverse, rng, &m);
      ASSERT_TRUE(is_topological(df, m, &why)) << "round " << round << " p " << p << ": " << why;
      a = m;
    }
  }
}

}  // namespace
}  // namespace sa
