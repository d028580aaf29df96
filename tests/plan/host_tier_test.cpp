// The host tier (Note [Host tier], plan/host_tier.h): host slots, the NVMe
// policies, the simulator's staged NVMe copies and the verifier's rule S7,
// on hand-built plans with figures worked out in the comments.

#include <gtest/gtest.h>

#include "graph/stats.h"
#include "host_budget_case.h"
#include "plan/allocation.h"
#include "plan/bounds.h"
#include "plan/host_tier.h"
#include "plan/plan_io.h"
#include "plan/planner.h"
#include "plan/problem.h"
#include "plan/simulator.h"
#include "plan/verify.h"
#include "random_graph.h"
#include "test_util.h"

namespace sa {
namespace {

using testing::add_step;
using testing::GraphBuilder;

constexpr int64_t kMiB = int64_t{1} << 20;

DeviceProfile unit_link_with_nvme() {
  DeviceProfile d = testing::unit_link();
  d.nvme_read_gbps = 0.0005;  // 0.5 B/us
  d.nvme_write_gbps = 0.00025;
  d.nvme_latency_us = 10;
  d.nvme_queue_depth = 1;
  return d;
}

// p (param, 100 B, home on the host), q (param, 50 B, on the device all
// along), a (activation, 30 B, out and in), c (activation, 20 B, never
// copied), o (optimizer state, 40 B, on the device at the start, out and
// back). Host slots: p, a, o: 100 + 30 + 40 B, each rounded up to 64 B
// (kHostSlotAlignment): 128 + 64 + 64 = 256 B.
TEST(HostTier, SlotsAndUseByHand) {
  GraphBuilder b;
  const TensorId p = b.tensor(100, TensorKind::kParam), q = b.tensor(50, TensorKind::kParam);
  const TensorId a = b.tensor(30, TensorKind::kActivation);
  b.tensor(20, TensorKind::kActivation);
  const TensorId o = b.tensor(40, TensorKind::kOptimizerState);
  Plan pl;
  pl.initial_resident = {{q, 0}, {o, 1}};
  add_step(pl, StepKind::kSwapOut, a, 2, {});
  add_step(pl, StepKind::kSwapOut, o, 1, {});
  add_step(pl, StepKind::kSwapIn, a, 2, {});
  add_step(pl, StepKind::kSwapIn, o, 1, {});
  EXPECT_EQ(host_slots(b.g, pl), (std::vector<uint8_t>{1, 0, 1, 0, 1}));
  HostUse u = host_use(b.g, pl);
  EXPECT_EQ(u.slot_bytes, 256);
  EXPECT_EQ(u.staging_bytes, 0);
  EXPECT_EQ(u.nvme_bytes, 0);
  // The arena (Note [Host arena]): no staging, then p, a, o.
  HostArena arena = host_arena(b.g, pl);
  EXPECT_EQ(arena.slot_offset, (std::vector<int64_t>{0, -1, 128, -1, 192}));
  EXPECT_EQ(arena.bytes, 256);
  // p on NVMe: 128 B of slots and staging of 4 x 100 B (under a chunk), in
  // whole 4096-byte blocks, first in the arena.
  pl.nvme_tensors = {p};
  u = host_use(b.g, pl);
  EXPECT_EQ(u.slot_bytes, 128);
  EXPECT_EQ(u.staging_bytes, 4 * 4096);
  EXPECT_EQ(u.nvme_bytes, 100);
  EXPECT_EQ(u.total(), 128 + 4 * 4096);
  arena = host_arena(b.g, pl);
  EXPECT_EQ(arena.staging_chunk, 4096);
  EXPECT_EQ(arena.slot_offset, (std::vector<int64_t>{-1, -1, 4 * 4096, -1, 4 * 4096 + 64}));
  EXPECT_EQ(arena.bytes, u.total());
  EXPECT_EQ(nvme_staging_bytes(kNvmeChunkBytes * 3), 4 * kNvmeChunkBytes);
}

// x 100 MiB (out, in), y 50 MiB (out, in x5: 6 copies), z 200 MiB (out,
// in), p 30 MiB (param at home on the host, in once): 380 MiB of slots.
// Steps: out z, out x, out y, then the swap-ins. The budget of 264 MiB
// holds 200 MiB of slots beside 64 MiB of staging (chunks of 16 MiB).
struct PolicyCase {
  GraphBuilder b;
  TensorId x, y, z, p;
  Plan plan;
  PolicyCase() {
    x = b.tensor(100 * kMiB, TensorKind::kActivation);
    y = b.tensor(50 * kMiB, TensorKind::kActivation);
    z = b.tensor(200 * kMiB, TensorKind::kActivation);
    p = b.tensor(30 * kMiB, TensorKind::kParam);
    for (TensorId t : {z, x, y})
      add_step(plan, StepKind::kSwapOut, t, 0, {});
    for (TensorId t : {x, z, p, y, y, y, y, y})
      add_step(plan, StepKind::kSwapIn, t, 0, {});
    plan.host_budget = 264 * kMiB;
  }
  std::vector<TensorId> place(HostTierPolicy policy, std::vector<double> cost = {}) {
    std::string why;
    EXPECT_TRUE(place_on_nvme(b.g, unit_link_with_nvme(), policy, cost, &plan, &why)) << why;
    return plan.nvme_tensors;
  }
};

TEST(HostTier, PoliciesChooseByHand) {
  PolicyCase c;
  // Copies per MiB: z 2/200, x 2/100, p 1/30, y 6/50: z alone leaves 180.
  EXPECT_EQ(c.place(HostTierPolicy::kFewestCopies), (std::vector<TensorId>{c.z}));
  // Kept in first-evicted order (p, at home, first; then z, x, y): y, then
  // x, then z go (330, 230, 30 MiB left).
  EXPECT_EQ(c.place(HostTierPolicy::kFirstEvicted), (std::vector<TensorId>{c.x, c.y, c.z}));
  // Stall costs x 0, y 5, z 100, p 0 us: x and p cost nothing (x first,
  // larger), then y (0.1 us/MiB) before z (0.5): 280, 250, 200 MiB left.
  std::vector<double> cost(4);
  cost[c.x] = 0;
  cost[c.y] = 5;
  cost[c.z] = 100;
  cost[c.p] = 0;
  EXPECT_EQ(c.place(HostTierPolicy::kLeastStall, cost), (std::vector<TensorId>{c.x, c.y, c.p}));
  EXPECT_EQ(host_use(c.b.g, c.plan).total(), 200 * kMiB + 64 * kMiB);
  EXPECT_TRUE(host_fits(c.b.g, c.plan));
}

TEST(HostTier, SaysWhyItCannotFit) {
  PolicyCase c;
  std::string why;
  EXPECT_FALSE(
      place_on_nvme(c.b.g, testing::unit_link(), HostTierPolicy::kLeastStall, {}, &c.plan, &why));
  EXPECT_NE(why.find("no NVMe tier"), std::string::npos) << why;
  c.plan.host_budget = 32 * kMiB;  // under the staging alone
  EXPECT_FALSE(
      place_on_nvme(c.b.g, unit_link_with_nvme(), HostTierPolicy::kLeastStall, {}, &c.plan, &why));
  EXPECT_NE(why.find("staging"), std::string::npos) << why;
  EXPECT_TRUE(c.plan.nvme_tensors.empty());
  c.plan.host_budget = 0;  // unlimited: nothing moves
  EXPECT_TRUE(
      place_on_nvme(c.b.g, testing::unit_link(), HostTierPolicy::kLeastStall, {}, &c.plan, &why));
  EXPECT_TRUE(c.plan.nvme_tensors.empty());
}

// t (param, 1000 B) comes in, then op 0 reads it. On NVMe at 0.5 B/us
// behind a 1 B/us link, in one chunk: 10 us of latency, 2000 us to read,
// then 1000 us to copy.
TEST(HostTier, TheSimulatorStagesNvmeCopiesByHand) {
  GraphBuilder b;
  const TensorId t = b.tensor(1000, TensorKind::kParam);
  b.op({t}, {}, {}, 5);
  Plan p;
  add_step(p, StepKind::kSwapIn, t, 0, {});
  add_step(p, StepKind::kCompute, 0, kNoObject, {0});
  p.pool.class_bytes = {1000};
  p.pool.class_count = {1};
  p.layout_pool();
  p.access_begin = {0, 1};
  p.access_objects = {0};
  const std::vector<double> times{5};
  Simulator sim;
  SimResult r = sim.run(b.g, p, times, unit_link_with_nvme());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NEAR(r.iteration_us, 1005, 1e-9);
  p.host_budget = 1;
  p.nvme_tensors = {t};
  r = sim.run(b.g, p, times, unit_link_with_nvme());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NEAR(r.iteration_us, 3010 + 5, 1e-9);
  EXPECT_EQ(r.nvme_read_bytes, 1000);
  EXPECT_EQ(r.nvme_write_bytes, 0);
  r = sim.run(b.g, p, times, testing::unit_link());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("no NVMe tier"), std::string::npos) << r.error;
}

// Chunks overlap (Note [Host tier]): 40 MiB in chunks of C = 16 MiB (16, 16,
// 8 MiB). In: read 2C + 10, then the copies run beside the next reads:
//   (2C + 10) + max(2C + 10, C) + max(C + 10, C) + C / 2 = 5.5 C + 30 us
// (unstaged it would be 7.5 C + 30: the link's 2.5 C after all the reads).
// Out: copy C, then the writes (0.25 B/us: 4C + 10 a chunk) beside the
// next copies:
//   C + max(C, 4C + 10) + max(C / 2, 4C + 10) + (2C + 10) = 11 C + 30 us.
// One chunk: no overlap, read then copy.
TEST(HostTier, StagedCopiesOverlapTheDiskAndTheLinkByHand) {
  const DeviceProfile d = unit_link_with_nvme();
  const double c = static_cast<double>(kNvmeChunkBytes);
  const int64_t bytes = 40 * kMiB;
  EXPECT_DOUBLE_EQ(nvme_staged_us(bytes, true, d), 5.5 * c + 30);
  EXPECT_DOUBLE_EQ(nvme_staged_us(bytes, false, d), 11 * c + 30);
  EXPECT_DOUBLE_EQ(nvme_added_us(bytes, true, d), 5.5 * c + 30 - 2.5 * c);
  EXPECT_DOUBLE_EQ(nvme_staged_us(1000, true, d), 2000 + 10 + 1000);
  EXPECT_DOUBLE_EQ(nvme_staged_us(kNvmeChunkBytes, false, d), c + 4 * c + 10);
}

// Planner plans with a host budget at 60% of what the unlimited plan's
// slots take, on random graphs (seeds printed): each keeps to it with NVMe
// (S7 holds), reads back from its file, and the verifier names a plan
// over the budget; without an NVMe tier the planner says why it cannot.
TEST(HostTier, PlannerPlansKeepTheHostBudgetAndVerify) {
  const DeviceProfile d = unit_link_with_nvme();
  const DeviceProfile plain = testing::unit_link();
  int with_nvme = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(::testing::Message() << "graph seed " << seed);
    const Graph g = testing::random_graph(24, seed);
    const auto c = testing::host_budget_case(g, d);
    if (!c || c->host_budget <= 0) continue;
    const std::vector<OpId>& order = c->order;
    const int64_t budget = c->budget, host_budget = c->host_budget;
    const Problem tight(g, d, budget, 1.0, {}, host_budget);
    Planner planner(tight);
    Plan p;
    SimResult sim;
    const PlanResult r = planner.plan(order, nullptr, {}, &p, &sim);
    if (!r.ok) {
      EXPECT_NE(r.why.find("staging"), std::string::npos) << r.why;
      continue;
    }
    ++with_nvme;
    ASSERT_TRUE(sim.ok) << sim.error;
    EXPECT_FALSE(p.nvme_tensors.empty());
    EXPECT_LE(host_use(g, p).total(), host_budget);
    EXPECT_GT(sim.nvme_read_bytes + sim.nvme_write_bytes, 0);
    const VerifyResult v = verify_plan(g, p);
    EXPECT_TRUE(v.ok) << v.violation;
    // No plan beats Note [Tiered transfer bound] (recomputing or not).
    const TimeBound tiered =
        time_bound(g, p.order, tight.op_us, d, budget, /*recompute=*/true, host_budget);
    EXPECT_GE(sim.iteration_us, tiered.bound_us() * (1 - 1e-9));
    EXPECT_GE(tiered.bound_us(), time_bound(g, p.order, tight.op_us, d, budget, true).bound_us());
    const Plan back = parse_plan(g, plan_to_json(g, p), "test");
    EXPECT_EQ(back.host_budget, p.host_budget);
    EXPECT_EQ(back.nvme_tensors, p.nvme_tensors);
    Plan over = p;
    over.nvme_tensors.clear();
    VerifyResult bad = verify_plan(g, over);
    EXPECT_NE(bad.violation.find("over the host budget"), std::string::npos) << bad.violation;
    over = p;
    over.host_budget = 0;
    bad = verify_plan(g, over);
    EXPECT_NE(bad.violation.find("without a host budget"), std::string::npos) << bad.violation;
    const Problem no_nvme(g, plain, budget, 1.0, {}, host_budget);
    Planner refused(no_nvme);
    const PlanResult rr = refused.plan(order, nullptr, {}, &over);
    EXPECT_FALSE(rr.ok);
    EXPECT_NE(rr.why.find("no NVMe tier"), std::string::npos) << rr.why;
  }
  EXPECT_GE(with_nvme, 4) << "too few graphs planned with NVMe to test much";
}

}  // namespace
}  // namespace sa
