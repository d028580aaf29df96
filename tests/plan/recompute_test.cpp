// Recompute steps (Note [Plan semantics], Note [Verified rules] R1-R3): a
// hand-built plan that drops an activation and makes it again, checked by
// the verifier, timed by the simulator and written and read back; each way
// of getting a recompute wrong is rejected with its reason.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/validate.h"
#include "plan/plan.h"
#include "plan/plan_io.h"
#include "plan/simulator.h"
#include "plan/verify.h"
#include "test_util.h"

namespace sa {
namespace {

using testing::GraphBuilder;

// fwd_mid_bwd_sgd_graph() of test_util.h: fwd a = f(x, w), mid b = g(a),
// bwd gw = h(b, a), sgd w -= gw.
Graph small_graph() {
  Graph g = testing::fwd_mid_bwd_sgd_graph();
  validate_graph(g, "small_graph");
  return g;
}
constexpr TensorId kW = 0, kX = 1, kA = 2, kB = 3, kGw = 4;

struct Builder {
  Plan p;
  // Objects: x 0, w 1, a 2, b 3, gw 4; per_op: each op's access objects.
  explicit Builder(const Graph& g, const std::vector<std::vector<ObjectId>>& per_op = {
                                       {2, 0, 1}, {3, 2}, {4, 3, 2}, {4, 1}}) {
    p.method = "hand";
    p.memory_budget = 500;
    for (OpId o = 0; o < g.num_ops(); ++o)
      p.order.push_back(o);
    p.pool.class_bytes = {100};
    p.pool.class_count = {5};
    p.layout_pool();
    p.tensor_class.assign(g.num_tensors(), 0);
    p.workspace_class.assign(g.num_ops(), -1);
    p.access_begin = {0};
    for (const auto& objs : per_op) {
      p.access_objects.insert(p.access_objects.end(), objs.begin(), objs.end());
      p.access_begin.push_back(static_cast<int32_t>(p.access_objects.size()));
    }
  }
  StepId add(StepKind kind, int32_t subject, ObjectId obj, std::vector<StepId> waits,
             std::vector<ObjectId> objs = {}) {
    Step st = Step::of(kind, subject, obj);
    st.wait_begin = static_cast<int32_t>(p.waits.size());
    p.waits.insert(p.waits.end(), waits.begin(), waits.end());
    st.wait_end = static_cast<int32_t>(p.waits.size());
    st.obj_begin = static_cast<int32_t>(p.recompute_objects.size());
    p.recompute_objects.insert(p.recompute_objects.end(), objs.begin(), objs.end());
    st.obj_end = static_cast<int32_t>(p.recompute_objects.size());
    p.steps.push_back(st);
    return p.num_steps() - 1;
  }
  // s0 in x, s1 in w, s2 C0 (fwd): the start every plan here shares.
  Builder& run_fwd() {
    add(StepKind::kSwapIn, kX, 0, {});
    add(StepKind::kSwapIn, kW, 1, {});
    add(StepKind::kCompute, 0, kNoObject, {0, 1});
    return *this;
  }
};

// a is dropped after mid and made again by running fwd before bwd:
//   s0 in x  s1 in w  s2 C0 [a]  s3 C1 [b]  s4 drop a  s5 R0 [a, x, w]
//   s6 drop x  s7 C2 [gw]  s8 C3  s9 out w
Plan recompute_plan(const Graph& g) {
  Builder b(g);
  b.run_fwd();
  b.add(StepKind::kCompute, 1, kNoObject, {});
  b.add(StepKind::kDrop, kA, 2, {3});
  b.add(StepKind::kRecompute, 0, kNoObject, {4}, {2, 0, 1});
  b.add(StepKind::kDrop, kX, 0, {5});
  b.add(StepKind::kCompute, 2, kNoObject, {});
  b.add(StepKind::kCompute, 3, kNoObject, {});
  b.add(StepKind::kSwapOut, kW, 1, {8});
  return b.p;
}

// Appends compute steps for the ops of the order that have none yet, so that
// the plan gets past the order checks (O2) to the walk.
void complete(Builder& b) {
  std::vector<char> has(4, 0);
  for (const Step& st : b.p.steps)
    if (st.kind == StepKind::kCompute) has[st.op()] = 1;
  for (OpId o = 0; o < 4; ++o)
    if (!has[o]) b.add(StepKind::kCompute, o, kNoObject, {});
}

std::string violation(const Graph& g, const Plan& p) {
  const VerifyResult r = verify_plan(g, p);
  return r.ok ? "(verified)" : r.violation;
}

TEST(Recompute, HandBuiltPlanVerifiesSimulatesAndRoundTrips) {
  const Graph g = small_graph();
  const Plan p = recompute_plan(g);
  EXPECT_EQ(violation(g, p), "(verified)");
  // Unit op times: the recompute is one more op on the compute stream.
  DeviceProfile d;
  d.name = "test";
  d.h2d_gbps = d.d2h_gbps = 0.001;  // 1 B/us: each 100 B copy takes 100 us
  d.duplex_gbps = 0.002;
  const std::vector<double> op_us = {10, 10, 10, 10};
  const SimResult s = Simulator().run(g, p, op_us, d);
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.compute_us, 50);
  EXPECT_EQ(s.recompute_us, 10);
  // x then w in on the one host-to-device stream (100 us each), then C0 C1
  // R0 C2 C3 (50 us), then w out (100 us).
  EXPECT_DOUBLE_EQ(s.iteration_us, 350);
  EXPECT_EQ(plan_traffic(g, p).recomputes, 1);
  const std::string text = plan_to_json(g, p);
  EXPECT_NE(text.find("[\"recompute\",0,[2,0,1],[4]]"), std::string::npos) << text;
  const Plan back = parse_plan(g, text, "p.json");
  EXPECT_EQ(plan_to_json(g, back), text);
  EXPECT_EQ(violation(g, back), "(verified)");
}

TEST(Recompute, DroppingTheOnlyCopyNeedsARecomputeBeforeTheNextUse) {
  const Graph g = small_graph();
  // The plan above without its recompute: the drop of a loses it.
  Builder b(g);
  b.run_fwd();
  b.add(StepKind::kCompute, 1, kNoObject, {});
  b.add(StepKind::kDrop, kA, 2, {3});
  complete(b);
  EXPECT_NE(violation(g, b.p).find("drop loses the latest value of tensor 2 'a'"),
            std::string::npos)
      << violation(g, b.p);
}

TEST(Recompute, InputsMustHoldWhatTheOpRead) {
  const Graph g = small_graph();
  // The recompute after sgd updated w reads a newer w than fwd did.
  Builder b(g);
  b.run_fwd();
  b.add(StepKind::kCompute, 1, kNoObject, {});
  b.add(StepKind::kCompute, 2, kNoObject, {});
  b.add(StepKind::kCompute, 3, kNoObject, {});
  b.add(StepKind::kRecompute, 0, kNoObject, {}, {3, 0, 1});
  EXPECT_NE(violation(g, b.p).find("reads tensor 0 'w' in object 1, which holds version 1, but op "
                                   "0 'fwd' (test::op) read version 0 when it ran"),
            std::string::npos)
      << violation(g, b.p);
}

TEST(Recompute, InputsMustBeOnTheDevice) {
  const Graph g = small_graph();
  // x dropped before the recompute instead of after.
  Builder b(g);
  b.run_fwd();
  b.add(StepKind::kDrop, kX, 0, {2});
  b.add(StepKind::kCompute, 1, kNoObject, {});
  b.add(StepKind::kDrop, kA, 2, {4});
  b.add(StepKind::kRecompute, 0, kNoObject, {5}, {2, 0, 1});
  complete(b);
  EXPECT_NE(violation(g, b.p).find("(recompute of op 0 'fwd' (test::op)) reads tensor 1 'x' from "
                                   "object 0, but tensor 1 'x' is not on the device (it was "
                                   "dropped at step 3"),
            std::string::npos)
      << violation(g, b.p);
}

TEST(Recompute, OnlyOpsThatMayRunAgain) {
  const Graph g = small_graph();
  Builder b(g);
  b.add(StepKind::kRecompute, 3, kNoObject, {}, {4, 1});
  EXPECT_NE(violation(g, b.p).find("op 3 'sgd' (test::op) may not run again (it updates tensor 0 "
                                   "'w' in place, and only in-place updates of transients are "
                                   "replayed)"),
            std::string::npos)
      << violation(g, b.p);
  Graph marked = g;
  marked.ops[1].recompute = false;
  Builder c(marked);
  c.add(StepKind::kRecompute, 1, kNoObject, {}, {3, 2});
  EXPECT_NE(violation(marked, c.p).find("the graph marks it recompute: false"), std::string::npos)
      << violation(marked, c.p);
  // One object per access slot.
  Builder d(g);
  d.add(StepKind::kRecompute, 0, kNoObject, {}, {2, 0});
  EXPECT_NE(violation(g, d.p).find("but its op needs 3"), std::string::npos) << violation(g, d.p);
  // An object past the pool's, worded as every other step's (the mutation
  // test's shrink-class at SA_TEST_SEED=114 met "but the plan has" here).
  Plan e = recompute_plan(g);
  for (const Step& st : e.steps)
    if (st.kind == StepKind::kRecompute) e.recompute_objects[st.obj_begin] = e.num_objects();
  EXPECT_NE(violation(g, e).find("puts tensor 2 'a' in object 5, but the pool has 5 objects"),
            std::string::npos)
      << violation(g, e);
}

TEST(Recompute, NotBeforeTheOpRunsNorOverALiveCopy) {
  const Graph g = small_graph();
  Builder b(g);
  b.add(StepKind::kSwapIn, kX, 0, {});
  b.add(StepKind::kSwapIn, kW, 1, {});
  b.add(StepKind::kRecompute, 0, kNoObject, {0, 1}, {2, 0, 1});
  complete(b);
  EXPECT_NE(violation(g, b.p).find("runs op 0 'fwd' (test::op) again before its compute step"),
            std::string::npos)
      << violation(g, b.p);
  Builder c(g);
  c.run_fwd();
  c.add(StepKind::kRecompute, 0, kNoObject, {}, {3, 0, 1});
  complete(c);
  EXPECT_NE(violation(g, c.p).find("recreates tensor 2 'a', but tensor 2 'a' is on the device "
                                   "already, in object 2"),
            std::string::npos)
      << violation(g, c.p);
}

// Note [Update replay]: fwd a = f(x, w), relu updates a in place, mid b =
// g(a), bwd gw = h(b, a), sgd w -= gw. Objects: x 0, w 1, a 2, b 3, gw 4.
Graph relu_graph() {
  Graph g = testing::fwd_mid_bwd_sgd_graph(true);
  validate_graph(g, "relu_graph");
  return g;
}

// a (version 2, after relu) is dropped after mid and made again before bwd
// by fwd (version 1) and a replay of relu (version 2):
//   s0 in x  s1 in w  s2 C0 [a]  s3 C1 (relu)  s4 C2 [b]  s5 drop a
//   s6 R0 [a, x, w]  s7 R1 [a]  s8 C3 [gw]  s9 C4  s10 out w
// `replays` says how often s7 is there (0, 1 or 2 times); `replay_first`
// puts it before the recompute.
Plan relu_plan(const Graph& g, int replays = 1, bool replay_first = false) {
  Builder b(g, {{2, 0, 1}, {2}, {3, 2}, {4, 3, 2}, {4, 1}});
  b.run_fwd();
  b.add(StepKind::kCompute, 1, kNoObject, {});
  b.add(StepKind::kCompute, 2, kNoObject, {});
  const StepId dropped = b.add(StepKind::kDrop, kA, 2, {4});
  if (replay_first) b.add(StepKind::kRecompute, 1, kNoObject, {dropped}, {2});
  b.add(StepKind::kRecompute, 0, kNoObject, {dropped}, {2, 0, 1});
  for (int k = 0; k < replays && !replay_first; ++k)
    b.add(StepKind::kRecompute, 1, kNoObject, {}, {2});
  b.add(StepKind::kCompute, 3, kNoObject, {});
  const StepId sgd = b.add(StepKind::kCompute, 4, kNoObject, {});
  b.add(StepKind::kSwapOut, kW, 1, {sgd});
  return b.p;
}

TEST(Recompute, InPlaceUpdatesAreReplayedAfterTheRecompute) {
  const Graph g = relu_graph();
  EXPECT_TRUE(may_replay_update(g, g.ops[1]));
  EXPECT_FALSE(may_replay_update(g, g.ops[4]));  // sgd updates a parameter
  const Plan p = relu_plan(g);
  EXPECT_EQ(violation(g, p), "(verified)");
  const std::string text = plan_to_json(g, p);
  EXPECT_EQ(violation(g, parse_plan(g, text, "p.json")), "(verified)");
  const std::vector<double> op_us = {10, 10, 10, 10, 10};
  DeviceProfile d;
  d.name = "test";
  d.h2d_gbps = d.d2h_gbps = 0.001;
  d.duplex_gbps = 0.002;
  const SimResult s = Simulator().run(g, p, op_us, d);
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.recompute_us, 20);  // fwd and relu once more each
}

