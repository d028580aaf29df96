// Regression tests of the swap planner: plans that once broke a rule of the
// verifier (plan/verify.h).

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cost/device.h"
#include "cost/op_cost.h"
#include "graph/graph_io.h"
#include "graph/stats.h"
#include "graph/validate.h"
#include "plan/allocation.h"
#include "plan/swap_planner.h"
#include "plan/verify.h"
#include "planner_cases.h"
#include "test_util.h"

namespace sa {
namespace {

using testing::GraphBuilder;
using testing::slow_link;

// Regression tests of a planner bug the verifier found (fixed in a774581):
// the planner placed a swap-in by the release of its object's previous tenant
// only, ignoring the step that evicted the same tensor from its previous
// object. Symptoms: (a) a swap-in that does not wait for the swap-out that
// writes the host copy it reads (a race the simulator hid by timing); (b) a
// swap-in issued before the drop that evicts the same tensor from another
// object (the tensor in two objects at once).

// random_graph(2, 820): two layers; mask1 (1 KiB) is created by fwd1 and read
// by bwd1.
Graph host_wait_graph() {
  GraphBuilder b;
  b.tensor(256, TensorKind::kInput, "data");                              // 0
  b.tensor(256, TensorKind::kInput, "labels");                            // 1
  b.tensor(1024, TensorKind::kParam, "layer1.weight");                    // 2
  b.tensor(64, TensorKind::kActivation, "h1");                            // 3
  b.tensor(1024, TensorKind::kActivation, "mask1");                       // 4
  b.tensor(1024, TensorKind::kParam, "layer2.bias");                      // 5
  b.tensor(64, TensorKind::kActivation, "h2");                            // 6
  b.tensor(64, TensorKind::kActivation, "loss");                          // 7
  b.tensor(64, TensorKind::kGradient, "grad_h2");                         // 8
  b.tensor(64, TensorKind::kGradient, "grad_h1");                         // 9
  b.tensor(1024, TensorKind::kGradient, "grad_layer1.weight");            // 10
  b.tensor(1024, TensorKind::kGradient, "grad_layer2.bias");              // 11
  b.tensor(1024, TensorKind::kOptimizerState, "layer1.weight.momentum");  // 12
  b.tensor(1024, TensorKind::kOptimizerState, "layer2.bias.momentum");    // 13
  b.op({0, 2}, {3, 4}, {}, 38, "fwd1");
  b.g.ops.back().workspace_bytes = 256;
  b.op({3, 2, 5}, {6}, {}, 29, "fwd2");
  b.op({6, 1}, {7, 8}, {}, 25, "loss");
  b.op({8, 3, 2}, {9, 10, 11}, {}, 49, "bwd2");
  b.op({9, 0, 2, 4}, {}, {10}, 24, "bwd1");
  b.op({10}, {}, {2, 12}, 36, "sgd1");
  b.op({11}, {}, {5, 13}, 32, "sgd2");
  validate_graph(b.g, "host_wait_graph");
  return b.g;
}

// (a) Program order, budget 5140 B, LRU, no steady state, v100-16gb: mask1
// is swapped out of one object after fwd1 and swapped into another (freed by
// a drop of layer2.bias after fwd2); the swap-in must wait for the swap-out.
TEST(PlannerRegression, SwapInWaitsForTheSwapOutThatWritesItsHostCopy) {
  const Graph g = host_wait_graph();
  const DeviceProfile dev = load_device("v100-16gb");
  const SizeTable t = make_size_table(g);
  const std::vector<double> op_us = op_times_us(g, dev);
  const std::vector<OpId> order = program_order(g.num_ops());
  Allocation a;
  std::string why;
  ASSERT_TRUE(default_allocation(g, t, order, 5140, &a, &why)) << why;
  SwapPlanner planner(g, t, op_us, dev);
  PlannerOptions opt;
  opt.eviction = EvictionPolicy::kLru;
  opt.steady_state = false;
  Plan p;
  const PlanResult planned = planner.plan(order, a, 5140, opt, &p);
  ASSERT_TRUE(planned.ok) << planned.why;
  const VerifyResult r = verify_plan(g, p);
  EXPECT_TRUE(r.ok) << r.violation;
}

// random_graph(2, 223): data (an input) is read by fwd1 and, much later, by
// bwd1.
Graph double_residency_graph() {
  GraphBuilder b;
  b.tensor(256, TensorKind::kInput, "data");                             // 0
  b.tensor(96, TensorKind::kInput, "labels");                            // 1
  b.tensor(256, TensorKind::kParam, "layer1.weight");                    // 2
  b.tensor(512, TensorKind::kActivation, "h1");                          // 3
  b.tensor(128, TensorKind::kActivation, "h2");                          // 4
  b.tensor(64, TensorKind::kActivation, "loss");                         // 5
  b.tensor(128, TensorKind::kGradient, "grad_h2");                       // 6
  b.tensor(512, TensorKind::kGradient, "grad_h1");                       // 7
  b.tensor(256, TensorKind::kGradient, "grad_layer1.weight");            // 8
  b.tensor(256, TensorKind::kOptimizerState, "layer1.weight.momentum");  // 9
  b.op({0, 2}, {3}, {}, 35, "fwd1");
  b.op({3, 2}, {4}, {}, 37, "fwd2");
  b.op({4, 1}, {5, 6}, {}, 43, "loss");
  b.op({6, 3, 2}, {7, 8}, {}, 19, "bwd2");
  b.op({7, 0, 2}, {}, {8}, 48, "bwd1");
  b.op({8}, {}, {2, 9}, 29, "sgd1");
  b.g.ops.back().workspace_bytes = 128;
  validate_graph(b.g, "double_residency_graph");
  return b.g;
}

// (b) Program order, budget 2208 B, Belady, steady state, a 1 B/us link:
// data is fetched into one object for fwd1, dropped after it and fetched into
// another object (the one the momentum leaves at the start) for bwd1; that
// fetch must come after the drop.
TEST(PlannerRegression, NoSwapInOfATensorBeforeItsEviction) {
  const Graph g = double_residency_graph();
  const DeviceProfile dev = slow_link();
  const SizeTable t = make_size_table(g);
  const std::vector<double> op_us = op_times_us(g, dev);
  const std::vector<OpId> order = program_order(g.num_ops());
  Allocation a;
  std::string why;
  ASSERT_TRUE(default_allocation(g, t, order, 2208, &a, &why)) << why;
  SwapPlanner planner(g, t, op_us, dev);
  Plan p;
  const PlanResult planned = planner.plan(order, a, 2208, {}, &p);
  ASSERT_TRUE(planned.ok) << planned.why;
  const VerifyResult r = verify_plan(g, p);
  EXPECT_TRUE(r.ok) << r.violation;
}

// A recompute of an op that reads an input after the input's last use (the
// cast of the batch under autocast, docs/zoo.md "Mixed precision": the
// batch's only reader) brought the input back and never let it go: the
// planner stopped with "tensor 0 resident after its last use" (fixed with
// passing_inputs_ in swap_planner.cpp). Here data is read by cast alone, and
// its copy data16 lives until the backward.
Graph input_read_once_graph() {
  GraphBuilder b;
  b.tensor(8192, TensorKind::kInput, "data");                 // 0
  b.tensor(1024, TensorKind::kParam, "w");                    // 1
  b.tensor(4096, TensorKind::kActivation, "data16");          // 2
  b.tensor(4096, TensorKind::kActivation, "h");               // 3
  b.tensor(4096, TensorKind::kActivation, "h2");              // 4
  b.tensor(64, TensorKind::kActivation, "loss");              // 5
  b.tensor(4096, TensorKind::kGradient, "grad_h2");           // 6
  b.tensor(4096, TensorKind::kGradient, "grad_h");            // 7
  b.tensor(1024, TensorKind::kGradient, "grad_w");            // 8
  b.tensor(1024, TensorKind::kOptimizerState, "w.momentum");  // 9
  b.op({0}, {2}, {}, 20, "cast");
  b.op({2, 1}, {3}, {}, 40, "fwd1");
  b.op({3}, {4}, {}, 40, "fwd2");
  b.op({4}, {5, 6}, {}, 10, "loss");
  b.op({6, 3}, {7}, {}, 40, "bwd2");
  b.op({7, 2, 1}, {8}, {}, 60, "bwd1");
  b.op({8}, {}, {1, 9}, 20, "sgd");
  validate_graph(b.g, "input_read_once_graph");
  return b.g;
}

TEST(PlannerRegression, RecomputeReadingAnInputAfterItsLastUse) {
  const Graph g = input_read_once_graph();
  testing::Tally tally;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    testing::plan_and_verify(g, "input_read_once", rng, nullptr, &tally);
  }
  EXPECT_EQ(tally.failures, 0);
  EXPECT_GT(tally.recompute_steps, 0);
}

// Note [Recompute repair]: at 20% of ShuffleNetV2's peak, next to the op
// with the largest footprint (op 759, a batch norm backward: 882 MiB of a
// 1019 MiB budget), op 757 (a max-pool backward) found no memory for its
// own items beside the recomputes of its inputs. The repair only turned off
// the recompute of the op that found no memory, here one not recomputing,
// so it gave up: every plan that recomputed those inputs' producers was
// refused, the search's recompute seeds included, and the search reached
// 1.3x the swap-only plan where it now reaches 2x (bench/recompute). The
// producers of the op's inputs now stop recomputing instead.
TEST(PlannerRegression, RepairStopsTheRecomputesBesideAnOpThatRunsShort) {
  const Graph g = read_graph(testing::data_path("graphs/shufflenet_v2_x1_0-b256.json.gz"));
  const DeviceProfile dev = load_device("v100-16gb");
  const std::vector<double> op_us = op_times_us(g, dev);
  const auto budget = static_cast<int64_t>(0.2 * static_cast<double>(peak_live_bytes(g)));
  // The ops the footprint's batch norm backward reads from may all run again.
  const OpId big = 759;
  ASSERT_EQ(g.ops[big].type, "aten::native_batch_norm_backward");
  std::vector<uint8_t> genes(g.num_ops(), 0);
  std::vector<OpId> producers;
  for (TensorId t : g.ops[big].inputs)
    for (OpId o = 0; o < g.num_ops(); ++o)
      for (TensorId out : g.ops[o].outputs)
        if (out == t && may_recompute(g.ops[o]) && !genes[o]) {
          genes[o] = 1;
          producers.push_back(o);
        }
  ASSERT_FALSE(producers.empty());
  const SizeTable sizes = make_size_table(g);
  SwapPlanner planner(g, sizes, op_us, dev);
  PlannerOptions opt;
  opt.recompute = &genes;
  Plan p;
  const PlanResult r = planner.plan_arena(program_order(g.num_ops()), budget, budget, opt, &p);
  ASSERT_TRUE(r.ok) << r.why;
  EXPECT_TRUE(verify_plan(g, p).ok);
  // What the repair turned off is named and not recomputed; the rest is.
  EXPECT_FALSE(r.not_recomputed.empty());
  for (OpId o : r.not_recomputed)
    EXPECT_NE(std::find(producers.begin(), producers.end(), o), producers.end()) << o;
}

// Note [Recompute through dead inputs]: relu reads bn's output b, which
// nothing else reads, so b is dead once relu has run. At 500 B, big and g
// (op 4) fill the budget, so y, z and w go; y is read again by back (op 5).
// Recomputing relu there needs b, made again by bn from z (alive until
// zback): before, relu's window ended at its own position and y was swapped
// out and back (this graph's y with dead_input_depth 0).
Graph dead_input_graph() {
  GraphBuilder b;
  b.tensor(100, TensorKind::kInput, "x");         // 0
  b.tensor(100, TensorKind::kParam, "w");         // 1
  b.tensor(100, TensorKind::kActivation, "z");    // 2
  b.tensor(100, TensorKind::kActivation, "b");    // 3
  b.tensor(100, TensorKind::kActivation, "y");    // 4
  b.tensor(400, TensorKind::kActivation, "big");  // 5
  b.tensor(100, TensorKind::kActivation, "g");    // 6
  b.tensor(100, TensorKind::kGradient, "gy");     // 7
  b.tensor(100, TensorKind::kGradient, "gw");     // 8
  b.op({0, 1}, {2}, {}, 10, "conv");
  b.op({2}, {3}, {}, 1, "bn");
  b.op({3}, {4}, {}, 1, "relu");
  b.op({4}, {5}, {}, 10, "big");
  b.op({5}, {6}, {}, 10, "use");
  b.op({6, 4}, {7}, {}, 10, "back");
  b.op({7, 2}, {8}, {}, 10, "zback");
  b.op({8}, {}, {1}, 1, "sgd");
  validate_graph(b.g, "dead_input_graph");
  return b.g;
}

TEST(PlannerRegression, RecomputeRemakesADeadInput) {
  const Graph g = dead_input_graph();
  const SizeTable sizes = make_size_table(g);
  const DeviceProfile dev = slow_link();
  const std::vector<double> op_us = op_times_us(g, dev);
  SwapPlanner planner(g, sizes, op_us, dev);
  std::vector<uint8_t> genes = {0, 1, 1, 0, 0, 0, 0, 0};  // bn and relu may run again
  auto plan = [&](int depth, Plan* p) {
    PlannerOptions opt;
    opt.recompute = &genes;
    opt.dead_input_depth = depth;
    const PlanResult r = planner.plan_arena(program_order(g.num_ops()), 500, 500, opt, p);
    ASSERT_TRUE(r.ok) << r.why;
    const VerifyResult v = verify_plan(g, *p);
    EXPECT_TRUE(v.ok) << v.violation;
  };
  auto count = [](const Plan& p, StepKind kind, int32_t subject) {
    return std::count_if(p.steps.begin(), p.steps.end(), [&](const Step& s) {
      return s.kind == kind && testing::subject_of(s) == subject;
    });
  };
  constexpr TensorId kY = 4;
  Plan with, without;
  plan(1, &with);
  plan(0, &without);
  // With: y is dropped, then bn (op 1) and relu (op 2) run again before
  // back; without: relu may not run again there, so y goes out and back.
  EXPECT_EQ(count(with, StepKind::kSwapOut, kY), 0);
  EXPECT_EQ(count(with, StepKind::kRecompute, 1), 1);
  EXPECT_EQ(count(with, StepKind::kRecompute, 2), 1);
  EXPECT_EQ(count(without, StepKind::kSwapOut, kY), 1);
  EXPECT_EQ(count(without, StepKind::kRecompute, 1), 0);
  EXPECT_EQ(count(without, StepKind::kRecompute, 2), 0);
}

}  // namespace
}  // namespace sa
