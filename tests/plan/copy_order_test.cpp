// plan/copy_order.h (Note [Copy order]) on hand-built plans in release
// order: which copy each stream starts first, the keys the copies take, and
// that the plan written again in that order keeps every wait pointing to an
// earlier step and simulates as the picker's simulation did. Every op takes
// 1 us and every copy 1 us per byte (each direction alone or both at once),
// so each timeline below is worked out by hand.

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "plan/copy_order.h"
#include "plan/simulator.h"
#include "test_util.h"

namespace sa {
namespace {

using testing::GraphBuilder;

// 1 B/us each way, and 2 B/us together: copies in both directions at once
// do not slow each other down.
DeviceProfile copy_order_link() {
  DeviceProfile d;
  d.h2d_gbps = 0.001;
  d.d2h_gbps = 0.001;
  d.duplex_gbps = 0.002;
  return d;
}

// A plan written step by step in release order, with each step's key (the
// position of its release: Note [Copy order]). Copies name object 0; the
// picker and the simulator do not look at objects.
struct ReleaseOrderPlan {
  Plan p;
  std::vector<int32_t> key;
  StepId add(StepKind kind, int32_t subject, int32_t k, std::vector<StepId> waits = {}) {
    Step s = Step::of(kind, subject,
                      kind == StepKind::kCompute || kind == StepKind::kRecompute ? kNoObject : 0);
    s.wait_begin = static_cast<int32_t>(p.waits.size());
    p.waits.insert(p.waits.end(), waits.begin(), waits.end());
    s.wait_end = static_cast<int32_t>(p.waits.size());
    p.steps.push_back(s);
    key.push_back(k);
    return p.num_steps() - 1;
  }
  StepId compute(OpId o, std::vector<StepId> waits = {}) {
    return add(StepKind::kCompute, o, o, std::move(waits));
  }
};

// A graph of `ops` ops of 1 us and the given tensors (their kinds do not
// matter here).
GraphBuilder ops_and_tensors(int ops, std::vector<int64_t> bytes) {
  GraphBuilder b;
  for (int64_t x : bytes)
    b.tensor(x, TensorKind::kActivation);
  for (int o = 0; o < ops; ++o)
    b.op({}, {}, {}, 1.0);
  return b;
}

// p written again as the planner writes it (plan/swap/writer.cpp): each
// stream's copies take that stream's places in the picked order, with their
// new keys, and the steps are sorted on (key, rank), stably.
Plan written_in_picked_order(const Plan& p, std::vector<int32_t> key, const CopyOrder& co) {
  std::vector<StepId> visit(p.num_steps());
  size_t next[2] = {0, 0};
  for (StepId s = 0; s < p.num_steps(); ++s) {
    const StepKind kind = p.steps[s].kind;
    visit[s] = s;
    if (kind != StepKind::kSwapIn && kind != StepKind::kSwapOut) continue;
    const int lane = kind == StepKind::kSwapIn ? 0 : 1;
    visit[s] = co.steps[lane][next[lane]];
    key[visit[s]] = co.keys[lane][next[lane]];
    ++next[lane];
  }
  std::stable_sort(visit.begin(), visit.end(), [&](StepId a, StepId b) {
    return std::pair(key[a], rank_of(p.steps[a].kind)) <
           std::pair(key[b], rank_of(p.steps[b].kind));
  });
  std::vector<StepId> new_id(p.num_steps());
  for (StepId k = 0; k < p.num_steps(); ++k)
    new_id[visit[k]] = k;
  Plan w;
  for (StepId old : visit) {
    Step s = p.steps[old];
    s.wait_begin = static_cast<int32_t>(w.waits.size());
    for (StepId x : p.waits_of(old))
      w.waits.push_back(new_id[x]);
    s.wait_end = static_cast<int32_t>(w.waits.size());
    w.steps.push_back(s);
  }
  return w;
}

// Note [Copy order]: written again in the picked order, the plan's waits
// all point to earlier steps, and simulating it gives the picker's
// simulation.
void expect_written_plan_simulates_the_same(const Graph& g, const ReleaseOrderPlan& r,
                                            const CopyOrder& co) {
  const Plan w = written_in_picked_order(r.p, r.key, co);
  for (StepId s = 0; s < w.num_steps(); ++s)
    for (StepId x : w.waits_of(s))
      EXPECT_LT(x, s) << "step " << s << " waits for step " << x;
  const std::vector<double> op_us(g.num_ops(), 1.0);
  const SimResult again = Simulator().run(g, w, op_us, copy_order_link());
  ASSERT_TRUE(again.ok) << again.error;
  EXPECT_EQ(again.iteration_us, co.sim.iteration_us);
  EXPECT_EQ(again.stall_us, co.sim.stall_us);
}

// The Note's drawing. v (10 B) is evicted after op 1 for x (10 B, needed
// by op 9), which comes into v's memory; y (5 B, needed by op 3) comes into
// memory freed after op 2. In release order in(x) goes first and waits for
// out(v); in deadline order in(y) runs while out(v) does (C0 C1 C2 run
// [0,3) in both):
//   d2h                 out(v) [2,12)
//   release order   h2d in(x) [12,22)  in(y) [22,27)   C3 [27,28) .. C9 [33,34)
//   deadline order  h2d in(y) [3,8)    in(x) [12,22)   C3 [8,9)   .. C9 [22,23)
// in(x) may sit at key 1 (its release, and out(v)'s key) but follows in(y)
// on its stream, so it takes in(y)'s key, 2.
TEST(CopyOrder, DeadlineOrderStartsTheSwapInDueFirst) {
  GraphBuilder b = ops_and_tensors(10, {10, 10, 5});
  const TensorId v = 0, x = 1, y = 2;
  ReleaseOrderPlan r;
  r.compute(0);
  const StepId c1 = r.compute(1);
  const StepId out_v = r.add(StepKind::kSwapOut, v, 1, {c1});
  const StepId in_x = r.add(StepKind::kSwapIn, x, 1, {out_v});
  const StepId c2 = r.compute(2);
  const StepId in_y = r.add(StepKind::kSwapIn, y, 2, {c2});
  r.compute(3, {in_y});
  for (OpId o = 4; o < 9; ++o)
    r.compute(o);
  r.compute(9, {in_x});
  const std::vector<double> op_us(10, 1.0);
  Simulator sim;
  const SimResult release = sim.run(b.g, r.p, op_us, copy_order_link());
  ASSERT_TRUE(release.ok) << release.error;
  EXPECT_EQ(release.iteration_us, 34);
  EXPECT_EQ(release.stall_us, 24);

  CopyOrder co;
  ASSERT_TRUE(order_copies_by_deadline(b.g, r.p, r.key, op_us, copy_order_link(), sim, &co));
  EXPECT_EQ(co.steps[0], (std::vector<StepId>{in_y, in_x}));
  EXPECT_EQ(co.keys[0], (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(co.steps[1], (std::vector<StepId>{out_v}));
  EXPECT_EQ(co.keys[1], (std::vector<int32_t>{1}));
  ASSERT_TRUE(co.sim.ok) << co.sim.error;
  EXPECT_EQ(co.sim.iteration_us, 23);
  EXPECT_EQ(co.sim.stall_us, 13);
  expect_written_plan_simulates_the_same(b.g, r, co);
}

// Equal deadlines go in release order (the earlier key, then plan order),
// not shortest first. z (20 B) keeps the link busy until 20 while p (30
// B, released at 0), r (20 B, whose memory an input u's drop after op 1
// frees) and q (10 B, released at 1) become ready; all three are due at op
// 2: h2d z [0,20) p [20,50) r [50,70) q [70,80), C2 [80,81), C3 [81,82).
TEST(CopyOrder, EqualDeadlinesGoInReleaseOrder) {
  GraphBuilder b = ops_and_tensors(4, {20, 30, 20, 10, 10});
  const TensorId z = 0, p = 1, rr = 2, q = 3, u = 4;
  ReleaseOrderPlan r;
  const StepId in_z = r.add(StepKind::kSwapIn, z, -1);
  const StepId c0 = r.compute(0);
  const StepId in_p = r.add(StepKind::kSwapIn, p, 0, {c0});
  const StepId c1 = r.compute(1);
  const StepId drop_u = r.add(StepKind::kDrop, u, 1, {c1});
  const StepId in_r = r.add(StepKind::kSwapIn, rr, 1, {drop_u});
  const StepId in_q = r.add(StepKind::kSwapIn, q, 1, {c1});
  r.compute(2, {in_p, in_r, in_q});
  r.compute(3, {in_z});
  const std::vector<double> op_us(4, 1.0);
  Simulator sim;
  CopyOrder co;
  ASSERT_TRUE(order_copies_by_deadline(b.g, r.p, r.key, op_us, copy_order_link(), sim, &co));
  EXPECT_EQ(co.steps[0], (std::vector<StepId>{in_z, in_p, in_r, in_q}));
  EXPECT_EQ(co.keys[0], (std::vector<int32_t>{-1, 0, 1, 1}));
  EXPECT_TRUE(co.steps[1].empty());
  EXPECT_EQ(co.sim.iteration_us, 82);
  expect_written_plan_simulates_the_same(b.g, r, co);
}

// A swap-out is due at the first op that waits for it, or earlier when a
// swap-in due earlier waits for it. out(u) (released at 1) frees memory
// op 5 needs; out(v) (released at 1 too, after it in plan order) frees the
// memory x comes into for op 3, so it goes first:
//   release   d2h out(u) [2,12) out(v) [12,22)  h2d in(x) [22,32)  C3 [32,33) C5 [34,35)
//   deadline  d2h out(v) [2,12) out(u) [12,22)  h2d in(x) [12,22)  C3 [22,23) C5 [24,25)
TEST(CopyOrder, ASwapOutIsDueWhenTheSwapInWaitingForItIs) {
  GraphBuilder b = ops_and_tensors(6, {10, 10, 10});
  const TensorId u = 0, v = 1, x = 2;
  ReleaseOrderPlan r;
  r.compute(0);
  const StepId c1 = r.compute(1);
  const StepId out_u = r.add(StepKind::kSwapOut, u, 1, {c1});
  const StepId out_v = r.add(StepKind::kSwapOut, v, 1, {c1});
  const StepId in_x = r.add(StepKind::kSwapIn, x, 1, {out_v});
  r.compute(2);
  r.compute(3, {in_x});
  r.compute(4);
  r.compute(5, {out_u});
  const std::vector<double> op_us(6, 1.0);
  Simulator sim;
  const SimResult release = sim.run(b.g, r.p, op_us, copy_order_link());
  ASSERT_TRUE(release.ok) << release.error;
  EXPECT_EQ(release.iteration_us, 35);
  CopyOrder co;
  ASSERT_TRUE(order_copies_by_deadline(b.g, r.p, r.key, op_us, copy_order_link(), sim, &co));
  EXPECT_EQ(co.steps[1], (std::vector<StepId>{out_v, out_u}));
  EXPECT_EQ(co.keys[1], (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(co.steps[0], (std::vector<StepId>{in_x}));
  EXPECT_EQ(co.keys[0], (std::vector<int32_t>{1}));
  EXPECT_EQ(co.sim.iteration_us, 25);
  expect_written_plan_simulates_the_same(b.g, r, co);
}

// A recompute runs just before the op at the next compute step, so a copy
// it waits for is due at that op. x (read by a recompute of op 0 before op
// 2) goes before y (read by op 3), though y comes first in release order;
// z keeps the link busy until 20:
//   release   h2d z [0,20) y [20,30) x [30,40)   R [40,41) C2 [41,42) C3 [42,43) C4 [43,44)
//   deadline  h2d z [0,20) x [20,30) y [30,40)   R [30,31) C2 [31,32) C3 [40,41) C4 [41,42)
TEST(CopyOrder, ACopyARecomputeWaitsForIsDueAtTheNextOp) {
  GraphBuilder b = ops_and_tensors(5, {20, 10, 10});
  const TensorId z = 0, y = 1, x = 2;
  ReleaseOrderPlan r;
  const StepId in_z = r.add(StepKind::kSwapIn, z, -1);
  const StepId c0 = r.compute(0);
  const StepId in_y = r.add(StepKind::kSwapIn, y, 0, {c0});
  const StepId in_x = r.add(StepKind::kSwapIn, x, 0, {c0});
  r.compute(1);
  const StepId again = r.add(StepKind::kRecompute, 0, 2, {in_x});
  r.compute(2, {again});
  r.compute(3, {in_y});
  r.compute(4, {in_z});
  const std::vector<double> op_us(5, 1.0);
  Simulator sim;
  const SimResult release = sim.run(b.g, r.p, op_us, copy_order_link());
  ASSERT_TRUE(release.ok) << release.error;
  EXPECT_EQ(release.iteration_us, 44);
  CopyOrder co;
  ASSERT_TRUE(order_copies_by_deadline(b.g, r.p, r.key, op_us, copy_order_link(), sim, &co));
  EXPECT_EQ(co.steps[0], (std::vector<StepId>{in_z, in_x, in_y}));
  EXPECT_EQ(co.keys[0], (std::vector<int32_t>{-1, 0, 0}));
  EXPECT_EQ(co.sim.iteration_us, 42);
  EXPECT_EQ(co.sim.compute_us, 6);  // the recompute too
  expect_written_plan_simulates_the_same(b.g, r, co);
}

// A copy is started only if its key stays below the deadline of every copy
// of its stream still to place; otherwise the stream waits for the most
// urgent one. in(a) can start after op 0 but is keyed at 3; in(b), due at
// op 3, waits for a 100-B swap-out. Started first, in(a) would push in(b)'s
// key to 3, after op 3 that waits for it (a wait to a later step). So the
// link idles until out(w) ends: h2d in(b) [101,111) in(a) [111,121),
// C3 [111,112), C4 [121,122).
TEST(CopyOrder, ACopyWaitsRatherThanPassAnotherCopysDeadline) {
  GraphBuilder b = ops_and_tensors(5, {100, 10, 10});
  const TensorId w = 0, bb = 1, a = 2;
  ReleaseOrderPlan r;
  const StepId c0 = r.compute(0);
  const StepId out_w = r.add(StepKind::kSwapOut, w, 0, {c0});
  const StepId in_b = r.add(StepKind::kSwapIn, bb, 0, {out_w});
  r.compute(1);
  r.compute(2);
  r.compute(3, {in_b});
  const StepId in_a = r.add(StepKind::kSwapIn, a, 3, {c0});
  r.compute(4, {in_a});
  const std::vector<double> op_us(5, 1.0);
  Simulator sim;
  CopyOrder co;
  ASSERT_TRUE(order_copies_by_deadline(b.g, r.p, r.key, op_us, copy_order_link(), sim, &co));
  EXPECT_EQ(co.steps[0], (std::vector<StepId>{in_b, in_a}));
  EXPECT_EQ(co.keys[0], (std::vector<int32_t>{0, 3}));
  EXPECT_EQ(co.steps[1], (std::vector<StepId>{out_w}));
  EXPECT_EQ(co.sim.iteration_us, 122);
  expect_written_plan_simulates_the_same(b.g, r, co);
}

// order_copies_by_deadline declines (false, *out untouched) a plan without
// copies, and the waits only the baselines' directives make: a swap-in
// waiting for a swap-in, a swap-out or a drop waiting for a copy. A swap-in
// waiting for a swap-out is handled (the tests above).
TEST(CopyOrder, DeclinesPlansWithoutCopiesOrWithWaitsItDoesNotHandle) {
  GraphBuilder b = ops_and_tensors(2, {10, 10});
  const std::vector<double> op_us(2, 1.0);
  Simulator sim;
  auto declines = [&](const ReleaseOrderPlan& r) {
    CopyOrder co;
    co.keys[0] = {42};
    const bool ordered =
        order_copies_by_deadline(b.g, r.p, r.key, op_us, copy_order_link(), sim, &co);
    EXPECT_EQ(co.keys[0], std::vector<int32_t>{42});  // left alone
    EXPECT_TRUE(co.steps[0].empty());
    return !ordered;
  };
  {
    ReleaseOrderPlan r;
    r.compute(0);
    r.compute(1);
    EXPECT_TRUE(declines(r)) << "no copy";
  }
  {
    ReleaseOrderPlan r;
    const StepId c0 = r.compute(0);
    const StepId in0 = r.add(StepKind::kSwapIn, 0, 0, {c0});
    const StepId in1 = r.add(StepKind::kSwapIn, 1, 0, {in0});
    r.compute(1, {in1});
    EXPECT_TRUE(declines(r)) << "a swap-in waits for a swap-in";
  }
  {
    ReleaseOrderPlan r;
    const StepId in0 = r.add(StepKind::kSwapIn, 0, -1);
    r.compute(0, {in0});
    r.add(StepKind::kSwapOut, 1, 0, {in0});
    r.compute(1);
    EXPECT_TRUE(declines(r)) << "a swap-out waits for a swap-in";
  }
  {
    ReleaseOrderPlan r;
    const StepId in0 = r.add(StepKind::kSwapIn, 0, -1);
    r.compute(0, {in0});
    r.add(StepKind::kDrop, 0, 0, {in0});
    r.compute(1);
    EXPECT_TRUE(declines(r)) << "a drop waits for a swap-in";
  }
}

}  // namespace
}  // namespace sa
