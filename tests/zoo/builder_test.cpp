// The builder's autograd and the numbers of a model small enough to check
// by hand.

#include <algorithm>

#include <gtest/gtest.h>

#include "graph/dataflow.h"
#include "graph/stats.h"
#include "graph/validate.h"
#include "zoo/builder.h"
#include "zoo/layers.h"
#include "zoo_test_util.h"

namespace sa {
namespace {

std::vector<std::string> types(const Graph& g) {
  std::vector<std::string> t;
  for (const Op& op : g.ops)
    t.push_back(op.type);
  return t;
}

// mlp-1 at batch 4 with SGD: data [4,64] -> layers.0 Linear(64,64) -> relu_
// -> head Linear(64,10) -> log_softmax -> nll_loss.
//
// Persistent (bytes): data 4*64*4 = 1024, labels 4*8 = 32; params
// layers.0.weight 64*64*4 = 16384, layers.0.bias 256, head.weight 10*64*4 =
// 2560, head.bias 40, each with a momentum buffer of its size:
// 1056 + 2 * 19240 = 39536.
//
// Ops and the transients each creates (lifetime: creator .. last access):
//   0 addmm        y0 1024             (0..9: read by ops 8 and 9)
//   1 relu_        updates y0
//   2 addmm        logits 160          (2..3)
//   3 _log_softmax logp 160            (3..7)
//   4 nll_loss     loss 4, tw 4        (4..5, 4..6)
//   5 ones_like    gloss 4             (5..6)
//   6 nll_loss_bw  glogp 160           (6..7)
//   7 log_sm_bw    glogits 160         (7..8)
//   8 linear_bw    gy0 1024 (8..9), g head.weight 2560 (8..13), g head.bias 40 (8..14)
//   9 threshold_bw gz0 1024            (9..10)
//  10 linear_bw    g layers.0.weight 16384 (10..11), g layers.0.bias 256 (10..12)
//                  (no gradient for data: it is an input)
//  11-14 sgd_mom_update, one per param in registration order
// Live transients peak at op 10: 2560 + 40 + 1024 + 16384 + 256 = 20264, so
// peak live = 39536 + 20264 = 59800. Distinct sizes: 1024, 32, 16384, 256,
// 2560, 40, 160, 4 = 8.
TEST(ZooBuilder, HandCheckedMlp) {
  const Graph g = testing::zoo("mlp-1", 4);
  EXPECT_EQ(types(g), (std::vector<std::string>{
                          "aten::addmm", "aten::relu_", "aten::addmm", "aten::_log_softmax",
                          "aten::nll_loss_forward", "aten::ones_like", "aten::nll_loss_backward",
                          "aten::_log_softmax_backward_data", "linear_backward",
                          "aten::threshold_backward", "linear_backward", "sgd_mom_update",
                          "sgd_mom_update", "sgd_mom_update", "sgd_mom_update"}));
  EXPECT_EQ(g.num_tensors(), 24);
  EXPECT_EQ(persistent_bytes(g), 39536);
  EXPECT_EQ(peak_live_bytes(g), 59800);
  const auto profile = live_bytes_profile(g, program_order(g.num_ops()));
  EXPECT_EQ(std::max_element(profile.begin(), profile.end()) - profile.begin(), 10);
  EXPECT_EQ(distinct_sizes(g), 8);
  // layers.0 forward: 2*4*64*64 multiply-adds + 4*64 bias adds; its bytes:
  // data 1024 + weight 16384 + bias 256 read, y0 1024 written.
  EXPECT_EQ(*g.ops[0].flops, 2.0 * 4 * 64 * 64 + 4 * 64);
  EXPECT_EQ(*g.ops[0].bytes_accessed, 1024 + 16384 + 256 + 1024);
  EXPECT_EQ(g.ops[11].name, "layers.0.weight");

  // Adam: a second moment per param, nothing else changes.
  const Graph adam = testing::zoo("mlp-1", 4, "adam");
  EXPECT_EQ(persistent_bytes(adam), 1056 + 3 * 19240);
  EXPECT_EQ(peak_live_bytes(adam), 1056 + 3 * 19240 + 20264);
  EXPECT_EQ(adam.ops[11].type, "adam_update");
  // Plain SGD: no state; the param is updated from its gradient alone.
  const Graph plain = testing::zoo("mlp-1", 4, "sgd-plain");
  EXPECT_EQ(persistent_bytes(plain), 1056 + 19240);
  EXPECT_EQ(plain.ops[11].type, "sgd_update");
  EXPECT_EQ(plain.ops[11].updates.size(), 1u);
  EXPECT_EQ(plain.name, "mlp-1-b4-sgdplain");
}

// Note [Gradient accumulation], case 2: p feeds two ReLUs whose outputs are
// added. The add passes its gradient g to both; after the second ReLU's
// backward created p's gradient, the first accumulates into it in place.
TEST(ZooBuilder, ExclusiveGradientAccumulatesInPlace) {
  using namespace zoo;
  Builder b("t", "test", Optimizer::kSgdMomentum);
  Var x = b.input("x", {2, 8});
  Var labels = b.input("labels", {2}, DType::kI64);
  Var p = linear(b, "fc", x, 8);
  Var s = add(b, relu(b, p), relu(b, p));
  Graph g = b.finish(cross_entropy(b, "loss", linear(b, "out", s, 3), labels));
  ASSERT_NO_THROW(validate_graph(g, "t"));
  std::vector<const Op*> relu_bw;
  for (const Op& op : g.ops)
    if (op.type == "aten::threshold_backward") relu_bw.push_back(&op);
  ASSERT_EQ(relu_bw.size(), 2u);
  ASSERT_EQ(relu_bw[0]->outputs.size(), 1u);  // creates p's gradient
  ASSERT_EQ(relu_bw[1]->updates.size(), 1u);  // adds into it
  EXPECT_EQ(relu_bw[1]->updates[0], relu_bw[0]->outputs[0]);
  for (const Op& op : g.ops)
    EXPECT_NE(op.name, "grad_accumulate");
}

// Case 3: s = relu(p) + p. The add's gradient g is both p's and relu(p)'s;
// the ReLU backward must not overwrite g, which its own op reads, so it
// makes a temporary and an out-of-place add makes p's gradient.
TEST(ZooBuilder, SharedGradientAccumulatesOutOfPlace) {
  using namespace zoo;
  Builder b("t", "test", Optimizer::kSgdMomentum);
  Var x = b.input("x", {2, 8});
  Var labels = b.input("labels", {2}, DType::kI64);
  Var p = linear(b, "fc", x, 8);
  Var s = add(b, relu(b, p), p);
  Graph g = b.finish(cross_entropy(b, "loss", linear(b, "out", s, 3), labels));
  ASSERT_NO_THROW(validate_graph(g, "t"));
  auto it = std::find_if(g.ops.begin(), g.ops.end(),
                         [](const Op& op) { return op.type == "aten::threshold_backward"; });
  ASSERT_NE(it, g.ops.end());
  const Op& relu_bw = *it;
  const Op& acc = *(it + 1);
  EXPECT_EQ(acc.type, "aten::add");
  EXPECT_EQ(acc.name, "grad_accumulate");
  EXPECT_TRUE(relu_bw.updates.empty());
  // acc reads g (the add's gradient, also read by relu_bw) and the temporary.
  ASSERT_EQ(acc.inputs.size(), 2u);
  EXPECT_NE(std::find(relu_bw.inputs.begin(), relu_bw.inputs.end(), acc.inputs[0]),
            relu_bw.inputs.end());
  EXPECT_EQ(acc.inputs[1], relu_bw.outputs[0]);
  // fc's backward then reads the accumulated gradient.
  const Op& fc_bw = *(it + 2);
  EXPECT_EQ(fc_bw.name, "fc");
  EXPECT_EQ(fc_bw.inputs[0], acc.outputs[0]);
}

// A weight used at every step of a sequence gets one gradient tensor,
// created by the last step's backward and updated in place by the others.
TEST(ZooBuilder, SharedWeightsAccumulateInPlace) {
  const Graph g = testing::zoo("rnn-1-1k", 2, "sgd", 5);
  TensorId w = -1, grad = -1;
  for (int t = 0; t < g.num_tensors(); ++t) {
    if (g.tensors[t].name == "lstm.weight_hh_l0") w = t;
    if (g.tensors[t].name == "lstm.weight_hh_l0.grad") grad = t;
  }
  ASSERT_GE(w, 0);
  ASSERT_GE(grad, 0);
  int reads = 0, creates = 0, updates = 0;
  for (const Op& op : g.ops) {
    if (op.phase != Phase::kBackward) continue;
    reads += std::count(op.inputs.begin(), op.inputs.end(), w);
    creates += std::count(op.outputs.begin(), op.outputs.end(), grad);
    updates += std::count(op.updates.begin(), op.updates.end(), grad);
  }
  EXPECT_EQ(reads, 5);  // the recurrent matmul's backward at every step
  EXPECT_EQ(creates, 1);
  EXPECT_EQ(updates, 4);
}

}  // namespace
}  // namespace sa
