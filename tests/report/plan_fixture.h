#pragma once
// A hand-built plan with known stalls, shared by the report tests.
//
// Unit costs: 1 byte per microsecond each way, both directions at full rate
// at once. Tensors t0 (4 B), t1 (20 B), t2 (6 B); ops op0 (10 us), op1 (5 us),
// op2 (5 us), op3 (1 us).
//
//   s0  swap_in  t0                 h2d      [ 0,  4)
//   s1  compute  op0   waits s0     compute  [ 4, 14)  stalls 4 us: s0, swap-in of t0
//   s2  swap_in  t1                 h2d      [ 4, 24)
//   s3  compute  op1   waits s2     compute  [24, 29)  stalls 10 us: s2, swap-in of t1
//   s4  swap_out t1    waits s3     d2h      [29, 49)
//   s5  drop     t0    waits s1     at 14
//   s6  swap_in  t2    waits s5     h2d      [24, 30)
//   s7  compute  op2   waits s6 s4  compute  [49, 54)  stalls 20 us: s4 (ends 49, after
//                                                      s6 at 30), swap-out of t1
//   s8  swap_in  t0    waits s7     h2d      [54, 58)
//   s9  drop     t2    waits s8     at 58
//   s10 compute  op3   waits s9     compute  [58, 59)  stalls 4 us: the drop s9 finishes
//                                                      with s8, swap-in of t0
//
//   time →  0    4       14        24   29  30      49   54   58 59
//   compute .....[= op0 =]..........[op1]..........[op2]....[3]
//   h2d     [t0][======== t1 ======][ t2 ]               [t0]
//   d2h                                 [====== t1 ======]
//
// Stalls: 4 + 10 + 20 + 4 = 38 us = SimResult::stall_us (59 - 21 of compute).
// By tensor: t1 30 us (2 stalls: 1 swap-in, 1 swap-out), t0 8 us (2 swap-ins).
//
// Objects 0 and 1 (one size class of 20 B) and their tenancies
// (object_tenancies): t0 fills object 0 with its swap-in at 0 and leaves it
// with the drop at 14; t1 is in object 1 from its swap-in at 4 to the end of
// its swap-out at 49; t2 in object 0 from 24 to its drop at 58; t0 comes back
// into object 1 at 54 for the next iteration and no step uses it there, so
// its tenancy ends where it begins. Bytes in use (SimResult::memory): 20 from
// 0, 40 from 4, 20 from 14, 40 from 24, 20 from 49 (and 54), 0 from 58.

#include <vector>

#include "cost/device.h"
#include "plan/plan.h"
#include "plan/simulator.h"
#include "test_util.h"

namespace sa::testing {

// Tenants, as the tenancies below name them.
inline Occupant T(TensorId t) {
  return Occupant::of_tensor(t);
}
inline Occupant W(OpId o) {  // op o's workspace
  return Occupant::of_workspace(o);
}

struct StallFixture {
  Graph graph;
  Plan plan;
  DeviceProfile device;
  std::vector<double> op_us{10, 5, 5, 1};
  SimResult sim;
  // By hand, as above: tenancies {object, tenant, begin, end} by begin then
  // object, and the memory profile.
  std::vector<ObjectTenancy> expected_tenancies{
      {0, T(0), 0, 14}, {1, T(1), 4, 49}, {0, T(2), 24, 58}, {1, T(0), 54, 54}};
  std::vector<MemoryPoint> expected_memory{{0, 20},  {4, 40},  {14, 20}, {24, 40},
                                           {49, 20}, {54, 20}, {58, 0}};

