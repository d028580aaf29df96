#include <gtest/gtest.h>

#include "graph/dataflow.h"
#include "graph/validate.h"
#include "test_util.h"

namespace sa {
namespace {

using testing::GraphBuilder;
using V = std::vector<OpId>;

V to_vec(std::span<const OpId> s) {
  return V(s.begin(), s.end());
}

// w (param) is read by ops 0 and 1, updated by op 2, read by op 3.
//   op0: a = f(w)      op1: b = g(w)      op2: w -= h(a, b)     op3: c = k(w)
// Edges: 0→2, 1→2 (readers before the update), 2→3 (read after update),
// and 0→2, 1→2 again through a and b (deduplicated).
TEST(Dataflow, UpdatesOrderEarlierAndLaterAccesses) {
  GraphBuilder b;
  TensorId w = b.tensor(8, TensorKind::kParam);
  TensorId a = b.tensor(4, TensorKind::kActivation);
  TensorId bb = b.tensor(4, TensorKind::kActivation);
  TensorId c = b.tensor(4, TensorKind::kActivation);
  b.op({w}, {a});
  b.op({w}, {bb});
  b.op({a, bb}, {}, {w});
  b.op({w}, {c});
  validate_graph(b.g, "test");
  Dataflow df(b.g);
  EXPECT_EQ(to_vec(df.preds(0)), V{});
  EXPECT_EQ(to_vec(df.preds(1)), V{});  // two reads of w: unordered
  EXPECT_EQ(to_vec(df.preds(2)), (V{0, 1}));
  EXPECT_EQ(to_vec(df.preds(3)), V{2});
  EXPECT_EQ(to_vec(df.succs(0)), V{2});
  EXPECT_EQ(df.num_edges(), 3);
  EXPECT_EQ(df.creator(a), 0);
  EXPECT_EQ(df.creator(w), kNoOp);
  ASSERT_EQ(df.uses(w).size(), 4u);
  EXPECT_EQ(df.uses(w)[2].op, 2);
  EXPECT_EQ(df.uses(w)[2].access, Access::kUpdate);

  EXPECT_TRUE(is_topological(df, V{1, 0, 2, 3}));
  std::string why;
  EXPECT_FALSE(is_topological(df, V{0, 2, 1, 3}, &why));
  EXPECT_EQ(why, "op 2 at position 1 runs before op 1 at position 2, which it depends on");
  EXPECT_FALSE(is_topological(df, V{0, 1, 2}, &why));
  EXPECT_FALSE(is_topological(df, V{0, 1, 2, 2}, &why));
  EXPECT_EQ(why, "op 2 appears twice (positions 2 and 3)");
}

TEST(Dataflow, SuccessiveUpdatesChain) {
  GraphBuilder b;
  TensorId w = b.tensor(8, TensorKind::kParam);
  b.op({}, {}, {w});
  b.op({}, {}, {w});
  b.op({}, {}, {w});
  Dataflow df(b.g);
  EXPECT_EQ(to_vec(df.preds(1)), V{0});
  EXPECT_EQ(to_vec(df.preds(2)), V{1});
}

}  // namespace
}  // namespace sa