TEST(Recompute, AReplayMustFollowTheRecomputeOnce) {
  const Graph g = relu_graph();
  // Without the replay, bwd would read version 1 of a (before relu).
  EXPECT_NE(violation(g, relu_plan(g, 0))
                .find("(compute of op 3 'bwd' (test::op)) reads tensor 2 "
                      "'a' in object 2, which holds version 1, but the "
                      "latest is 2"),
            std::string::npos)
      << violation(g, relu_plan(g, 0));
  // Twice would apply relu to its own result.
  EXPECT_NE(violation(g, relu_plan(g, 2))
                .find("(recompute of op 1 'relu' (test::op)) updates tensor "
                      "2 'a' in object 2, which holds version 2, but op 1 "
                      "'relu' (test::op) updated version 1 when it ran"),
            std::string::npos)
      << violation(g, relu_plan(g, 2));
  // Before the recompute, a is not there to update.
  EXPECT_NE(violation(g, relu_plan(g, 1, true))
                .find("(recompute of op 1 'relu' (test::op)) updates tensor 2 'a' in object 2, "
                      "but tensor 2 'a' is not on the device (it was dropped at step 5"),
            std::string::npos)
      << violation(g, relu_plan(g, 1, true));
  // The graph may forbid the replay.
  Graph marked = g;
  marked.ops[1].recompute = false;
  EXPECT_NE(violation(marked, relu_plan(marked))
                .find("may not run again (the graph marks it recompute: "
                      "false)"),
            std::string::npos)
      << violation(marked, relu_plan(marked));
}