  StallFixture() {
    GraphBuilder b;
    b.tensor(4, TensorKind::kParam, "t0");
    b.tensor(20, TensorKind::kParam, "t1");
    b.tensor(6, TensorKind::kParam);  // unnamed: "tensor #2"
    for (int i = 0; i < 4; ++i)
      b.op({}, {}, {}, op_us[i]);
    b.g.ops[0].name = "op0";
    b.g.ops[1].phase = Phase::kForward;
    b.g.ops[2].phase = Phase::kBackward;
    graph = b.g;
    graph.name = "stall-fixture";

    device.name = "unit";
    device.memory_bytes = 1000;
    device.h2d_gbps = 0.001;  // 1 B/us
    device.d2h_gbps = 0.001;
    device.duplex_gbps = 0.002;  // no sharing

    plan.method = "hand";
    plan.memory_budget = 40;
    plan.pool.class_bytes = {20};
    plan.pool.class_count = {2};
    plan.layout_pool();
    plan.tensor_class = {0, 0, 0};
    plan.workspace_class = {-1, -1, -1, -1};
    plan.access_begin = {0, 0, 0, 0, 0};
    plan.order = {0, 1, 2, 3};
    add(StepKind::kSwapIn, 0, 0, {});               // s0
    add(StepKind::kCompute, 0, kNoObject, {0});     // s1
    add(StepKind::kSwapIn, 1, 1, {});               // s2
    add(StepKind::kCompute, 1, kNoObject, {2});     // s3
    add(StepKind::kSwapOut, 1, 1, {3});             // s4
    add(StepKind::kDrop, 0, 0, {1});                // s5
    add(StepKind::kSwapIn, 2, 0, {5});              // s6
    add(StepKind::kCompute, 2, kNoObject, {6, 4});  // s7
    add(StepKind::kSwapIn, 0, 1, {7});              // s8
    add(StepKind::kDrop, 2, 0, {8});                // s9
    add(StepKind::kCompute, 3, kNoObject, {9});     // s10
    sim = Simulator().run(graph, plan, op_us, device, {.record_timeline = true});
  }

  void add(StepKind kind, int32_t subject, ObjectId obj, std::vector<StepId> waits) {
    Step s = Step::of(kind, subject, obj);
    s.wait_begin = static_cast<int32_t>(plan.waits.size());
    plan.waits.insert(plan.waits.end(), waits.begin(), waits.end());
    s.wait_end = static_cast<int32_t>(plan.waits.size());
    plan.steps.push_back(s);
  }
};

// The same steps and timeline as an arena plan (planned offsets, no
// classes), each tenant in an object of its own bytes, and op1 given an 8 B
// workspace (object 4) while it runs, [24, 29):
//
//   object  offset  bytes  tenancies
//   0       0       4      t0 [ 0, 14]  s0 swap-in .. s5 drop
//   1       4       20     t1 [ 4, 49]  s2 swap-in .. s4 swap-out
//   2       0       6      t2 [24, 58]  s6 swap-in .. s9 drop: object 0's addresses, after t0
//   3       6       4      t0 [54, 54]  s8 swap-in, used by no later step: inside object 1's
//                                       range, after t1 left it
//   4       24      8      op1's workspace [24, 29]
//
//   addresses
//   [24, 32)                       [ws]
//   [ 4, 24)      [=========== t1 ===========]
//   [ 6, 10)                                    |t0
//   [ 0,  6)                       [=========== t2 ==========]
//   [ 0,  4)  [==== t0 ====]
//   time →    0   4        14      24  29       49  54       58
//
// Object 2 fills after the drop that emptied object 0 (s6 waits for s5);
// object 3 after op2 (s8 waits for s7), which waited for t1's swap-out (s4).
// Bytes in use: 4 from 0, 24 from 4, 20 from 14, 34 from 24, 26 from 29, 6
// from 49 (and 54), 0 from 58.
struct ArenaFixture : StallFixture {
  ArenaFixture() {
    expected_tenancies = {{0, T(0), 0, 14},
                          {1, T(1), 4, 49},
                          {2, T(2), 24, 58},
                          {4, W(1), 24, 29},
                          {3, T(0), 54, 54}};
    expected_memory = {{0, 4}, {4, 24}, {14, 20}, {24, 34}, {29, 26}, {49, 6}, {54, 6}, {58, 0}};
    graph.ops[1].workspace_bytes = 8;
    plan.allocator = Allocator::kArena;
    plan.pool = {};
    plan.tensor_class.clear();
    plan.workspace_class.clear();
    plan.objects = {{0, 4, -1}, {4, 20, -1}, {0, 6, -1}, {6, 4, -1}, {24, 8, -1}};
    plan.access_begin = {0, 0, 1, 1, 1};
    plan.access_objects = {4};
    const ObjectId object_of_step[] = {0, kNoObject, 1, kNoObject, 1,        0,
                                       2, kNoObject, 3, 2,         kNoObject};
    for (StepId s = 0; s < plan.num_steps(); ++s)
      plan.steps[s].object = object_of_step[s];
    sim = Simulator().run(graph, plan, op_us, device, {.record_timeline = true});
  }
};

}  // namespace sa::testing
