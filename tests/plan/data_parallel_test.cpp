// Data-parallel planning (Note [Data parallelism as a graph transformation]):
// the buckets the transformation makes, the ring cost the simulator gives
// one all-reduce, and the waits the verifier requires of collective steps.

#include "plan/data_parallel.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "cost/device.h"
#include "graph/validate.h"
#include "methods/methods.h"
#include "plan/plan_io.h"
#include "plan/problem.h"
#include "plan/simulator.h"
#include "plan/verify.h"
#include "test_util.h"
#include "util/error.h"

namespace sa {
namespace {

using testing::GraphBuilder;

// w1 (1000 B) and w2 (3000 B) with gradients g1, g2 and momentum m1, m2:
//   op0 fwd: a = f(x, w1, w2)   op1 bwd2: g2 = h(a)   op2 bwd1: g1 = h(a)
//   op3 sgd1: w1, m1 -= g1      op4 sgd2: w2, m2 -= g2
Graph two_param_graph() {
  GraphBuilder b;
  b.tensor(1000, TensorKind::kParam, "w1");           // 0
  b.tensor(3000, TensorKind::kParam, "w2");           // 1
  b.tensor(100, TensorKind::kInput, "x");             // 2
  b.tensor(100, TensorKind::kActivation, "a");        // 3
  b.tensor(3000, TensorKind::kGradient, "g2");        // 4
  b.tensor(1000, TensorKind::kGradient, "g1");        // 5
  b.tensor(1000, TensorKind::kOptimizerState, "m1");  // 6
  b.tensor(3000, TensorKind::kOptimizerState, "m2");  // 7
  b.op({2, 0, 1}, {3}, {}, 10);
  b.op({3}, {4}, {}, 20);
  b.op({3}, {5}, {}, 20);
  b.op({5}, {}, {0, 6}, 8);
  b.op({4}, {}, {1, 7}, 8);
  b.g.name = "two-param";
  return b.g;
}

DeviceProfile link_device() {
  DeviceProfile d = load_device("a100-40gb");
  d.collective_gbps = 0.1;  // 100 B/us
  d.collective_latency_us = 5;
  return d;
}

// An op of 1 us to insert into two_param_graph().
Op extra_op(std::string type, Phase phase, std::vector<TensorId> inputs,
            std::vector<TensorId> outputs, std::vector<TensorId> updates) {
  Op op;
  op.type = std::move(type);
  op.phase = phase;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  op.updates = std::move(updates);
  op.time_us = 1;
  return op;
}

std::vector<OpId> collectives(const Graph& g) {
  std::vector<OpId> out;
  for (OpId o = 0; o < g.num_ops(); ++o)
    if (is_collective(g.ops[o])) out.push_back(o);
  return out;
}

TEST(DataParallel, RingFormula) {
  // 2 (N-1)/N * bytes / bw + 2 (N-1) * latency: 4 ranks, 4000 B at 100 B/us.
  EXPECT_DOUBLE_EQ(ring_all_reduce_us(4000, 4, 0.1, 5), 2 * 0.75 * 40 + 2 * 3 * 5);
  EXPECT_DOUBLE_EQ(ring_half_us(4000, 4, 0.1, 5), 0.75 * 40 + 3 * 5);
  EXPECT_EQ(ring_all_reduce_us(4000, 1, 0.1, 5), 0);
}

TEST(DataParallel, OneRankLeavesTheGraphAlone) {
  const Graph g = two_param_graph();
  const Graph one = data_parallel_graph(g, {}, link_device());
  EXPECT_EQ(one.num_ops(), g.num_ops());
  EXPECT_EQ(graph_fingerprint(one), graph_fingerprint(g));
}

TEST(DataParallel, OneBucketAfterTheLastGradient) {
  const Graph g = data_parallel_graph(two_param_graph(), {.ranks = 4}, link_device());
  validate_graph(g, "dp");
  ASSERT_EQ(g.num_ops(), 6);
  // After bwd1 (op 2), before sgd1: reduces g2 (written first) and g1.
  const Op& ar = g.ops[3];
  EXPECT_EQ(ar.type, "sa::all_reduce");
  EXPECT_EQ(ar.updates, (std::vector<TensorId>{4, 5}));
  EXPECT_TRUE(ar.inputs.empty() && ar.outputs.empty());
  EXPECT_DOUBLE_EQ(*ar.time_us, ring_all_reduce_us(4000, 4, 0.1, 5));
  EXPECT_EQ(g.name, "two-param-dp4");
}

TEST(DataParallel, SmallBucketsCloseEarly) {
  DataParallel dp{.ranks = 2, .bucket_bytes = 2000};
  const Graph g = data_parallel_graph(two_param_graph(), dp, link_device());
  validate_graph(g, "dp");
  // g2 (3000 B) fills a bucket right after bwd2; g1 gets its own after bwd1.
  ASSERT_EQ(collectives(g), (std::vector<OpId>{2, 4}));
  EXPECT_EQ(g.ops[2].updates, (std::vector<TensorId>{4}));
  EXPECT_EQ(g.ops[4].updates, (std::vector<TensorId>{5}));
}

TEST(DataParallel, BucketClosesBeforeAReaderOfItsGradient) {
  // An op between the two backward ops reads g2: g2's bucket must come
  // before it, so g1 cannot join it.
  Graph base = two_param_graph();
  GraphBuilder b;
  b.g = base;
  const TensorId n = b.tensor(8, TensorKind::kTemp, "norm");
  b.g.ops.insert(b.g.ops.begin() + 2, extra_op("test::norm", Phase::kUnknown, {4}, {n}, {}));
  const Graph g = data_parallel_graph(b.g, {.ranks = 2}, link_device());
  validate_graph(g, "dp");
  ASSERT_EQ(collectives(g), (std::vector<OpId>{2, 5}));
  EXPECT_EQ(g.ops[2].updates, (std::vector<TensorId>{4}));
  EXPECT_EQ(g.ops[3].type, "test::norm");  // reads the reduced g2
}

// Gradient clipping (captured: the norms, then each gradient scaled in
// place in the update phase, before the optimizer): the all-reduce comes
// after the backward pass and before the clipping, which scales the
// average as on every rank of a DDP job. Before, the scaling counted as the
// gradients' last write: each rank clipped its own, then they were averaged.
TEST(DataParallel, ClippingScalesTheAverage) {
  Graph base = two_param_graph();
  GraphBuilder b;
  b.g = base;
  const TensorId coef = b.tensor(8, TensorKind::kTemp, "clip_coef");
  b.g.ops.insert(b.g.ops.begin() + 3,
                 {extra_op("aten::linalg_vector_norm", Phase::kUpdate, {4, 5}, {coef}, {}),
                  extra_op("aten::mul_", Phase::kUpdate, {coef}, {}, {4, 5})});
  for (OpId o = 0; o < 3; ++o)
    b.g.ops[o].phase = o == 0 ? Phase::kForward : Phase::kBackward;
  const Graph g = data_parallel_graph(b.g, {.ranks = 2}, link_device());
  validate_graph(g, "dp");
  ASSERT_EQ(collectives(g), (std::vector<OpId>{3}));
  EXPECT_EQ(g.ops[3].updates, (std::vector<TensorId>{4, 5}));
  EXPECT_EQ(g.ops[4].type, "aten::linalg_vector_norm");  // of the average
  EXPECT_EQ(g.ops[5].type, "aten::mul_");
}

TEST(DataParallel, ShardedOptimizer) {
  DataParallel dp{.ranks = 4, .shard_optimizer = true};
  const Graph g = data_parallel_graph(two_param_graph(), dp, link_device());
  validate_graph(g, "dp");
  ASSERT_EQ(collectives(g), (std::vector<OpId>{3, 6}));
  EXPECT_EQ(g.ops[3].type, "sa::reduce_scatter");
  EXPECT_DOUBLE_EQ(*g.ops[3].time_us, ring_half_us(4000, 4, 0.1, 5));
  EXPECT_EQ(g.ops[6].type, "sa::all_gather");
  EXPECT_EQ(g.ops[6].updates, (std::vector<TensorId>{0, 1}));
  EXPECT_DOUBLE_EQ(*g.ops[6].time_us, ring_half_us(4000, 4, 0.1, 5));
  EXPECT_EQ(g.tensors[6].bytes, 250);  // m1: a quarter
  EXPECT_EQ(g.tensors[7].bytes, 750);
  EXPECT_EQ(g.tensors[0].bytes, 1000);     // params stay whole
  EXPECT_DOUBLE_EQ(*g.ops[4].time_us, 2);  // sgd1: a quarter of the work
}

TEST(DataParallel, HostLinkShared) {
  DeviceProfile d = load_device("a100-40gb");
  d.gpus_per_host_link = 2;
  EXPECT_DOUBLE_EQ(rank_device(d, 1).h2d_gbps, d.h2d_gbps);
  EXPECT_DOUBLE_EQ(rank_device(d, 8).h2d_gbps, d.h2d_gbps / 2);
  EXPECT_DOUBLE_EQ(rank_device(d, 8).duplex_gbps, d.duplex_gbps / 2);
  EXPECT_DOUBLE_EQ(rank_device(d, 8).collective_gbps, d.collective_gbps);
}

struct Planned {
  Graph g;
  DeviceProfile d;
  Plan plan;
  SimResult sim;
};

// The ideal plan (no swaps) of the 4-rank graph, simulated.
Planned plan_four_ranks() {
  Planned r;
  r.g = data_parallel_graph(two_param_graph(), {.ranks = 4}, link_device());
  r.d = link_device();
  const Problem pb(r.g, r.d, int64_t{1} << 30, 1.0, {.ranks = 4});
  MethodResult m = run_method("ideal", pb, {});
  EXPECT_TRUE(m.feasible) << m.why;
  r.plan = m.plan;
  Simulator sim;
  r.sim = sim.run(r.g, r.plan, pb.op_us, r.d, {.record_timeline = true});
  EXPECT_TRUE(r.sim.ok) << r.sim.error;
  return r;
}

StepId step_of(const Plan& p, OpId o) {
  for (StepId s = 0; s < p.num_steps(); ++s)
    if (p.steps[s].kind == StepKind::kCompute && p.steps[s].op() == o) return s;
  return -1;
}

TEST(DataParallel, SimulatedAllReduceIsTheRingFormula) {
  const Planned r = plan_four_ranks();
  ASSERT_TRUE(verify_plan(r.g, r.plan).ok) << verify_plan(r.g, r.plan).violation;
  const StepId ar = step_of(r.plan, 3), bwd1 = step_of(r.plan, 2), sgd1 = step_of(r.plan, 4);
  EXPECT_EQ(stream_of(r.g, r.plan.steps[ar]), Stream::kCollective);
  const StepTiming& t = r.sim.timeline[ar];
  EXPECT_NEAR(t.end_us - t.start_us, 2 * 0.75 * 4000 / 100 + 2 * 3 * 5, 1e-9);
  EXPECT_DOUBLE_EQ(r.sim.collective_us, t.end_us - t.start_us);
  // It waits for the gradients, and the update waits for it.
  EXPECT_GE(t.start_us, r.sim.timeline[bwd1].end_us);
  EXPECT_GE(r.sim.timeline[sgd1].start_us, t.end_us);
  // Compute: 10 + 20 + 20 (after x's 100 B arrive, 4 ns), then the
  // all-reduce (90 us), then 8 + 8; all of the all-reduce is exposed.
  EXPECT_NEAR(r.sim.iteration_us, 50 + 90 + 16, 0.01);
  EXPECT_NEAR(exposed_collective_us(r.g, r.plan, std::vector<double>{10, 20, 20, 90, 8, 8}, r.d),
              90, 1e-9);
}

// Removes wait w from step s.
void drop_wait(Plan* p, StepId s, StepId w) {
  Step& st = p->steps[s];
  auto b = p->waits.begin() + st.wait_begin, e = p->waits.begin() + st.wait_end;
  auto it = std::find(b, e, w);
  ASSERT_NE(it, e) << "step " << s << " does not wait for " << w;
  std::rotate(it, it + 1, e);
  --st.wait_end;
}

TEST(DataParallel, VerifierWantsTheCollectiveToWaitForItsGradients) {
  Planned r = plan_four_ranks();
  drop_wait(&r.plan, step_of(r.plan, 3), step_of(r.plan, 2));
  const VerifyResult v = verify_plan(r.g, r.plan);
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.violation.find("does not wait for"), std::string::npos) << v.violation;
}

TEST(DataParallel, VerifierWantsTheUpdateToWaitForItsBucket) {
  Planned r = plan_four_ranks();
  drop_wait(&r.plan, step_of(r.plan, 4), step_of(r.plan, 3));
  const VerifyResult v = verify_plan(r.g, r.plan);
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.violation.find("does not wait for"), std::string::npos) << v.violation;
}

