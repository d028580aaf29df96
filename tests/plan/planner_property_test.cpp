// Property tests of the planners: every plan the swap planner makes on
// random graphs (every order, budget and option) and every plan a baseline
// makes verifies (plan/verify.h) and simulates; and the random graphs they
// plan are valid and varied.
//
// The random tests print their seed; rerun with SA_TEST_SEED=<seed> to
// reproduce a failure.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>

#include "baselines/baselines.h"
#include "cost/device.h"
#include "graph/stats.h"
#include "graph/validate.h"
#include "plan/allocation.h"
#include "plan/problem.h"
#include "planner_cases.h"
#include "random_graph.h"

namespace sa {
namespace {

using testing::min_feasible_budget;
using testing::plan_and_verify;
using testing::slow_link;
using testing::Tally;
using testing::test_seed;
using testing::verify_case;

int graph_count() {
  return 220;
}

TEST(VerifyProperty, RandomGraphsValidate) {
  std::mt19937_64 rng(test_seed());
  int shared_classes = 0, workspaces = 0, updates = 0;
  for (int i = 0; i < 50; ++i) {
    const Graph g = testing::random_graph(1 + static_cast<int>(rng() % 20), rng());
    EXPECT_NO_THROW(validate_graph(g, g.name));
    // Several tensors per size (so classes hold several), some workspaces,
    // in-place updates of transients (relu_, gradient accumulation).
    shared_classes += distinct_sizes(g) < g.num_tensors() / 2;
    for (const Op& op : g.ops) {
      workspaces += op.workspace_bytes > 0;
      for (TensorId t : op.updates)
        updates += is_transient(g.tensors[t].kind);
    }
  }
  EXPECT_GE(shared_classes, 40);
  EXPECT_GT(workspaces, 50);
  EXPECT_GT(updates, 50);
  // The same options give the same graph.
  const Graph a = testing::random_graph(9, 77), b = testing::random_graph(9, 77);
  ASSERT_EQ(a.num_ops(), b.num_ops());
  ASSERT_EQ(a.num_tensors(), b.num_tensors());
  for (int o = 0; o < a.num_ops(); ++o) {
    EXPECT_EQ(a.ops[o].inputs, b.ops[o].inputs);
    EXPECT_EQ(a.ops[o].updates, b.ops[o].updates);
    EXPECT_EQ(a.ops[o].workspace_bytes, b.ops[o].workspace_bytes);
  }
}

TEST(VerifyProperty, EveryPlannerPlanVerifies) {
  const uint64_t seed = test_seed();
  RecordProperty("seed", std::to_string(seed));
  std::mt19937_64 rng(seed);
  Tally tally;
  for (int i = 0; i < graph_count() && tally.failures < 5; ++i) {
    testing::RandomGraphOptions go;
    go.layers = 2 + static_cast<int>(rng() % 14);
    go.seed = rng();
    // Every other graph's buffer updates are batch norm's (Note [Recompute
    // without updates]).
    go.state_update = i % 2 ? 0.8 : 0;
    const Graph g = testing::random_graph(go);
    validate_graph(g, g.name);
    const std::string label =
        fmt::format("graph {} (random_graph layers {}, seed {}{})", i, go.layers, go.seed,
                    go.state_update > 0 ? ", state_update 0.8" : "");
    plan_and_verify(g, label, rng, nullptr, &tally);
    if (HasFatalFailure()) return;
  }
  tally.print("swap planner on random graphs", seed);
  EXPECT_EQ(tally.failures, 0);
  EXPECT_GE(tally.planned, 200 * 16);
  EXPECT_GT(tally.recompute_steps, 1000);  // the recompute variants do recompute
  EXPECT_GT(tally.replay_steps, 100);      // and replay in-place updates (relu_)
  EXPECT_GT(tally.state_skips, 100);       // and run batch norms without their updates
  EXPECT_GT(tally.repaired, 0);            // and some needed a repair
}

TEST(VerifyProperty, EveryBaselinePlanVerifies) {
  const uint64_t seed = test_seed() + 1;
  std::mt19937_64 rng(seed);
  Tally tally;
  for (int i = 0; i < 40; ++i) {
    const int layers = 2 + static_cast<int>(rng() % 12);
    const uint64_t gseed = rng();
    const Graph g = testing::random_graph(layers, gseed);
    const DeviceProfile dev = i % 2 ? slow_link() : load_device("v100-16gb");
    const SizeTable t = make_size_table(g);
    const int64_t lo = min_feasible_budget(g, t);
    const int64_t hi = std::max(lo, peak_live_bytes(g));
    const int64_t budget = lo + static_cast<int64_t>(rng() % (hi - lo + 1));
    const Problem pb(g, dev, budget);
    for (const std::string& name : baseline_names())
      for (Allocator alloc : {Allocator::kSizeClass, Allocator::kArena}) {
        const BaselinePlan r = plan_baseline(name, pb, alloc);
        if (!r.feasible) continue;
        verify_case(g, r.plan,
                    fmt::format("{} on random_graph({}, {}), budget {}, {}, {}", name, layers,
                                gseed, budget, dev.name, to_string(alloc)),
                    &tally);
      }
  }
  tally.print("baselines on random graphs", seed);
  EXPECT_EQ(tally.failures, 0);
  EXPECT_GT(tally.planned, 40);
}

}  // namespace
}  // namespace sa
