// methods/methods.h: every method by name on a small training chain, the
// error for an unknown one and for a budget below the largest op, what
// run_methods promises (the search never behind a baseline within the
// budget), and the JSON every output of a method shares.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "baselines/baseline_test_util.h"
#include "cost/device.h"
#include "methods/methods.h"
#include "plan/problem.h"
#include "plan/simulator.h"
#include "plan/verify.h"
#include "test_util.h"

namespace sa {
namespace {

using testing::Chain;

// baseline_test_util.h's 8-layer chain (every tensor 100 B, every op 1 us,
// 24 ops), its forward and backward ops named as matrix products so that
// vdnn has something to offload. In program order its peak is at b8: the 8
// weights, x, a1..a8, d7 and g8, 1900 B. b8 (op 8) touches d8 = a8, a7,
// w8, d7 and g8: no op touches more than 500 B.
Chain matmul_chain() {
  Chain c = testing::chain_graph(8);
  for (Op& op : c.g.ops)
    if (op.phase != Phase::kUpdate) op.type = "aten::mm";
  return c;
}

// 1 B/us each way (2 B/us together): copying x (100 B) in takes 100 us,
// as long as 100 ops, so what a plan copies shows in its time.
DeviceProfile methods_link() {
  DeviceProfile d;
  d.name = "one-byte-per-us";
  d.h2d_gbps = 0.001;
  d.d2h_gbps = 0.001;
  d.duplex_gbps = 0.002;
  return d;
}

MethodOptions quick_options() {
  MethodOptions o;
  o.search.max_evaluations = 16;
  o.search.threads = 1;
  o.search.seed = 1;
  return o;
}

TEST(Methods, TheSearchThenTheBaselines) {
  EXPECT_EQ(method_names(), (std::vector<std::string>{"swapadvisor", "ideal", "odswap", "vdnn",
                                                      "swap-all", "tflms", "checkpoint", "dtr"}));
}

// At 1700 B (below the 1900-B peak, and what tflms's rules keep) every
// method plans the chain: the plan verifies, fits the budget (ideal aside:
// unlimited memory), names its method, and r.sim is its simulation with a
// timeline. Every plan copies x in (100 us) before f1 runs, so nothing
// beats 24 + 100 us.
TEST(Methods, EveryMethodPlansTheChainWithinTheBudget) {
  const Chain c = matmul_chain();
  const DeviceProfile dev = methods_link();
  const Problem pb(c.g, dev, 1700);
  ASSERT_EQ(pb.ideal_us, 24);
  for (const std::string& name : method_names()) {
    SCOPED_TRACE(name);
    const MethodResult r = run_method(name, pb, quick_options());
    ASSERT_TRUE(r.feasible) << r.why;
    EXPECT_EQ(r.name, name);
    EXPECT_EQ(r.plan.method, name);
    const VerifyResult v = verify_plan(c.g, r.plan);
    EXPECT_TRUE(v.ok) << v.violation;
    if (name != "ideal") {
      EXPECT_LE(r.plan.arena_bytes(), 1700);
      EXPECT_EQ(r.plan.memory_budget, 1700);
    }
    ASSERT_TRUE(r.sim.ok) << r.sim.error;
    EXPECT_EQ(r.sim.timeline.size(), r.plan.steps.size());
    const SimResult again = Simulator().run(c.g, r.plan, pb.op_us, dev);
    EXPECT_EQ(r.sim.iteration_us, again.iteration_us);
    EXPECT_GE(r.sim.iteration_us, 124);
    EXPECT_GE(r.sim.swap_in_bytes, 100);
    if (name == "swapadvisor") {
      EXPECT_GT(r.evaluations, 0);
      EXPECT_LE(r.evaluations, 16);
      EXPECT_TRUE(r.search.has_value());
    } else {
      EXPECT_EQ(r.evaluations, 1);
      EXPECT_FALSE(r.search.has_value());
      EXPECT_TRUE(r.from.empty());
    }
  }
}

// ideal keeps everything: it copies x in and nothing out, runs at the sum
// of the op times after that copy (100 + 24 us), and takes the peak (1900
// B) whatever the budget, which its plan's memory_budget then says.
// checkpoint (6 segments at 1700 B, Checkpoint tests) and dtr each run two
// ops again instead of copying: 126 us.
TEST(Methods, IdealAndTheRecomputingBaselinesByHand) {
  const Chain c = matmul_chain();
  const DeviceProfile dev = methods_link();
  const Problem pb(c.g, dev, 1700);
  const MethodResult ideal = run_method("ideal", pb, quick_options());
  ASSERT_TRUE(ideal.feasible) << ideal.why;
  EXPECT_EQ(ideal.sim.iteration_us, 124);
  EXPECT_EQ(ideal.sim.swap_in_bytes, 100);
  EXPECT_EQ(ideal.sim.swap_out_bytes, 0);
  EXPECT_EQ(ideal.plan.arena_bytes(), 1900);
  EXPECT_EQ(ideal.plan.memory_budget, 1900);
  EXPECT_EQ(ideal.sim.peak_device_bytes, 1900);
  for (const char* name : {"checkpoint", "dtr"}) {
    SCOPED_TRACE(name);
    const MethodResult r = run_method(name, pb, quick_options());
    ASSERT_TRUE(r.feasible) << r.why;
    EXPECT_EQ(r.sim.iteration_us, 126);
    EXPECT_EQ(r.sim.recompute_us, 2);
    EXPECT_EQ(r.sim.swap_in_bytes, 100);
    EXPECT_EQ(r.sim.swap_out_bytes, 0);
  }
}

TEST(Methods, AnUnknownNameIsAnErrorThatNamesTheKnownOnes) {
  const Chain c = matmul_chain();
  const DeviceProfile dev = methods_link();
  const Problem pb(c.g, dev, 1700);
  const std::string known =
      "(known: swapadvisor, ideal, odswap, vdnn, swap-all, tflms, checkpoint, dtr)";
  EXPECT_EQ(testing::error_of([&] { run_method("nope", pb, quick_options()); }),
            "unknown method 'nope' " + known);
  // Names are exact.
  EXPECT_EQ(testing::error_of([&] { run_method("Ideal", pb, quick_options()); }),
            "unknown method 'Ideal' " + known);
  EXPECT_EQ(testing::error_of([&] { run_method("", pb, quick_options()); }),
            "unknown method '' " + known);
}

// Below the largest op's 500 B no plan exists: the search throws, the
// baselines say why they are infeasible, and ideal, which ignores the
// budget, still plans.
TEST(Methods, BelowTheLargestOpTheSearchThrowsAndTheBaselinesSayWhy) {
  const Chain c = matmul_chain();
  const DeviceProfile dev = methods_link();
  const Problem pb(c.g, dev, 400);
  EXPECT_EQ(testing::error_of([&] { run_method("swapadvisor", pb, quick_options()); }),
            "memory budget of 400 bytes too small: op 8 (aten::mm) touches 500 bytes");
  const MethodResult odswap = run_method("odswap", pb, quick_options());
  EXPECT_FALSE(odswap.feasible);
  EXPECT_EQ(odswap.why, "op 8 (aten::mm) touches 500 B at once, more than the capacity of 400 B");
  for (const std::string& name : method_names()) {
    if (name == "swapadvisor") continue;
    SCOPED_TRACE(name);
    const MethodResult r = run_method(name, pb, quick_options());
    EXPECT_EQ(r.feasible, name == "ideal") << r.why;
    EXPECT_EQ(r.why.empty(), r.feasible);
  }
}

// run_methods: every method in method_names() order, the search last to
// run, with the baselines' plans within the budget to fall back on. A
// search that may not recompute (given one evaluation) finds nothing as
// fast as checkpoint's 126 us, and returns that plan (dtr's, as fast, is
// not faster). ideal's plan, though faster, is over the budget: never
// returned.
TEST(Methods, RunMethodsNeverLeavesTheSearchBehindABaseline) {
  const Chain c = matmul_chain();
  const DeviceProfile dev = methods_link();
  const Problem pb(c.g, dev, 1700);
  MethodOptions o = quick_options();
  o.search.max_evaluations = 1;
  o.search.recompute = false;
  const std::vector<MethodResult> all = run_methods(pb, o);
  ASSERT_EQ(all.size(), method_names().size());
  for (size_t k = 0; k < all.size(); ++k)
    EXPECT_EQ(all[k].name, method_names()[k]);
  const MethodResult& s = all[0];
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.from, "checkpoint");
  EXPECT_EQ(s.sim.iteration_us, 126);
  EXPECT_LE(s.plan.arena_bytes(), 1700);
  EXPECT_TRUE(verify_plan(c.g, s.plan).ok);
  for (const MethodResult& r : all) {
    if (r.feasible && r.name != "ideal") {
      EXPECT_LE(s.sim.iteration_us, r.sim.iteration_us) << r.name;
    }
  }
  // Alone, the same search is slower: it swaps.
  EXPECT_GT(run_method("swapadvisor", pb, o).sim.iteration_us, 126);
}

std::vector<std::string> keys_of(const nlohmann::json& j) {
  std::vector<std::string> k;
  for (const auto& [key, value] : j.items())
    k.push_back(key);
  return k;  // nlohmann::json keeps them sorted
}

// method_result_json: name and feasible, then why (infeasible), or the
// simulated iteration (sim_result_json's seven keys), the allocator, the
// arena's bytes (and pool_bytes, its old name), planning_seconds and
// evaluations; plan_from and the search's seeds only where they apply.
TEST(Methods, ResultJsonHasTheSharedFields) {
  MethodResult no;
  no.name = "tflms";
  no.why = "its rules keep too much";
  EXPECT_EQ(method_result_json(no),
            (nlohmann::json{{"name", "tflms"}, {"feasible", false}, {"why", no.why}}));

  const Chain c = matmul_chain();
  const DeviceProfile dev = methods_link();
  const Problem pb(c.g, dev, 1700);
  const MethodResult ideal = run_method("ideal", pb, quick_options());
  const nlohmann::json sim = sim_result_json(ideal.sim);
  EXPECT_EQ(keys_of(sim), (std::vector<std::string>{"compute_us", "iteration_us",
                                                    "peak_device_bytes", "recompute_us", "stall_us",
                                                    "swap_in_bytes", "swap_out_bytes"}));
  EXPECT_EQ(sim["iteration_us"], 124.0);
  EXPECT_EQ(sim["peak_device_bytes"], 1900);
  const nlohmann::json j = method_result_json(ideal);
  EXPECT_EQ(keys_of(j),
            (std::vector<std::string>{"allocator", "arena_bytes", "compute_us", "evaluations",
                                      "feasible", "iteration_us", "name", "peak_device_bytes",
                                      "planning_seconds", "pool_bytes", "recompute_us", "stall_us",
                                      "swap_in_bytes", "swap_out_bytes"}));
  EXPECT_EQ(j["allocator"], "arena");
  EXPECT_EQ(j["arena_bytes"], 1900);
  EXPECT_EQ(j["pool_bytes"], 1900);
  EXPECT_EQ(j["evaluations"], 1);

  MethodResult s = ideal;
  s.name = "swapadvisor";
  s.from = "checkpoint";
  s.search = MethodResult::SearchStats{0.5, true, 126, 0.25, 7, 1.5};
  nlohmann::json js = method_result_json(s);
  EXPECT_EQ(js["plan_from"], "checkpoint");
  EXPECT_EQ(js["search"], (nlohmann::json{{"seeds_seconds", 0.5},
                                          {"seeds_cut", true},
                                          {"best_seed_us", 126.0},
                                          {"longest_evaluation_s", 0.25},
                                          {"repeats", 7},
                                          {"time_to_95_s", 1.5}}));
  // JSON has no infinity: a search none of whose seeds planned has no best_seed_us.
  s.search->best_seed_us = std::numeric_limits<double>::infinity();
  js = method_result_json(s);
  EXPECT_FALSE(js["search"].contains("best_seed_us"));
  EXPECT_EQ(js["search"].size(), 5u);
}

}  // namespace
}  // namespace sa