// The field a plan's graph depends on, read as parse_plan(text, origin,
// graph_for) gives it to graph_for (the text parsed once).
DataParallel field_of(const std::string& text, const Graph& g) {
  DataParallel seen;
  parse_plan(text, "p.json", [&](const DataParallel& dp) -> const Graph& {
    seen = dp;
    return g;
  });
  return seen;
}

TEST(DataParallel, PlanFileKeepsTheRanks) {
  Planned r = plan_four_ranks();
  r.plan.data_parallel = {.ranks = 4, .shard_optimizer = false, .bucket_bytes = 4096};
  const std::string text = plan_to_json(r.g, r.plan);
  const Graph base = two_param_graph();
  const DataParallel dp = field_of(text, r.g);
  EXPECT_EQ(dp.ranks, 4);
  EXPECT_EQ(dp.bucket_bytes, 4096);
  EXPECT_EQ(parse_plan(r.g, text, "p.json").data_parallel.ranks, 4);
  // Read against the graph it was not made for: refused.
  EXPECT_THROW(parse_plan(base, text, "p.json"), Error);
  EXPECT_THROW(
      parse_plan(text, "p.json", [&](const DataParallel&) -> const Graph& { return base; }), Error);
  // A plan without the field plans one rank.
  Plan one = r.plan;
  one.data_parallel = {};
  EXPECT_EQ(field_of(plan_to_json(r.g, one), r.g).ranks, 1);
  std::string bad = text;
  bad.replace(bad.find("\"ranks\":4"), 9, "\"ranks\":0");
  try {
    field_of(bad, r.g);
    FAIL() << "ranks 0 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("data_parallel.ranks"), std::string::npos) << e.what();
  }
}

