// The Chrome trace of the hand-built plan of plan_fixture.h: valid JSON, one
// event per step on the right track, and counters that follow the simulator.

#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "plan/host_tier.h"
#include "plan_fixture.h"
#include "report/class_memory.h"
#include "report/trace.h"

namespace sa {
namespace {

using nlohmann::json;

json fixture_trace(const testing::StallFixture& f) {
  return json::parse(trace_to_json(f.graph, f.plan, f.sim, {.title = "fixture"}));
}

TEST(Trace, IsJsonWithOneEventPerStep) {
  testing::StallFixture f;
  const json t = fixture_trace(f);
  ASSERT_TRUE(t.contains("traceEvents"));
  std::map<int, int> slices;  // tid -> complete events
  int instants = 0;
  std::vector<int> steps_seen;
  for (const json& e : t["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "X") ++slices[e["tid"].get<int>()];
    if (ph == "i") {
      ++instants;
      EXPECT_EQ(e["tid"], 4);
      EXPECT_EQ(e["s"], "t");
    }
    if (ph == "X" || ph == "i") steps_seen.push_back(e["args"]["step"]);
  }
  EXPECT_EQ(slices[1], 4);  // compute
  EXPECT_EQ(slices[2], 4);  // host→device
  EXPECT_EQ(slices[3], 1);  // device→host
  EXPECT_EQ(instants, 2);   // drops
  std::sort(steps_seen.begin(), steps_seen.end());
  ASSERT_EQ(static_cast<int>(steps_seen.size()), f.plan.num_steps());
  for (int s = 0; s < f.plan.num_steps(); ++s)
    EXPECT_EQ(steps_seen[s], s);
}

TEST(Trace, StepsAreNamedAndTimed) {
  testing::StallFixture f;
  const json t = fixture_trace(f);
  std::map<int, json> by_step;
  std::map<std::string, std::string> track_names;
  for (const json& e : t["traceEvents"]) {
    if (e["ph"] == "X" || e["ph"] == "i") by_step[e["args"]["step"]] = e;
    if (e["ph"] == "M" && e["name"] == "thread_name")
      track_names[std::to_string(e["tid"].get<int>())] = e["args"]["name"];
  }
  EXPECT_EQ(track_names["1"], "compute");
  EXPECT_EQ(track_names["4"], "drops");
  EXPECT_EQ(by_step[1]["name"], "op0");          // named op
  EXPECT_EQ(by_step[3]["name"], "test::op #1");  // unnamed: type and id
  EXPECT_EQ(by_step[3]["cat"], "forward");
  EXPECT_EQ(by_step[2]["name"], "t1 (20 B)");  // tensor and bytes
  EXPECT_EQ(by_step[6]["name"], "tensor #2 (6 B)");
  EXPECT_EQ(by_step[2]["args"]["bytes"], 20);
  EXPECT_DOUBLE_EQ(by_step[4]["ts"].get<double>(), 29);
  EXPECT_DOUBLE_EQ(by_step[4]["dur"].get<double>(), 20);
  EXPECT_EQ(by_step[4]["cat"], "swap_out");
  EXPECT_DOUBLE_EQ(by_step[9]["ts"].get<double>(), 58);  // a drop: when it finishes
  // The stalled op2 says how long and on what.
  EXPECT_DOUBLE_EQ(by_step[7]["args"]["stalled_us"].get<double>(), 20);
  EXPECT_EQ(by_step[7]["args"]["waited_for"], "step 4: swap_out of t1");
  EXPECT_FALSE(by_step[8]["args"].contains("stalled_us"));
}

TEST(Trace, CountersFollowTheMemoryProfile) {
  testing::StallFixture f;
  const json t = fixture_trace(f);
  std::vector<std::pair<double, int64_t>> total;
  std::map<std::string, int> class_events;
  for (const json& e : t["traceEvents"]) {
    if (e["ph"] != "C") continue;
    if (e["name"] == "device memory")
      total.push_back({e["ts"], e["args"]["in use"]});
    else if (e["name"] != "host memory" && e["name"] != "on NVMe")
      ++class_events[e["name"]];
  }
  ASSERT_EQ(total.size(), f.sim.memory.size());
  for (size_t i = 0; i < total.size(); ++i) {
    EXPECT_NEAR(total[i].first, f.sim.memory[i].time_us, 1e-3);
    EXPECT_EQ(total[i].second, f.sim.memory[i].bytes);
  }
  ASSERT_EQ(class_events.size(), 1u);
  EXPECT_EQ(class_events.begin()->first, "class 0 (2 x 20 B)");
}

// Note [Host tier]: a copy of a tensor on NVMe says so; host memory and NVMe
// are counters (Note [Host memory over time]): the fixture's three params
// are at home on the host, 64 B a slot, all iteration.
TEST(Trace, NvmeCopiesAndHostMemoryAreShown) {
  testing::StallFixture f;
  std::map<int, json> by_step;
  std::vector<int64_t> host, nvme;
  auto read = [&](const json& t) {
    by_step.clear();
    host.clear();
    nvme.clear();
    for (const json& e : t["traceEvents"]) {
      if (e["ph"] == "X" || e["ph"] == "i") by_step[e["args"]["step"]] = e;
      if (e["ph"] == "C" && e["name"] == "host memory") host.push_back(e["args"]["in use"]);
      if (e["ph"] == "C" && e["name"] == "on NVMe") nvme.push_back(e["args"]["in use"]);
    }
  };
  read(fixture_trace(f));
  EXPECT_EQ(by_step[4]["args"]["tier"], "host");
  EXPECT_EQ(host, (std::vector<int64_t>{3 * 64}));
  EXPECT_EQ(host.front(), host_use(f.graph, f.plan).total());
  const TensorId t1 = f.plan.steps[4].tensor();
  f.plan.host_budget = int64_t{1} << 30;
  f.plan.nvme_tensors = {t1};
  const json t = fixture_trace(f);
  read(t);
  EXPECT_EQ(by_step[4]["name"], "t1 (20 B) via NVMe");
  EXPECT_EQ(by_step[4]["args"]["tier"], "nvme");
  EXPECT_EQ(by_step[2]["args"]["tier"], "nvme");  // its swap-in too
  EXPECT_EQ(host.front(), host_use(f.graph, f.plan).total());
  EXPECT_EQ(nvme, (std::vector<int64_t>{20}));
  EXPECT_EQ(t["otherData"]["nvme_bytes"], 20);
}

// Groups of size classes add up to the total at every point of the profile.
TEST(ClassMemory, GroupsAddUpToTheTotal) {
  testing::StallFixture f;
  // Split the pool into two classes: object 0 (class 0) and object 1 (class 1).
  Plan p = f.plan;
  p.pool.class_bytes = {20, 24};
  p.pool.class_count = {1, 1};
  p.layout_pool();
  p.tensor_class = {0, 0, 0};
  const SimResult sim = Simulator().run(f.graph, p, f.op_us, f.device, {.record_timeline = true});
  ASSERT_TRUE(sim.ok);
  for (int groups : {1, 2, 5}) {
    const auto by_class = memory_by_class(f.graph, p, sim.timeline, sim.iteration_us, groups);
    ASSERT_EQ(static_cast<int>(by_class.size()), std::min(groups, 2));
    auto at = [](const std::vector<MemoryPoint>& pts, double t) {
      int64_t b = 0;
      for (const MemoryPoint& m : pts)
        if (m.time_us <= t) b = m.bytes;
      return b;
    };
    for (const MemoryPoint& m : sim.memory) {
      int64_t sum = 0;
      for (const ClassMemory& c : by_class)
        sum += at(c.points, m.time_us);
      EXPECT_EQ(sum, m.bytes) << "at " << m.time_us << " us with " << groups << " groups";
    }
  }
  const auto two = memory_by_class(f.graph, p, sim.timeline, sim.iteration_us, 2);
  EXPECT_EQ(two[0].label, "class 1 (1 x 24 B)");  // the most pool bytes first
  const auto one = memory_by_class(f.graph, p, sim.timeline, sim.iteration_us, 1);
  EXPECT_EQ(one[0].label, "2 smaller classes");
}

}  // namespace
}  // namespace sa
