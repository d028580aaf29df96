#include <gtest/gtest.h>

#include "baselines/baselines.h"
#include "graph/graph_io.h"
#include "graph/stats.h"
#include "plan/plan_io.h"
#include "plan/verify.h"
#include "test_util.h"
#include "util/error.h"

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

TEST(PlanIo, RoundTripKeepsEveryField) {
  Fixture f;
  const Problem pb(f.g, f.dev, peak_live_bytes(f.g) / 2);
  const MethodResult r = run_baseline("odswap", pb);
  ASSERT_TRUE(r.feasible) << r.why;
  const std::string text = plan_to_json(f.g, r.plan);
  const Plan back = parse_plan(f.g, text, "p.json");
  EXPECT_EQ(plan_to_json(f.g, back), text);
  EXPECT_EQ(back.method, "odswap");
  EXPECT_EQ(back.pool.total_bytes(), r.plan.pool.total_bytes());
  EXPECT_TRUE(verify_plan(f.g, back).ok);
}

TEST(PlanIo, RefusesAnotherGraphsPlanAndBadStructure) {
  Fixture f;
  const Problem pb(f.g, f.dev, peak_live_bytes(f.g) / 2);
  const std::string text = plan_to_json(f.g, run_baseline("odswap", pb).plan);
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
  bad.replace(bad.find("\"version\":1"), 11, "\"version\":7");
  EXPECT_EQ(error_of(f.g, bad), "p.json: version: unsupported version (this reader supports 1)");

  EXPECT_NE(error_of(f.g, text.substr(0, text.size() / 2)).find("p.json"), std::string::npos);
  EXPECT_NE(error_of(f.g, "[]").find("expected an object"), std::string::npos);
}

}  // namespace
}  // namespace sa