// Note [Recompute without updates]: fwd also updates a running statistic r
// (a buffer), as batch norm does; marked recompute_skips_updates, it runs
// again without r:
//   s0 in x  s1 in w  s2 in r  s3 C0 [a, x, w, r]  s4 C1  s5 drop a
//   s6 R0 [a, x, w]  s7 drop x  s8 C2  s9 C3  s10 out w  s11 out r
constexpr TensorId kR = 5;
Graph batch_norm_graph(bool skips) {
  Graph g = small_graph();
  g.tensors.push_back({100, TensorKind::kBuffer, "r", {}, {}});
  g.ops[0].updates = {kR};
  g.ops[0].recompute_skips_updates = skips;
  validate_graph(g, "batch_norm_graph");
  return g;
}
Plan batch_norm_plan(const Graph& g, std::vector<ObjectId> recompute_objects) {
  Builder b(g, {{2, 0, 1, 5}, {3, 2}, {4, 3, 2}, {4, 1}});
  b.p.pool.class_count = {6};
  b.p.memory_budget = 600;
  b.p.layout_pool();
  b.p.tensor_class.assign(g.num_tensors(), 0);
  b.add(StepKind::kSwapIn, kX, 0, {});
  b.add(StepKind::kSwapIn, kW, 1, {});
  b.add(StepKind::kSwapIn, kR, 5, {});
  b.add(StepKind::kCompute, 0, kNoObject, {0, 1, 2});
  b.add(StepKind::kCompute, 1, kNoObject, {});
  b.add(StepKind::kDrop, kA, 2, {4});
  b.add(StepKind::kRecompute, 0, kNoObject, {5}, std::move(recompute_objects));
  b.add(StepKind::kDrop, kX, 0, {6});
  b.add(StepKind::kCompute, 2, kNoObject, {});
  b.add(StepKind::kCompute, 3, kNoObject, {});
  b.add(StepKind::kSwapOut, kW, 1, {9});
  b.add(StepKind::kSwapOut, kR, 5, {6});
  return b.p;
}