// Planner writes what the graph is one rank of into the plan (issue 28:
// the plan describes itself; the CLI used to stamp it).
TEST(DataParallel, ThePlannerStampsTheRanksOnThePlan) {
  Planned r = plan_four_ranks();
  EXPECT_EQ(r.plan.data_parallel.ranks, 4);
}

TEST(DataParallel, DeviceCollectiveFields) {
  const std::string base =
      R"({"format": "swapadvisor-device", "version": 1, "memory_bytes": 1000,
          "h2d_gbps": 12, "d2h_gbps": 10, "peak_tflops": 1, "hbm_gbps": 100)";
  const DeviceProfile old = parse_device(base + "}", "old.json");
  EXPECT_DOUBLE_EQ(old.collective_gbps, 10);  // the host link, the slower way
  EXPECT_DOUBLE_EQ(old.collective_latency_us, 10);
  EXPECT_EQ(old.gpus_per_host_link, 1);
  const DeviceProfile d = parse_device(
      base + R"(, "collective_gbps": 200, "collective_latency_us": 3, "gpus_per_host_link": 4})",
      "new.json");
  EXPECT_DOUBLE_EQ(d.collective_gbps, 200);
  EXPECT_DOUBLE_EQ(d.collective_latency_us, 3);
  EXPECT_EQ(d.gpus_per_host_link, 4);
  EXPECT_EQ(parse_device(device_to_json(d), "again.json").gpus_per_host_link, 4);
  EXPECT_THROW(parse_device(base + R"(, "gpus_per_host_link": 1.5})", "x.json"), Error);
  EXPECT_THROW(parse_device(base + R"(, "collective_gbps": 0})", "x.json"), Error);
  EXPECT_GT(load_device("h100-80gb").collective_gbps, load_device("h100-80gb").h2d_gbps);
}

}  // namespace
}  // namespace sa
