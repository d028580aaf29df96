#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "graph/dataflow.h"
#include "plan/simulator.h"
#include "plan/swap_planner.h"
#include "plan/verify.h"
#include "test_util.h"

namespace sa {
namespace {

using testing::GraphBuilder;
using testing::unit_link;

// Four 100-byte activations, two objects, 1 us per op:
//   op0: a = f()   op1: b = g(a)   op2: c = h(b)   op3: d = k(c)   op4: m(a, d)
// At op2, c needs an object: a (next use op4) is evicted; it has a future use
// and no host copy, so it is swapped out after its last use (op1). b dies
// after op2, c after op3; a comes back into c's object right after op3.
//   compute  C0 [0,1) C1 [1,2)                 C2 [102,103) C3 [103,104)            C4 [204,205)
//   d2h                out(a) [2,102)
//   h2d                                                     in(a) [104,204)
TEST(SwapPlanner, BeladyEvictsFurthestAndSwapsInEarly) {
  GraphBuilder b;
  auto a = b.tensor(100, TensorKind::kActivation);
  auto bb = b.tensor(100, TensorKind::kActivation);
  auto c = b.tensor(100, TensorKind::kActivation);
  auto d = b.tensor(100, TensorKind::kActivation);
  b.op({}, {a});
  b.op({a}, {bb});
  b.op({bb}, {c});
  b.op({c}, {d});
  b.op({a, d}, {});
  const SizeTable t = make_size_table(b.g);
  const std::vector<double> times(5, 1.0);
  SwapPlanner planner(b.g, t, times, unit_link());
  Plan p;
  const PlanResult planned = planner.plan(program_order(5), Allocation{{0}, {2}}, 200, {}, &p);
  ASSERT_TRUE(planned.ok) << planned.why;
  EXPECT_EQ(testing::describe_steps(p), "C0 C1 out0 C2 C3 in0 C4");
  Simulator sim;
  const SimResult r = sim.run(b.g, p, times, unit_link(), {true});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.iteration_us, 205);
  EXPECT_EQ(r.stall_us, 200);
  EXPECT_EQ(r.swap_in_bytes, 100);
  EXPECT_EQ(r.swap_out_bytes, 100);
  EXPECT_EQ(r.peak_device_bytes, 200);
  // op4 reads a from the object c had.
  EXPECT_EQ(p.objects_of(4)[0], p.objects_of(3)[1]);
}

// Two inputs come in over a 1 B/us link (Note [Copy order]), one 10-B and
// one 20-B object. x (20 B, needed at op4) takes bb's object, and bb, needed
// again at op5, is swapped out first; y (10 B, needed at op3, 20 us long)
// takes the object a frees at op2. In release order y waits behind x, which
// waits for bb's swap-out; in deadline order y goes first.
//   d2h               out(bb) [2,22)
//   release order   h2d in(x) [22,42) in(y) [42,52) in(bb) [73,93)   C3 [52,72) C5 [93,94)
//   deadline order  h2d in(y) [3,13) in(x) [22,42) in(bb) [43,63)    C3 [13,33) C5 [63,64)
TEST(SwapPlanner, DeadlineOrderCopiesTheMostUrgentFirst) {
  GraphBuilder b;
  auto a = b.tensor(10, TensorKind::kActivation);
  auto bb = b.tensor(20, TensorKind::kActivation);
  auto y = b.tensor(10, TensorKind::kInput);
  auto x = b.tensor(20, TensorKind::kInput);
  b.op({}, {a, bb});
  b.op({bb}, {});
  b.op({a}, {});
  b.op({y}, {});
  b.op({x}, {});
  b.op({bb}, {});
  const SizeTable t = make_size_table(b.g);
  const std::vector<double> times = {1, 1, 1, 20, 1, 1};
  SwapPlanner planner(b.g, t, times, unit_link());
  Simulator sim;
  Plan p;
  PlannerOptions release;
  release.deadline_copy_order = false;
  ASSERT_TRUE(planner.plan(program_order(6), Allocation{{0, 1}, {1, 1}}, 30, release, &p).ok);
  EXPECT_EQ(testing::describe_steps(p), "C0 C1 out1 in3 C2 in2 C3 drop2 C4 drop3 in1 C5");
  SimResult r = sim.run(b.g, p, times, unit_link());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.iteration_us, 94);
  EXPECT_EQ(r.stall_us, 69);

  // The walk writes release order whatever the option says; the copy-order
  // stage (Note [Planning stages]) puts the copies in deadline order.
  ASSERT_TRUE(planner.plan(program_order(6), Allocation{{0, 1}, {1, 1}}, 30, {}, &p).ok);
  EXPECT_EQ(testing::describe_steps(p), "C0 C1 out1 in3 C2 in2 C3 drop2 C4 drop3 in1 C5");
  SimResult picked;
  ASSERT_TRUE(
      put_copies_in_deadline_order(b.g, planner.last_keys(), times, unit_link(), sim, &p, &picked));
  EXPECT_EQ(testing::describe_steps(p), "C0 C1 out1 C2 in2 in3 C3 drop2 C4 drop3 in1 C5");
  r = sim.run(b.g, p, times, unit_link());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.iteration_us, 64);
  EXPECT_EQ(r.stall_us, 39);
  EXPECT_EQ(picked.iteration_us, 64);  // the simulation that chose the order is the plan's
  EXPECT_EQ(picked.stall_us, 39);
}