TEST(Recompute, BatchNormRunsAgainWithoutItsRunningStatistics) {
  const Graph g = batch_norm_graph(true);
  EXPECT_TRUE(may_recompute(g.ops[0]));
  EXPECT_EQ(num_step_slots(g.ops[0], true), 3);
  EXPECT_EQ(num_step_slots(g.ops[0], false), 4);
  const Plan p = batch_norm_plan(g, {2, 0, 1});
  EXPECT_EQ(violation(g, p), "(verified)");
  const std::string text = plan_to_json(g, p);
  EXPECT_NE(text.find("[\"recompute\",0,[2,0,1],[5]]"), std::string::npos) << text;
  EXPECT_EQ(plan_to_json(g, parse_plan(g, text, "p.json")), text);
  // The step may not name r: the op's recompute has three slots.
  EXPECT_NE(violation(g, batch_norm_plan(g, {2, 0, 1, 5})).find("but its op needs 3"),
            std::string::npos);
  // Unmarked, the op updates r in place and may not run again at all.
  const Graph unmarked = batch_norm_graph(false);
  EXPECT_FALSE(may_recompute(unmarked.ops[0]));
  EXPECT_NE(violation(unmarked, batch_norm_plan(unmarked, {2, 0, 1, 5}))
                .find("may not run again (it updates tensor 5 'r' in place, and only in-place "
                      "updates of transients are replayed)"),
            std::string::npos)
      << violation(unmarked, batch_norm_plan(unmarked, {2, 0, 1, 5}));
}

