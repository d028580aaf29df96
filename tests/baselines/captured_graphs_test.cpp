// Every baseline on the captured graphs of tests/data/graphs, with both
// allocators: at 40% of each graph's peak live bytes (the budget of
// docs/results.md's comparisons) every plan a baseline calls feasible
// verifies (plan/verify.h) and fits the budget (ideal's aside: unlimited
// memory), and every infeasible one says why. The recomputing baselines
// rarely fit there (in-place updates and tensors dead before backward limit
// what may be recomputed, Note [Recomputation]), so they are also checked at
// 70%, where most do: they verify and copy no activation.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "baseline_test_util.h"
#include "baselines/baselines.h"
#include "cost/device.h"
#include "graph/graph_io.h"
#include "graph/stats.h"
#include "plan/problem.h"
#include "test_util.h"

namespace sa {
namespace {

std::vector<std::string> captured_graphs() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(testing::data_path("graphs"))) {
    const std::string name = e.path().filename().string();
    if (name.ends_with(".json.gz")) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Plans `names` on g at `percent` of its peak live bytes with both
// allocators; checks the feasible plans and returns how many there were.
int check_baselines(const Graph& g, const std::vector<std::string>& names, int percent) {
  const DeviceProfile dev = load_device("v100-16gb");
  const Problem pb(g, dev, peak_live_bytes(g) * percent / 100);
  int feasible = 0;
  for (const std::string& name : names)
    for (Allocator alloc : {Allocator::kArena, Allocator::kSizeClass}) {
      const std::string what =
          fmt::format("{} on {} at {}% ({})", name, g.name, percent, to_string(alloc));
      const BaselinePlan r = plan_baseline(name, pb, alloc);
      if (!r.feasible) {
        EXPECT_FALSE(r.why.empty()) << what;
        continue;
      }
      ++feasible;
      testing::check_plan(g, name, r, pb.budget, what);
    }
  return feasible;
}

class CapturedGraph : public ::testing::TestWithParam<std::string> {};

TEST_P(CapturedGraph, EveryFeasibleBaselinePlanVerifies) {
  const Graph g = read_graph(testing::data_path("graphs/" + GetParam()));
  EXPECT_GE(check_baselines(g, baseline_names(), 40), 4) << "ideal and odswap fit, at least";
  check_baselines(g, {"checkpoint", "dtr"}, 70);
}

INSTANTIATE_TEST_SUITE_P(Graphs, CapturedGraph, ::testing::ValuesIn(captured_graphs()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string s = info.param.substr(0, info.param.find('.'));
                           std::replace_if(
                               s.begin(), s.end(), [](char c) { return !std::isalnum(c); }, '_');
                           return s;
                         });

TEST(CapturedGraphs, AllTenAreThere) {
  EXPECT_EQ(captured_graphs().size(), 10u);
}

}  // namespace
}  // namespace sa