TEST(SwapPlanner, TooFewObjectsIsReported) {
  GraphBuilder b;
  auto a = b.tensor(100, TensorKind::kActivation);
  auto c = b.tensor(100, TensorKind::kActivation);
  b.op({}, {a});
  b.op({a}, {c});
  const SizeTable t = make_size_table(b.g);
  const std::vector<double> times(2, 1.0);
  SwapPlanner planner(b.g, t, times, unit_link());
  Plan p;
  const PlanResult planned = planner.plan(program_order(2), Allocation{{0}, {1}}, 100, {}, &p);
  EXPECT_FALSE(planned.ok);
  EXPECT_EQ(planned.why,
            "class 0 (100 B) has 1 objects but some op touches 2 of its items at once");
}

// A parameter read in forward and updated at the end. With room for
// everything, the steady state keeps it on the device: no copies at all.
// Without steady state it is fetched at the start and written back at the end.
TEST(SwapPlanner, SteadyStateKeepsPersistentTensorsResident) {
  GraphBuilder b;
  auto w = b.tensor(10, TensorKind::kParam);
  auto x = b.tensor(10, TensorKind::kInput);
  auto y = b.tensor(10, TensorKind::kActivation);
  auto gw = b.tensor(10, TensorKind::kGradient);
  b.op({w, x}, {y});
  b.op({y, x}, {gw});
  b.op({gw}, {}, {w});
  const SizeTable t = make_size_table(b.g);
  const std::vector<double> times(3, 1.0);
  SwapPlanner planner(b.g, t, times, unit_link());
  Plan p;
  ASSERT_TRUE(planner.plan(program_order(3), Allocation{{0}, {4}}, 40, {}, &p).ok);
  EXPECT_EQ(testing::describe_steps(p), "in1 C0 C1 drop1 C2");
  ASSERT_EQ(p.initial_resident.size(), 1u);
  EXPECT_EQ(p.initial_resident[0].tensor, w);

  PlannerOptions cold;
  cold.steady_state = false;
  ASSERT_TRUE(planner.plan(program_order(3), Allocation{{0}, {4}}, 40, cold, &p).ok);
  EXPECT_EQ(testing::describe_steps(p), "in0 in1 C0 C1 drop1 C2 out0");
  EXPECT_TRUE(p.initial_resident.empty());
}

// Note [Steady-state passes] (search/ga.h): momentum m, read only by the
// update at the end, is resident when pass 0 ends, so with no pass between
// it starts the iteration on the device (R = {w, m}). Four 10-byte objects,
// 1 us per op, 10 us per copy:
//   op0: y = f(w, x)   op1: z = g(y)   op2: gw = h(z, x, w)   op3: w, m += u(gw)
// No pass between: at op1, z evicts x (a drop: free at once; m's swap-out
// could not finish in time); x comes back for op2 in m's object, after m is
// written out; m comes back for op3 into z's (dead after op2), so at the
// end it is written out and copied into its own object again:
//   h2d   in x [0,10)  in x [11,21)  in m [22,32)            in m [43,53)
//   comp            C0 [10,11) C1 [11,12)  C2 [21,22)  C3 [32,33)
//   d2h   out m [0,10)                                  out m [33,43)
// With a pass between, m leaves R: x stays, and m is fetched once for the
// update and written back once:
//   h2d   in x [0,10)   in m [13,23)        comp  C0 C1 C2 [10,13)  C3 [23,24)
//   d2h   out m [24,34)
TEST(SwapPlanner, APassBetweenDropsFromTheResidentSetWhatTheIterationEvicts) {
  GraphBuilder b;
  auto w = b.tensor(10, TensorKind::kParam);
  auto m = b.tensor(10, TensorKind::kOptimizerState);
  auto x = b.tensor(10, TensorKind::kInput);
  auto y = b.tensor(10, TensorKind::kActivation);
  auto z = b.tensor(10, TensorKind::kActivation);
  auto gw = b.tensor(10, TensorKind::kGradient);
  b.op({w, x}, {y});
  b.op({y}, {z});
  b.op({z, x, w}, {gw});
  b.op({gw}, {}, {w, m});
  const SizeTable t = make_size_table(b.g);
  const std::vector<double> times(4, 1.0);
  SwapPlanner planner(b.g, t, times, unit_link());
  Simulator sim;
  auto resident = [](const Plan& p) {
    std::vector<TensorId> r;
    for (const ResidentTensor& rt : p.initial_resident)
      r.push_back(rt.tensor);
    std::sort(r.begin(), r.end());
    return r;
  };
  Plan p0, p1;
  PlannerOptions opt;
  ASSERT_TRUE(planner.plan(program_order(4), Allocation{{0}, {4}}, 40, opt, &p0).ok);
  EXPECT_EQ(resident(p0), (std::vector<TensorId>{w, m}));
  EXPECT_EQ(testing::describe_steps(p0), "out1 in2 C0 drop2 in2 C1 C2 drop2 in1 C3 out1 in1");
  opt.max_passes = 1;
  ASSERT_TRUE(planner.plan(program_order(4), Allocation{{0}, {4}}, 40, opt, &p1).ok);
  EXPECT_EQ(resident(p1), (std::vector<TensorId>{w}));
  EXPECT_EQ(testing::describe_steps(p1), "in2 C0 C1 C2 drop2 in1 C3 out1");
  const SimResult s0 = sim.run(b.g, p0, times, unit_link());
  const SimResult s1 = sim.run(b.g, p1, times, unit_link());
  ASSERT_TRUE(s0.ok && s1.ok) << s0.error << s1.error;
  EXPECT_EQ(s0.iteration_us, 53);
  EXPECT_EQ(s1.iteration_us, 34);
}

