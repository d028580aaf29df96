// Object tenancies and the memory profile built on them, on the hand-built
// plans of plan_fixture.h, whose comments work out every tenancy and point.

#include <gtest/gtest.h>

#include "plan_fixture.h"

namespace sa {
namespace {

void expect_tenancies(const std::vector<ObjectTenancy>& got,
                      const std::vector<ObjectTenancy>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].object, want[i].object) << "tenancy " << i;
    EXPECT_EQ(got[i].tenant, want[i].tenant) << "tenancy " << i;
    EXPECT_DOUBLE_EQ(got[i].begin_us, want[i].begin_us) << "tenancy " << i;
    EXPECT_DOUBLE_EQ(got[i].end_us, want[i].end_us) << "tenancy " << i;
  }
}

void expect_points(const std::vector<MemoryPoint>& got, const std::vector<MemoryPoint>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_DOUBLE_EQ(got[i].time_us, want[i].time_us) << "point " << i;
    EXPECT_EQ(got[i].bytes, want[i].bytes) << "point " << i;
  }
}

TEST(ObjectTenancies, SizeClassFixtureByHand) {
  testing::StallFixture f;
  expect_tenancies(object_tenancies(f.graph, f.plan, f.sim.timeline, f.sim.iteration_us),
                   f.expected_tenancies);
}

// Two tenancies at offset 0, one after the other (objects 0 and 2), and a
// workspace (tenant W(1): op 1's workspace).
TEST(ObjectTenancies, ArenaFixtureByHand) {
  testing::ArenaFixture f;
  ASSERT_TRUE(f.sim.ok) << f.sim.error;
  expect_tenancies(object_tenancies(f.graph, f.plan, f.sim.timeline, f.sim.iteration_us),
                   f.expected_tenancies);
}

// An initial resident that is still in its object at the end holds it for
// the whole iteration.
TEST(ObjectTenancies, InitialResidentKeptToTheEnd) {
  testing::StallFixture f;
  Graph g = f.graph;
  g.tensors.push_back({8, TensorKind::kParam, "t3", {}, {}});
  Plan p = f.plan;
  p.memory_budget = 60;
  p.pool.class_count = {3};
  p.layout_pool();
  p.tensor_class.push_back(0);
  p.initial_resident = {{3, 2}};  // t3 in object 2, which no step touches
  const SimResult sim = Simulator().run(g, p, f.op_us, f.device, {.record_timeline = true});
  ASSERT_TRUE(sim.ok);
  std::vector<ObjectTenancy> want = f.expected_tenancies;
  want.insert(want.begin() + 1, {2, testing::T(3), 0, 59});  // begins at 0 too, after object 0's
  expect_tenancies(object_tenancies(g, p, sim.timeline, sim.iteration_us), want);
}

// memory_profile() gives the points it gave before it was built on
// object_tenancies(): the fixtures' points by hand (the trace test checks the
// trace's counters against them too).
TEST(MemoryProfile, FixturePointsByHand) {
  testing::StallFixture f;
  expect_points(f.sim.memory, f.expected_memory);
  EXPECT_EQ(f.sim.peak_device_bytes, 40);
  int64_t peak = 0;
  expect_points(memory_profile(f.graph, f.plan, f.sim.timeline, f.sim.iteration_us, &peak),
                f.expected_memory);
  EXPECT_EQ(peak, 40);

  testing::ArenaFixture a;
  expect_points(a.sim.memory, a.expected_memory);
  EXPECT_EQ(a.sim.peak_device_bytes, 34);
}

}  // namespace
}  // namespace sa
