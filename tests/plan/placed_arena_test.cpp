// The placed arena (Note [Arena planning] in plan/swap_planner.h,
// plan/swap/placed.cpp) on graphs small enough to plan by hand: the offset
// of every tenancy, the swaps, and what each step waits for. The expected
// layouts were worked out from the Note's rules before running the planner.
// Every op takes 1 us and copies move 1 B/us (each way alone or both at
// once). The graphs have no persistent tensors, so there is one pass.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "graph/dataflow.h"
#include "graph/validate.h"
#include "plan/simulator.h"
#include "plan/swap_planner.h"
#include "plan/verify.h"
#include "test_util.h"

namespace sa {
namespace {

using testing::GraphBuilder;

// The plan's objects as (offset, bytes).
std::vector<std::pair<int64_t, int64_t>> object_ranges(const Plan& p) {
  std::vector<std::pair<int64_t, int64_t>> r;
  for (const Block& b : p.objects)
    r.emplace_back(b.offset, b.bytes);
  return r;
}

// The step of the given kind and subject (the first; -1 if none).
StepId find_step(const Plan& p, StepKind kind, int32_t subject) {
  for (StepId s = 0; s < p.num_steps(); ++s)
    if (p.steps[s].kind == kind && testing::subject_of(p.steps[s]) == subject) return s;
  return -1;
}

// The steps s waits for, sorted, each once.
std::vector<StepId> waits_set(const Plan& p, StepId s) {
  std::vector<StepId> w(p.waits_of(s).begin(), p.waits_of(s).end());
  std::sort(w.begin(), w.end());
  w.erase(std::unique(w.begin(), w.end()), w.end());
  return w;
}

std::vector<ObjectId> objects_of_op(const Plan& p, OpId o) {
  return {p.objects_of(o).begin(), p.objects_of(o).end()};
}

// Plans g in program order in a 100-B placed arena and checks that the
// plan verifies.
Plan plan_placed(const Graph& g, PlanResult* result) {
  validate_graph(g, "placed arena case");
  const SizeTable t = make_size_table(g);
  const std::vector<double> times(g.num_ops(), 1.0);
  SwapPlanner planner(g, t, times, testing::unit_link());
  PlannerOptions opt;
  opt.layout = MemoryLayout::kPlaced;
  Plan p;
  *result = planner.plan_arena(program_order(g.num_ops()), 100, 100, opt, &p);
  EXPECT_TRUE(result->ok) << result->why;
  const VerifyResult v = verify_plan(g, p);
  EXPECT_TRUE(v.ok) << v.violation;
  return p;
}

// Free runs, the earliest released first, and a Belady window. Tensors
// a 40, b 20, c 40, e 20, f 80 (bytes); ops:
//   op0: a, b, c = f()   op1: g(a)   op2: h(b)   op3: e = k(c)
//   op4: f = l()         op5: m(e, f)   op6: n(c)
// op0: its items, the largest first (ties: the lower id), each at the start
//   of the free run: a [0,40), c [40,80), b [80,100).
// op3: e (20 B) fits two free runs: [80,100), b's, released at 2, and
//   [0,40), a's, released at 1. The one released earliest wins, though it
//   is larger: e at [0,20).
// op4: f (80 B) fits no free run. Windows around the residents, the
//   furthest next use first: around c (next use 6), grown over the free
//   runs on both sides, is [20,100) and evicts c alone; around e (next use
//   5) it would be [0,80), evicting e and c. So c goes: it is needed again
//   and only on the device, so it is swapped out (keyed at its last use,
//   op 3), and f's creation waits for that.
// op6: c comes back into the only free run, [0,100) (everything was freed
//   after op 5), at its start: [0,40), not its old offset. Its swap-in
//   waits for out(c) and for op 5, the last user of the memory it takes.
//
// Offsets down, ops across (each box spans the ops its tenancy is on the
// device for; c is swapped out after op 3 and in after op 5):
//
//   offset  op 0     1     2     3     4     5     6
//        0  +-----------+     +-----------------+-----+
//           | a         |     | e               | c   |
//       20  |           |     +-----+-----------+     |
//           |           |           | f         |     |
//       40  +-----------+-----------+           +-----+
//           | c                     |           |
//       80  +-----------------+-----+           |
//           | b               |     |           |
//      100  +-----------------+     +-----------+
//
// The tenancies, in the order they were opened, and their objects (one per
// distinct range; c's return shares a's): a (0,40) #0, c (40,40) #1,
// b (80,20) #2, e (0,20) #3, f (20,80) #4, c (0,40) #0.
// Simulated: out(c) [4,44), C4 [44,45), C5 [45,46), in(c) [46,86), C6 [86,87).
TEST(PlacedArena, EarliestReleasedRunAndBeladyWindowByHand) {
  GraphBuilder b;
  const TensorId a = b.tensor(40, TensorKind::kActivation, "a");
  const TensorId bb = b.tensor(20, TensorKind::kActivation, "b");
  const TensorId c = b.tensor(40, TensorKind::kActivation, "c");
  const TensorId e = b.tensor(20, TensorKind::kActivation, "e");
  const TensorId f = b.tensor(80, TensorKind::kActivation, "f");
  b.op({}, {a, bb, c});
  b.op({a}, {});
  b.op({bb}, {});
  b.op({c}, {e});
  b.op({}, {f});
  b.op({e, f}, {});
  b.op({c}, {});
  PlanResult planned;
  const Plan p = plan_placed(b.g, &planned);
  ASSERT_TRUE(planned.ok);
  EXPECT_EQ(planned.arena_bytes, 100);
  EXPECT_EQ(testing::describe_steps(p), "C0 C1 C2 C3 out2 C4 C5 in2 C6");
  EXPECT_EQ(object_ranges(p), (std::vector<std::pair<int64_t, int64_t>>{
                                  {0, 40}, {40, 40}, {80, 20}, {0, 20}, {20, 80}}));
  // Access objects: outputs, then inputs.
  EXPECT_EQ(objects_of_op(p, 0), (std::vector<ObjectId>{0, 2, 1}));  // a, b, c
  EXPECT_EQ(objects_of_op(p, 1), std::vector<ObjectId>{0});
  EXPECT_EQ(objects_of_op(p, 2), std::vector<ObjectId>{2});
  EXPECT_EQ(objects_of_op(p, 3), (std::vector<ObjectId>{3, 1}));  // e, c
  EXPECT_EQ(objects_of_op(p, 4), std::vector<ObjectId>{4});
  EXPECT_EQ(objects_of_op(p, 5), (std::vector<ObjectId>{3, 4}));
  EXPECT_EQ(objects_of_op(p, 6), std::vector<ObjectId>{0});
  const StepId out_c = find_step(p, StepKind::kSwapOut, c);
  const StepId in_c = find_step(p, StepKind::kSwapIn, c);
  ASSERT_GE(out_c, 0);
  ASSERT_GE(in_c, 0);
  EXPECT_EQ(p.steps[out_c].object, 1);
  EXPECT_EQ(p.steps[in_c].object, 0);
  EXPECT_EQ(waits_set(p, out_c), std::vector<StepId>{find_step(p, StepKind::kCompute, 3)});
  EXPECT_EQ(waits_set(p, find_step(p, StepKind::kCompute, 4)), std::vector<StepId>{out_c});
  EXPECT_EQ(waits_set(p, in_c), (std::vector<StepId>{out_c, find_step(p, StepKind::kCompute, 5)}));
  EXPECT_EQ(waits_set(p, find_step(p, StepKind::kCompute, 6)), std::vector<StepId>{in_c});
  const SimResult s =
      Simulator().run(b.g, p, std::vector<double>(7, 1.0), testing::unit_link(), {true});
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.iteration_us, 87);
  EXPECT_EQ(s.peak_device_bytes, 100);
}

// The op's own residents cut the arena: they move. Tensors p 40, r 20,
// q 10, big 70; ops:
//   op0: p, r, q = f()   op1: g(p)   op2: big = h(r)   op3: k(q, big)   op4: l(r)
// op0: p [0,40), r [40,60), q [60,70).
// op2: r, which op 2 reads, cuts the arena into [0,40) and [60,100): 40 B
//   each, and big needs 70 (first fit decreasing fails). So op 2's items
//   are laid out one after the other from offset 0, the largest first:
//   r leaves (swapped out: it is read later), q, in the way, is swapped
//   out too, big goes to [0,70) and r comes back at [70,90). big's creation
//   waits for both swap-outs; r's swap-in for its own.
// op3: q comes back into the one free run that fits, [90,100).
//
// Offsets down, ops across (r and q are swapped out after op 0, their last
// use, and r in again before op 2, q before op 3):
//
//   offset  op 0     1     2     3     4
//        0  +-----------+-----------+
//           | p         | big       |
//       40  +-----+-----+           |
//           | r   |     |           |
//       60  +-----+     |           |
//           | q   |     |           |
//       70  +-----+     +-----------+-----+
//                       | r               |
//       90              +-----+-----+-----+
//                             | q   |
//      100                    +-----+
//
// The copies go right after op 0, their memory's last user (they wait for
// nothing later), in release order: out(r) [1,21), out(q) [21,31),
// in(r) [21,41), in(q) [41,51); C2 [41,42), C3 [51,52), C4 [52,53).
TEST(PlacedArena, ResidentsThatCutTheArenaMoveByHand) {
  GraphBuilder b;
  const TensorId pp = b.tensor(40, TensorKind::kActivation, "p");
  const TensorId r = b.tensor(20, TensorKind::kActivation, "r");
  const TensorId q = b.tensor(10, TensorKind::kActivation, "q");
  const TensorId big = b.tensor(70, TensorKind::kActivation, "big");
  b.op({}, {pp, r, q});
  b.op({pp}, {});
  b.op({r}, {big});
  b.op({q, big}, {});
  b.op({r}, {});
  PlanResult planned;
  const Plan p = plan_placed(b.g, &planned);
  ASSERT_TRUE(planned.ok);
  EXPECT_EQ(planned.arena_bytes, 100);
  EXPECT_EQ(testing::describe_steps(p), "C0 out1 out2 in1 in2 C1 C2 C3 C4");
  EXPECT_EQ(object_ranges(p), (std::vector<std::pair<int64_t, int64_t>>{
                                  {0, 40}, {40, 20}, {60, 10}, {0, 70}, {70, 20}, {90, 10}}));
  EXPECT_EQ(objects_of_op(p, 0), (std::vector<ObjectId>{0, 1, 2}));  // p, r, q
  EXPECT_EQ(objects_of_op(p, 1), std::vector<ObjectId>{0});
  EXPECT_EQ(objects_of_op(p, 2), (std::vector<ObjectId>{3, 4}));  // big, r
  EXPECT_EQ(objects_of_op(p, 3), (std::vector<ObjectId>{5, 3}));  // q, big
  EXPECT_EQ(objects_of_op(p, 4), std::vector<ObjectId>{4});
  const StepId c0 = find_step(p, StepKind::kCompute, 0);
  const StepId out_r = find_step(p, StepKind::kSwapOut, r);
  const StepId out_q = find_step(p, StepKind::kSwapOut, q);
  const StepId in_r = find_step(p, StepKind::kSwapIn, r);
  const StepId in_q = find_step(p, StepKind::kSwapIn, q);
  ASSERT_TRUE(out_r >= 0 && out_q >= 0 && in_r >= 0 && in_q >= 0);
  EXPECT_EQ(p.steps[out_r].object, 1);
  EXPECT_EQ(p.steps[out_q].object, 2);
  EXPECT_EQ(p.steps[in_r].object, 4);
  EXPECT_EQ(p.steps[in_q].object, 5);
  EXPECT_EQ(waits_set(p, out_r), std::vector<StepId>{c0});
  EXPECT_EQ(waits_set(p, out_q), std::vector<StepId>{c0});
  EXPECT_EQ(waits_set(p, in_r), std::vector<StepId>{out_r});
  EXPECT_EQ(waits_set(p, in_q), std::vector<StepId>{out_q});
  EXPECT_EQ(waits_set(p, find_step(p, StepKind::kCompute, 2)),
            (std::vector<StepId>{out_r, out_q, in_r}));
  EXPECT_EQ(waits_set(p, find_step(p, StepKind::kCompute, 3)), std::vector<StepId>{in_q});
  const SimResult s =
      Simulator().run(b.g, p, std::vector<double>(5, 1.0), testing::unit_link(), {true});
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_EQ(s.iteration_us, 53);
  EXPECT_EQ(s.peak_device_bytes, 100);
}

}  // namespace
}  // namespace sa