// Note [Home offsets], by hand, and why they are a gene: in a 100-B placed
// arena, w (20 B) is read by op0 and updated by op5:
//   op0: a = f(w)  op1: a2 = g(a)  op2: b = h(a2)  op3: c = k(b)  op4: gw = l(c)  op5: w += u(gw)
// (a 40, a2 20, b 40, c 60, gw 20 bytes). Pass 0 (nothing resident): a
// [0,40), w [40,60), a2 [60,80), b [0,40) (a's, freed first), c [40,100)
// over w (dropped), gw [0,20), and w's update takes [20,40), released
// before c's [40,100): R = {w at 20}. The pass between starts with w at 20:
// a [40,80), a2 [0,20), b [40,80), so c (60 B) fits nowhere around b: the
// op's items are laid out again from 0 (b out and in, w written out: c
// [0,60), b [60,100)), then gw [60,80).
//   - Without home offsets w's update takes the run released first,
//     [80,100) (b's, at op3) rather than [0,60) (c's, at op4): w is not back
//     at 20 and leaves R, and the last pass is pass 0's walk, w copied in
//     before op0 and written out after op5.
//   - With them it goes back to [20,40), free, and stays in R: no copy of w
//     waits at the iteration's ends, but the pass between's layout (b out
//     and in) is the last pass's too, which costs more here than the copies
//     it saves: the search keeps whichever is faster.
TEST(SwapPlanner, HomeOffsetsKeepAResidentThatComesBackForItsUpdate) {
  GraphBuilder b;
  auto w = b.tensor(20, TensorKind::kParam);
  auto a = b.tensor(40, TensorKind::kActivation);
  auto a2 = b.tensor(20, TensorKind::kActivation);
  auto bb = b.tensor(40, TensorKind::kActivation);
  auto c = b.tensor(60, TensorKind::kActivation);
  auto gw = b.tensor(20, TensorKind::kGradient);
  b.op({w}, {a});
  b.op({a}, {a2});
  b.op({a2}, {bb});
  b.op({bb}, {c});
  b.op({c}, {gw});
  b.op({gw}, {}, {w});
  const SizeTable t = make_size_table(b.g);
  const std::vector<double> times(6, 1.0);
  SwapPlanner planner(b.g, t, times, unit_link());
  Simulator sim;
  double us[2];
  for (bool home : {false, true}) {
    PlannerOptions opt;
    opt.layout = MemoryLayout::kPlaced;
    opt.max_passes = 1;  // the search's (Note [Steady-state passes])
    opt.home_offsets = home;
    Plan p;
    const PlanResult r = planner.plan_arena(program_order(6), 100, 100, opt, &p);
    ASSERT_TRUE(r.ok) << r.why;
    const VerifyResult v = verify_plan(b.g, p);
    ASSERT_TRUE(v.ok) << v.violation;
    const SimResult s = sim.run(b.g, p, times, unit_link());
    ASSERT_TRUE(s.ok) << s.error;
    us[home] = s.iteration_us;
    if (!home) {
      EXPECT_TRUE(p.initial_resident.empty());
      EXPECT_EQ(testing::describe_steps(p), "in0 C0 drop0 C1 C2 C3 in0 C4 C5 out0");
      EXPECT_EQ(p.objects[p.objects_of(5)[1]].offset, 20);  // op5's w
    } else {
      ASSERT_EQ(p.initial_resident.size(), 1u);
      EXPECT_EQ(p.initial_resident[0].tensor, w);
      EXPECT_EQ(p.objects[p.initial_resident[0].object].offset, 20);
      EXPECT_EQ(testing::describe_steps(p), "C0 out0 C1 C2 out3 in3 C3 C4 in0 C5");
      // w comes back into the object it started in.
      EXPECT_EQ(p.objects_of(5)[1], p.initial_resident[0].object);
    }
  }
  EXPECT_GT(us[1], us[0]);
}

}  // namespace
}  // namespace sa