// Note [Recompute through dead inputs]: bn's output b is read by relu
// alone, so it is dead once relu has run; relu's output y is read again
// by back. Tensors of 100 B: x 0, z 1, b 2, y 3, gy 4.
Graph dead_input_graph() {
  GraphBuilder b;
  b.tensor(100, TensorKind::kInput, "x");
  b.tensor(100, TensorKind::kActivation, "z");
  b.tensor(100, TensorKind::kActivation, "b");
  b.tensor(100, TensorKind::kActivation, "y");
  b.tensor(100, TensorKind::kGradient, "gy");
  b.op({0}, {1}, {}, 1, "conv");
  b.op({1}, {2}, {}, 1, "bn");
  b.op({2}, {3}, {}, 1, "relu");
  b.op({3, 1}, {4}, {}, 1, "back");
  validate_graph(b.g, "dead_input_graph");
  return b.g;
}

// y is dropped after relu and made again before back by running bn (into
// b's old object 2) and relu, which reads b there:
//   s0 in x  s1 C0 [z]  s2 drop x  s3 C1 [b]  s4 C2 [y]  s5 drop y
//   s6 R1 [b <- z]  (s7 between, when given)  R2 [y <- b]  C3 [gy]
Plan dead_input_plan(const Graph& g, bool swap_into_ghost) {
  Builder b(g, {{1, 0}, {2, 1}, {3, 2}, {0, 3, 1}});
  b.add(StepKind::kSwapIn, 0, 0, {});
  b.add(StepKind::kCompute, 0, kNoObject, {0});
  b.add(StepKind::kDrop, 0, 0, {1});
  b.add(StepKind::kCompute, 1, kNoObject, {});
  b.add(StepKind::kCompute, 2, kNoObject, {});
  b.add(StepKind::kDrop, 3, 3, {4});
  const StepId bn = b.add(StepKind::kRecompute, 1, kNoObject, {4}, {2, 1});
  // x back into b's object once bn's recompute wrote it: b's bytes are taken.
  if (swap_into_ghost) b.add(StepKind::kSwapIn, 0, 2, {bn});
  const StepId relu = b.add(StepKind::kRecompute, 2, kNoObject, {bn, 5}, {3, 2});
  b.add(StepKind::kCompute, 3, kNoObject, {relu});
  return b.p;
}

TEST(Recompute, ARecomputeMayReadADeadInputMadeAgainBeforeIt) {
  const Graph g = dead_input_graph();
  EXPECT_EQ(violation(g, dead_input_plan(g, false)), "(verified)");
  EXPECT_NE(violation(g, dead_input_plan(g, true))
                .find("step 8 (recompute of op 2 (relu)) reads tensor 2 'b' from object 2, but "
                      "tensor 2 'b' is not on the device"),
            std::string::npos)
      << violation(g, dead_input_plan(g, true));
}

}  // namespace
}  // namespace sa
