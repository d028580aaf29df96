#include <gtest/gtest.h>

#include "graph/dataflow.h"
#include "plan/allocation.h"
#include "test_util.h"

namespace sa {
namespace {

using testing::GraphBuilder;

// Sizes 10, 20, 40. op0: a(10), b(10) = f(); op1: c(40) = g(a); op2: d(20) = h(b, c).
Graph three_sizes() {
  GraphBuilder b;
  auto a = b.tensor(10, TensorKind::kActivation);
  auto bb = b.tensor(10, TensorKind::kActivation);
  auto c = b.tensor(40, TensorKind::kActivation);
  auto d = b.tensor(20, TensorKind::kActivation);
  b.op({}, {a, bb});
  b.op({a}, {c});
  b.op({bb, c}, {d});
  return b.g;
}

TEST(Allocation, SizeTableAndClasses) {
  Graph g = three_sizes();
  g.ops[1].workspace_bytes = 20;
  const SizeTable t = make_size_table(g);
  EXPECT_EQ(t.sizes, (std::vector<int64_t>{10, 20, 40}));
  EXPECT_EQ(t.tensor_size, (std::vector<int32_t>{0, 0, 2, 1}));
  EXPECT_EQ(t.workspace_size, (std::vector<int32_t>{-1, 1, -1}));
  const std::vector<ClassId> cls{0, 0, 1};  // {10, 20} → 20, {40} → 40
  EXPECT_EQ(class_bytes(t, cls), (std::vector<int64_t>{20, 40}));
  // op0 touches two items of class 0; op1: a and its workspace (class 0), c.
  EXPECT_EQ(min_counts(g, t, cls), (std::vector<int32_t>{2, 1}));
  Allocation a{cls, {3, 1}};
  EXPECT_TRUE(is_well_formed(t, a));
  EXPECT_EQ(pool_bytes(t, a), 3 * 20 + 40);
  a.cls = {0, 2, 2};
  EXPECT_FALSE(is_well_formed(t, a));
}

TEST(Allocation, DemandCounts) {
  const Graph g = three_sizes();
  const SizeTable t = make_size_table(g);
  const std::vector<ClassId> cls{0, 1, 2};
  // Program order: at op1 a, b (10) and c (40) are live; at op2 b, c, d.
  EXPECT_EQ(demand_counts(g, t, cls, program_order(3)), (std::vector<int32_t>{2, 1, 1}));
}

TEST(Allocation, RepairScalesTowardsTheMinimum) {
  const Graph g = three_sizes();
  const SizeTable t = make_size_table(g);
  Allocation a{{0, 1, 2}, {10, 10, 10}};    // 700 bytes
  const std::vector<int32_t> min{2, 1, 1};  // 80 bytes
  EXPECT_FALSE(repair_counts(t, min, 79, a));
  a.cnt = {10, 10, 10};
  ASSERT_TRUE(repair_counts(t, min, 300, a));
  EXPECT_LE(pool_bytes(t, a), 300);
  EXPECT_GE(pool_bytes(t, a), 300 - 10);  // nothing wasted beyond rounding
  for (int c = 0; c < 3; ++c)
    EXPECT_GE(a.cnt[c], min[c]);
}

TEST(Allocation, MinBudgetNamesTheHungriestOp) {
  const Graph g = three_sizes();
  OpId op = kNoOp;
  EXPECT_EQ(min_budget(g, &op), 10 + 40 + 20);
  EXPECT_EQ(op, 2);
}

}  // namespace
}  // namespace sa

namespace sa {
namespace {

// Sizes 100, 150. op0 touches two 100-byte items, op1 one 150-byte item.
// One class per size needs 2 x 100 + 1 x 150 = 350 bytes; one class of 150
// needs max(2, 1) x 150 = 300, the smaller pool.
TEST(Allocation, MinPoolClassesMergeWhenOpsNeedSizesAtDifferentTimes) {
  testing::GraphBuilder b;
  auto x = b.tensor(100, TensorKind::kActivation);
  auto y = b.tensor(100, TensorKind::kActivation);
  auto z = b.tensor(150, TensorKind::kActivation);
  b.op({}, {x, y});
  b.op({}, {z});
  const SizeTable t = make_size_table(b.g);
  EXPECT_EQ(min_pool_classes(b.g, t), (std::vector<ClassId>{0, 0}));
  Allocation a;
  std::string why;
  ASSERT_TRUE(default_allocation(b.g, t, program_order(2), 300, &a, &why)) << why;
  EXPECT_EQ(a.cls, (std::vector<ClassId>{0, 0}));
  EXPECT_EQ(pool_bytes(t, a), 300);
  EXPECT_FALSE(default_allocation(b.g, t, program_order(2), 299, &a, &why));
  // With room for one class per size, that is the default.
  ASSERT_TRUE(default_allocation(b.g, t, program_order(2), 350, &a, &why));
  EXPECT_EQ(a.cls, (std::vector<ClassId>{0, 1}));
}

}  // namespace
}  // namespace sa
