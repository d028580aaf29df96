#include <gtest/gtest.h>

#include <cstdio>
#include <numeric>

#include "graph/dataflow.h"
#include "graph/stats.h"
#include "search/alloc_ops.h"
#include "search/rng.h"
#include "search_graphs.h"
#include "test_util.h"

namespace sa {
namespace {

using testing::GraphBuilder;

// Five sizes 10, 20, 30, 40, 50, one activation each, all live at once at op4.
Graph five_sizes() {
  GraphBuilder b;
  std::vector<TensorId> t;
  for (int i = 1; i <= 5; ++i)
    t.push_back(b.tensor(10 * i, TensorKind::kActivation));
  for (int i = 0; i < 5; ++i)
    b.op({}, {t[i]});
  b.op({t[0], t[1], t[2], t[3], t[4]}, {});
  return b.g;
}

std::vector<int32_t> identity_demand(const Graph& g, const SizeTable& t) {
  std::vector<ClassId> id(t.num_sizes());
  std::iota(id.begin(), id.end(), 0);
  return demand_counts(g, t, id, program_order(g.num_ops()));
}

TEST(AllocOps, ClsCrossoverByHand) {
  const Graph g = five_sizes();
  const SizeTable t = make_size_table(g);
  AllocOps ops(g, t, 1000, identity_demand(g, t));
  // a: {10 20} {30 40} {50}     boundaries (of sizes 1..4): 0 1 0 1
  // b: {10} {20} {30 40 50}     boundaries:                 1 1 0 0
  // cut 3: c1 = a's boundaries of sizes 1, 2 then b's of 3, 4: 0 1 0 0 → 0 0 1 1 1
  //        c2 = b's of 1, 2 then a's of 3, 4:                  1 1 0 1 → 0 1 2 2 3
  const std::vector<ClassId> a{0, 0, 1, 1, 2}, b{0, 1, 2, 2, 2};
  std::vector<ClassId> c1, c2;
  ops.cls_crossover(a, b, 3, &c1, &c2);
  EXPECT_EQ(c1, (std::vector<ClassId>{0, 0, 1, 1, 1}));
  EXPECT_EQ(c2, (std::vector<ClassId>{0, 1, 2, 2, 3}));
}

TEST(AllocOps, CountsCarryOverThroughThePerSizeExpansion) {
  const Graph g = five_sizes();
  const SizeTable t = make_size_table(g);
  AllocOps ops(g, t, 1000, identity_demand(g, t));
  std::vector<double> e;
  ops.expand(Allocation{{0, 0, 1, 1, 2}, {4, 2, 1}}, &e);
  EXPECT_EQ(e, (std::vector<double>{4, 4, 2, 2, 1}));
  std::vector<int32_t> cnt;
  ops.contract(e, std::vector<ClassId>{0, 1, 1, 1, 1}, &cnt);  // 4, mean(4, 2, 2, 1) = 2.25
  EXPECT_EQ(cnt, (std::vector<int32_t>{4, 2}));
}

TEST(AllocOps, RepairFitsTheBudgetAndFillsTowardsTheCaps) {
  const Graph g = five_sizes();
  const SizeTable t = make_size_table(g);
  // Demand: one object of each size; minimum too (op5 touches all five).
  AllocOps ops(g, t, 150, identity_demand(g, t));
  Allocation a{{0, 1, 2, 3, 4}, {0, 0, 0, 0, 0}};
  ASSERT_TRUE(ops.repair(a));
  EXPECT_EQ(a.cnt, (std::vector<int32_t>{1, 1, 1, 1, 1}));
  a = Allocation{{0, 1, 2, 3, 4}, {9, 9, 9, 9, 9}};  // clamped to the caps
  ASSERT_TRUE(ops.repair(a));
  EXPECT_EQ(a.cnt, (std::vector<int32_t>{1, 1, 1, 1, 1}));
  // One class of 50-byte objects: 5 needed at once, 250 bytes > 150.
  a = Allocation{{0, 0, 0, 0, 0}, {5}};
  EXPECT_FALSE(ops.repair(a));
}

TEST(AllocOps, RandomizedOperatorsKeepAllocationsValid) {
  const uint64_t seed = 777;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  int children = 0, rejected = 0;
  for (int round = 0; round < 12; ++round) {
    const Graph g = testing::random_training_graph(seed + round, 4 + 2 * round);
    const SizeTable t = make_size_table(g);
    const auto order = program_order(g.num_ops());
    Rng rng = Rng::derive(seed, round);
    const int64_t peak = peak_live_bytes(g);
    const int64_t budget = static_cast<int64_t>(peak * (0.3 + 0.6 * rng.uniform()));
    Allocation base;
    std::string why;
    if (!default_allocation(g, t, order, budget, &base, &why)) continue;
    AllocOps ops(g, t, budget, identity_demand(g, t));
    ASSERT_TRUE(ops.is_valid(base));
    std::vector<Allocation> pool{base};
    for (int k = 0; k < 60; ++k) {
      const Allocation& x = pool[rng.below(static_cast<uint32_t>(pool.size()))];
      const Allocation& y = pool[rng.below(static_cast<uint32_t>(pool.size()))];
      Allocation c1, c2;
      const int n = t.num_sizes();
      ops.crossover(x, y, rng.between(1, n), rng.between(0, n), &c1, &c2);
      ASSERT_TRUE(ops.is_valid(c1)) << "round " << round << " child " << k;
      ASSERT_TRUE(ops.is_valid(c2)) << "round " << round << " child " << k;
      if (!ops.mutate(c1, rng.uniform(), 0.5, rng)) ++rejected;
      ASSERT_TRUE(ops.is_valid(c1)) << "round " << round << " child " << k;
      ops.move_budget(c2, rng);
      ASSERT_TRUE(ops.is_valid(c2)) << "round " << round << " child " << k;
      pool.push_back(c1);
      pool.push_back(c2);
      children += 2;
    }
  }
  EXPECT_GT(children, 0);
  std::printf("%d children, %d mutations rejected\n", children, rejected);
}

}  // namespace
}  // namespace sa
