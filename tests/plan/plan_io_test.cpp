#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "baselines/baselines.h"
#include "cost/device.h"
#include "graph/graph_io.h"
#include "graph/stats.h"
#include "plan/plan_io.h"
#include "plan/verify.h"
#include "test_util.h"
#include "util/error.h"
#include "util/file_io.h"

namespace sa {
namespace {

struct Fixture {
  Graph g = read_graph(testing::data_path("graphs/resnet50-b64.json.gz"));
  DeviceProfile dev = load_device("v100-16gb");
};

std::string error_of(const Graph& g, const std::string& text) {
  try {
    parse_plan(g, text, "p.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

// Both allocators' plans: written, read back, identical and valid.
TEST(PlanIo, RoundTripKeepsEveryField) {
  Fixture f;
  const Problem pb(f.g, f.dev, peak_live_bytes(f.g) / 2);
  for (Allocator a : {Allocator::kSizeClass, Allocator::kArena}) {
    SCOPED_TRACE(std::string(to_string(a)));
    BaselinePlan r = plan_baseline("odswap", pb, a);
    ASSERT_TRUE(r.feasible) << r.why;
    r.plan.method = "odswap";
    const std::string text = plan_to_json(f.g, r.plan);
    EXPECT_NE(text.find("\"version\":2"), std::string::npos);
    const Plan back = parse_plan(f.g, text, "p.json");
    EXPECT_EQ(plan_to_json(f.g, back), text);
    EXPECT_EQ(back.method, "odswap");
    EXPECT_EQ(back.allocator, a);
    EXPECT_EQ(back.arena_bytes(), r.plan.arena_bytes());
    EXPECT_EQ(back.num_objects(), r.plan.num_objects());
    const VerifyResult v = verify_plan(f.g, back);
    EXPECT_TRUE(v.ok) << v.violation;
  }
}

// A plan that does not verify is a bug in what made it: write_verified_plan
// says so and writes nothing (`plan -o` uses it); a valid one is written as
// write_plan writes it.
TEST(PlanIo, WritesOnlyAVerifiedPlan) {
  Fixture f;
  const Problem pb(f.g, f.dev, peak_live_bytes(f.g) / 2);
  BaselinePlan r = plan_baseline("odswap", pb, Allocator::kArena);
  ASSERT_TRUE(r.feasible) << r.why;
  r.plan.method = "odswap";
  const testing::TempDir dir;
  const std::string good = dir / "good.json", bad = dir / "bad.json";
  write_verified_plan(f.g, r.plan, good);
  EXPECT_EQ(read_file(good), plan_to_json(f.g, r.plan));
  // The first swap-out of an activation becomes a drop: its value is lost.
  Plan broken = r.plan;
  for (Step& s : broken.steps)
    if (s.kind == StepKind::kSwapOut && is_transient(f.g.tensors[s.tensor()].kind)) {
      s.kind = StepKind::kDrop;
      break;
    }
  try {
    write_verified_plan(f.g, broken, bad);
    ADD_FAILURE() << "a plan that does not verify was written";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("the odswap plan does not verify, so it was not written"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("drop"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(bad));
}

// Version 1 files (written before planned offsets) still read: as
// size-class plans, with the pool's layout.
TEST(PlanIo, ReadsVersionOne) {
  const Graph g = read_graph(testing::data_path("plans/mlp3.graph.json"));
  const Plan p = read_plan(g, testing::data_path("plans/mlp3.v1.plan.json"));
  EXPECT_EQ(p.allocator, Allocator::kSizeClass);
  ASSERT_EQ(p.pool.num_classes(), 8);
  EXPECT_EQ(p.pool.total_bytes(),
            3 * 4 + 32 + 3 * 40 + 3 * 160 + 9 * 256 + 6 * 1024 + 3 * 2560 + 3 * 16384);
  ASSERT_EQ(p.num_objects(), 3 + 1 + 3 + 3 + 9 + 6 + 3 + 3);
  EXPECT_EQ(p.objects[3].offset, 12);  // class 1's only object, after three of 4 bytes
  EXPECT_EQ(p.objects[3].bytes, 32);
  EXPECT_EQ(p.objects[3].cls, 1);
  EXPECT_TRUE(verify_plan(g, p).ok) << verify_plan(g, p).violation;
  // Written again, it is a version 2 size-class plan.
  const std::string text = plan_to_json(g, p);
  EXPECT_NE(text.find("\"version\":2"), std::string::npos);
  EXPECT_NE(text.find("\"allocator\":\"size-class\""), std::string::npos);
}

// Issue 26: recompute steps came with version 2; a version 1 plan naming
// one was accepted. Version 1's own layout (a size-class pool) with a
// recompute step added is refused, naming the step.
TEST(PlanIo, RefusesARecomputeStepInVersionOne) {
  const Graph g = read_graph(testing::data_path("plans/mlp3.graph.json"));
  std::string text = read_file(testing::data_path("plans/mlp3.v1.plan.json"));
  const Plan p = parse_plan(g, text, "p.json");
  // The first compute step of an op that may run again, duplicated as a
  // recompute step of that op naming the same objects.
  const size_t at = text.find("[\"compute\",");
  ASSERT_NE(at, std::string::npos);
  const std::string e =
      error_of(g, text.substr(0, at) + "[\"recompute\",0,[0],[]]," + text.substr(at));
  EXPECT_NE(e.find("a recompute step needs version 2 of the plan format"), std::string::npos) << e;
  EXPECT_EQ(p.allocator, Allocator::kSizeClass);
}

TEST(PlanIo, RefusesAnotherGraphsPlanAndBadStructure) {
  Fixture f;
  const Problem pb(f.g, f.dev, peak_live_bytes(f.g) / 2);
  const std::string text =
      plan_to_json(f.g, plan_baseline("odswap", pb, Allocator::kSizeClass).plan);
  Graph other = f.g;
  other.tensors[0].bytes += 4;
  EXPECT_NE(error_of(other, text)
                .find("p.json: graph.fingerprint: this plan was made for another "
                      "graph"),
            std::string::npos);

  std::string bad = text;
  bad.replace(bad.find("\"order\":[0,"), 11, "\"order\":[99999,");
  EXPECT_NE(error_of(f.g, bad).find("p.json: order[0]: 99999 is out of range"), std::string::npos)
      << error_of(f.g, bad);

  bad = text;
  bad.replace(bad.find("\"version\":2"), 11, "\"version\":7");
  EXPECT_EQ(error_of(f.g, bad),
            "p.json: version: unsupported version (this reader supports 1 and 2)");

  bad = text;
  bad.replace(bad.find("\"allocator\":\"size-class\""), 24, "\"allocator\":\"buddy\"");
  EXPECT_EQ(error_of(f.g, bad), "p.json: allocator: expected \"size-class\" or \"arena\"");

  // A budget beyond 2^63 - 1 is an error, not clamped.
  bad = text;
  const size_t at = bad.find("\"memory_budget\":");
  bad.replace(at, bad.find(',', at) - at, "\"memory_budget\":18446744073709551615");
  EXPECT_NE(error_of(f.g, bad).find("memory_budget: 18446744073709551615 is out of range"),
            std::string::npos)
      << error_of(f.g, bad);

  EXPECT_NE(error_of(f.g, text.substr(0, text.size() / 2)).find("p.json"), std::string::npos);
  EXPECT_NE(error_of(f.g, "[]").find("expected an object"), std::string::npos);
}

// A small file cannot make the reader allocate for objects nobody can use.
TEST(PlanIo, RefusesMoreObjectsThanThePlanCanName) {
  const Graph g = read_graph(testing::data_path("plans/mlp3.graph.json"));
  std::string text = read_file(testing::data_path("plans/mlp3.v1.plan.json"));
  const std::string counts = "\"class_count\":[3,1,3,3,9,6,3,3]";
  text.replace(text.find(counts), counts.size(), "\"class_count\":[3,1,3,3,9,6,3,16777216]");
  EXPECT_NE(error_of(g, text).find("pool.class_count: 16777244 objects, more than this plan could "
                                   "use"),
            std::string::npos)
      << error_of(g, text);
}

// A pool whose objects end past 2^63 - 1 bytes is refused before it is laid
// out (the offsets overflowed: undefined behaviour, found while adding the
// plan fuzzer; the input is fuzz/corpus/plan/pool-bytes-overflow.json).
TEST(PlanIo, RefusesAPoolWhoseBytesOverflow) {
  const Graph g = read_graph(testing::data_path("plans/mlp3.graph.json"));
  // mlp3.v1's pool with count objects of 2^50 bytes in its last class, and
  // 6,000 more (malformed) steps, so that the reader allows that many objects.
  auto with_pool = [](int count) {
    std::string text = read_file(testing::data_path("plans/mlp3.v1.plan.json"));
    const std::string pool =
        "{\"class_bytes\":[4,32,40,160,256,1024,2560,16384],"
        "\"class_count\":[3,1,3,3,9,6,3,3]}";
    text.replace(text.find(pool), pool.size(),
                 fmt::format("{{\"class_bytes\":[4,32,40,160,256,1024,2560,{}],"
                             "\"class_count\":[3,1,3,3,9,6,3,{}]}}",
                             int64_t{1} << 50, count));
    std::string steps;
    for (int i = 0; i < 6000; ++i)
      steps += "0,";
    text.insert(text.find("\"steps\":[") + 9, steps);
    return text;
  };
  EXPECT_EQ(error_of(g, with_pool(8192)),
            "p.json: pool: its objects take more than 2^63 - 1 bytes");
  // 8191 objects end 2^50 - 16,772 bytes short of 2^63: the pool reads (and
  // the reader goes on to the steps).
  EXPECT_EQ(error_of(g, with_pool(8191)),
            "p.json: steps[0]: expected [kind, subject, (object,) [waits]]");
}

// The plan fuzzer's seeds (fuzz/corpus/plan, made by `swapadvisor plan`;
// docs/fuzzing.md) still read and verify against the graphs it reads them
// against: a seed the reader refuses (a changed graph or fingerprint) would
// leave fuzz_plan mutating refused input.
TEST(PlanIo, FuzzSeedPlansVerify) {
  const std::filesystem::path dir = std::filesystem::path(SA_TEST_DATA) / "../../fuzz/corpus/plan";
  const Graph graphs[] = {read_graph(testing::data_path("plans/mlp3.graph.json")),
                          read_graph(testing::data_path("capture/tiny_mlp.graph.json.gz")),
                          read_graph(testing::data_path("capture/tiny_cnn.graph.json.gz"))};
  int seeds = 0, recomputes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string path = entry.path().string();
    if (!path.ends_with(".plan.json")) continue;  // the others found bugs
    SCOPED_TRACE(path);
    const std::string text = read_file(path);
    const Graph* g = &graphs[0];  // fuzz_plan's choice: the graph the plan names, else mlp-3
    for (const Graph& other : graphs)
      if (text.find("\"name\":\"" + other.name + "\"") != std::string::npos) g = &other;
    const Plan p = parse_plan(*g, text, path);
    const VerifyResult v = verify_plan(*g, p);
    EXPECT_TRUE(v.ok) << v.violation;
    ++seeds;
    recomputes += std::count_if(p.steps.begin(), p.steps.end(),
                                [](const Step& s) { return s.kind == StepKind::kRecompute; });
  }
  EXPECT_GE(seeds, 5);
  EXPECT_GE(recomputes, 1);
}

}  // namespace
}  // namespace sa
