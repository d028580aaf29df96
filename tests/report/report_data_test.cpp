// The report page: placeholders filled, data embedded safely and complete;
// the arena and sweep data of hand-built plans (plan_fixture.h).

#include <algorithm>
#include <cmath>
#include <tuple>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "graph/graph_io.h"
#include "graph/stats.h"
#include "plan_fixture.h"
#include "report/report.h"
#include "report/report_data.h"
#include "report/traffic.h"

namespace sa {
namespace {

using nlohmann::json;

// The report of a fixture's plan (main), beside an infeasible method.
template <class Fixture>
struct ReportOf {
  Fixture f;
  std::vector<MethodResult> methods;
  ReportOf() {
    MethodResult r;
    r.name = "hand";
    r.feasible = true;
    r.plan = f.plan;
    r.sim = f.sim;
    methods.push_back(r);
    MethodResult bad;
    bad.name = "vdnn";
    bad.why = "keeps too much";
    methods.push_back(bad);
  }
  ReportInput input() const {
    return {.graph = f.graph,
            .device = f.device,
            .budget = f.plan.memory_budget,
            .peak_live = 30,
            .batch = std::nullopt,
            .ideal_us = 21,
            .methods = methods,
            .main = 0,
            .origin = "built by hand",
            .source = "plan_fixture.h"};
  }
};
using Report = ReportOf<testing::StallFixture>;

// Adds back the deltas of a delta-encoded column.
std::vector<int64_t> sums(const json& deltas) {
  std::vector<int64_t> out;
  int64_t acc = 0;
  for (const json& d : deltas)
    out.push_back(acc += d.get<int64_t>());
  return out;
}

TEST(ReportData, ColumnsMatchThePlan) {
  Report r;
  const json d = json::parse(report_data_json(r.input()));
  EXPECT_EQ(d["summary"]["iteration_us"], 59);
  EXPECT_EQ(d["summary"]["stall_us"], 38);
  EXPECT_EQ(d["methods"].size(), 2u);
  EXPECT_EQ(d["methods"][1]["feasible"], false);
  const json& c = d["lanes"]["compute"];
  EXPECT_EQ(sums(c["start"]), (std::vector<int64_t>{4000, 24000, 49000, 58000}));
  EXPECT_EQ(c["dur"], json({10000, 5000, 5000, 1000}));
  EXPECT_EQ(c["subject"], json({0, 1, 2, 3}));
  EXPECT_EQ(d["lanes"]["h2d"]["dur"].size(), 4u);
  EXPECT_EQ(d["lanes"]["d2h"]["dur"].size(), 1u);
  EXPECT_EQ(sums(d["drops"]["time"]), (std::vector<int64_t>{14000, 58000}));
  EXPECT_EQ(d["memory"]["time"].size(), r.f.sim.memory.size());
  // Tensor rows: every subject of a copy lane indexes the tensor table.
  const json& tensors = d["tensors"];
  for (const char* lane : {"h2d", "d2h"})
    for (const json& s : d["lanes"][lane]["subject"])
      EXPECT_LT(s.get<size_t>(), tensors["id"].size());
  const int top_row = d["stalls"]["top"]["culprit_tensor"][0];
  EXPECT_EQ(tensors["id"][top_row], 1);  // the longest stall (20 us) is on t1
  EXPECT_EQ(d["stalls"]["top"]["idle_ns"][0], 20000);
  EXPECT_EQ(d["stalls"]["count"], 4);
  EXPECT_EQ(tensors["id"][d["traffic"]["tensor"][0].get<int>()], 1);
}

// The tenancy columns as (object, tensor id or -1 - op, begin ns, end ns).
using TenancyRow = std::tuple<int, int, int64_t, int64_t>;
std::vector<TenancyRow> tenancy_rows(const json& d) {
  const json& t = d["arena"]["tenancies"];
  const std::vector<int64_t> begin = sums(t["begin"]);
  std::vector<TenancyRow> out;
  for (size_t i = 0; i < begin.size(); ++i) {
    const int tenant = t["tenant"][i];
    const int id = tenant >= 0 ? d["tensors"]["id"][tenant].get<int>() : tenant;
    out.push_back({t["object"][i], id, begin[i], begin[i] + t["dur"][i].get<int64_t>()});
  }
  return out;
}
std::vector<TenancyRow> in_ns(const std::vector<ObjectTenancy>& want) {
  std::vector<TenancyRow> out;
  for (const ObjectTenancy& e : want)
    out.push_back({e.object,
                   e.tenant.is_tensor() ? e.tenant.tensor() : -1 - e.tenant.workspace_op(),
                   std::llround(e.begin_us * 1e3), std::llround(e.end_us * 1e3)});
  return out;
}

// The fixture's objects, and its tenancies (plan_fixture.h works them out).
TEST(ReportArena, SizeClassPlan) {
  Report r;
  const json d = json::parse(report_data_json(r.input()));
  const json& o = d["arena"]["objects"];
  EXPECT_EQ(sums(o["offset"]), (std::vector<int64_t>{0, 20}));
  EXPECT_EQ(o["bytes"], json({20, 20}));
  EXPECT_EQ(o["cls"], json({0, 0}));
  EXPECT_EQ(tenancy_rows(d), in_ns(r.f.expected_tenancies));
  // As stored: begins 0, 4, 24, 54 us as deltas; durations 14, 45, 34, 0 us.
  EXPECT_EQ(d["arena"]["tenancies"]["begin"], json({0, 4000, 20000, 30000}));
  EXPECT_EQ(d["arena"]["tenancies"]["dur"], json({14000, 45000, 34000, 0}));
  EXPECT_EQ(d["summary"]["allocator"], "size-class");
  EXPECT_EQ(d["summary"]["arena_bytes"], 40);
  EXPECT_EQ(d["summary"]["objects"], 2);
  EXPECT_FALSE(d.contains("sweep"));
}

// Objects 0 and 2 share offset 0 (t0 until 14, then t2 from 24); object 3
// lies inside object 1's range, filled at 54 after t1 left object 1 at 49.
TEST(ReportArena, ArenaPlanObjectsOverlapInAddress) {
  ReportOf<testing::ArenaFixture> r;
  const json d = json::parse(report_data_json(r.input()));
  const json& o = d["arena"]["objects"];
  EXPECT_EQ(sums(o["offset"]), (std::vector<int64_t>{0, 4, 0, 6, 24}));
  EXPECT_EQ(o["bytes"], json({4, 20, 6, 4, 8}));
  EXPECT_EQ(o["cls"], json({-1, -1, -1, -1, -1}));
  EXPECT_EQ(tenancy_rows(d), in_ns(r.f.expected_tenancies));
  EXPECT_EQ(d["arena"]["tenancies"]["tenant"][3], -2);  // op1's workspace: -1 - 1
  EXPECT_EQ(d["summary"]["allocator"], "arena");
  EXPECT_EQ(d["summary"]["arena_bytes"], 32);
  EXPECT_EQ(d["summary"]["objects"], 5);
}

TEST(ReportSweep, EveryFieldOfTheSweep) {
  Report r;
  SweepResult s;
  s.ideal_us = 21;
  s.peak_live = 30;
  s.min_budget = 20;
  s.largest_op = 20;
  s.no_swap_floor = 28;
  s.floor_order = "program";
  s.points = {{.budget = 10, .feasible = false, .why = "below the largest op's 20 B"},
              {.budget = 20,
               .feasible = true,
               .why = {},
               .iteration_us = 59,
               .throughput = 21.0 / 59,
               .swap_in_bytes = 34,
               .swap_out_bytes = 20,
               .search_seconds = 0.5},
              {.budget = 30,
               .feasible = true,
               .why = {},
               .iteration_us = 21,
               .throughput = 1,
               .search_seconds = 0.25}};
  s.target = 0.9;
  s.target_budget = 30;
  ReportInput in = r.input();
  in.sweep = &s;
  const json d = json::parse(report_data_json(in));
  ASSERT_TRUE(d.contains("sweep"));
  const json& j = d["sweep"];
  EXPECT_EQ(j["ideal_us"], 21);
  EXPECT_EQ(j["peak_live"], 30);
  EXPECT_EQ(j["min_budget"], 20);
  EXPECT_EQ(j["largest_op"], 20);
  EXPECT_EQ(j["no_swap_floor"], 28);
  EXPECT_EQ(j["floor_order"], "program");
  EXPECT_EQ(j["target"], 0.9);
  EXPECT_EQ(j["target_budget"], 30);
  const json& p = j["points"];
  EXPECT_EQ(p["budget"], json({10, 20, 30}));
  EXPECT_EQ(p["feasible"], json({false, true, true}));
  EXPECT_EQ(p["why"], json({"below the largest op's 20 B", "", ""}));
  EXPECT_EQ(p["iteration_us"], json({0, 59, 21}));
  EXPECT_DOUBLE_EQ(p["throughput"][1].get<double>(), 21.0 / 59);
  EXPECT_EQ(p["throughput"][2], 1);
  EXPECT_EQ(p["swap_in_bytes"], json({0, 34, 0}));
  EXPECT_EQ(p["swap_out_bytes"], json({0, 20, 0}));
  EXPECT_EQ(p["search_seconds"], json({0, 0.5, 0.25}));

  // Without a target, both target fields are null.
  s.target.reset();
  s.target_budget.reset();
  const json e = json::parse(report_data_json(in))["sweep"];
  EXPECT_TRUE(e["target"].is_null());
  EXPECT_TRUE(e["target_budget"].is_null());
}

TEST(ReportPage, FillsTheTemplateAndEscapesNames) {
  Report r;
  r.f.graph.tensors[1].name = "</script><script>alert(1)</script>";
  r.f.graph.name = "a <b> & c";
  const std::string html = render_report(r.input());
  EXPECT_EQ(html.find("{{"), std::string::npos);
  EXPECT_EQ(html.find("</script><script>alert"), std::string::npos);
  EXPECT_NE(html.find("<title>a &lt;b&gt; &amp; c: swapadvisor report"), std::string::npos);
  const std::string open = "<script type=\"application/json\" id=\"sa-data\">";
  const size_t a = html.find(open);
  ASSERT_NE(a, std::string::npos);
  const size_t b = html.find("</script>", a);
  const json d = json::parse(html.substr(a + open.size(), b - a - open.size()));
  EXPECT_EQ(d["tensors"]["name"][0], "t0");
  EXPECT_NE(html.find("data-drawn"), std::string::npos);  // the page's script is in
}

// A plan that lasts past 2^63 ns (9.2e18): the fixture with every time x
// 10^15, so the iteration ends at 59e15 us = 5.9e19 ns. The times were
// integer ns, which overflowed; now they count units of 10^4 ns, the
// smallest power of ten that keeps 5.9e19 ns within 2^53 (5.9e15 units):
// Note [Report time unit].
TEST(ReportData, VeryLongPlansKeepExactTimes) {
  Report r;
  constexpr double k = 1e15;
  SimResult& sim = r.methods[0].sim;
  for (StepTiming& t : sim.timeline) {
    t.start_us *= k;
    t.end_us *= k;
  }
  for (MemoryPoint& m : sim.memory)
    m.time_us *= k;
  sim.iteration_us *= k;
  sim.stall_us *= k;
  sim.compute_us *= k;
  const json d = json::parse(report_data_json(r.input()));
  EXPECT_EQ(d["time_unit_ns"], 10000);
  const json& c = d["lanes"]["compute"];
  constexpr int64_t u = 100'000'000'000'000;  // 1 us of the fixture: 10^15 us = 10^14 units
  EXPECT_EQ(sums(c["start"]), (std::vector<int64_t>{4 * u, 24 * u, 49 * u, 58 * u}));
  EXPECT_EQ(c["dur"], json({10 * u, 5 * u, 5 * u, 1 * u}));
  EXPECT_EQ(sums(d["drops"]["time"]), (std::vector<int64_t>{14 * u, 58 * u}));
  EXPECT_EQ(d["stalls"]["top"]["idle_ns"][0], 20 * u);
  EXPECT_EQ(sums(d["arena"]["tenancies"]["begin"]),
            (std::vector<int64_t>{0, 4 * u, 24 * u, 54 * u}));
  // A plan of ordinary length counts nanoseconds.
  EXPECT_EQ(json::parse(report_data_json(Report().input()))["time_unit_ns"], 1);
}

// The top-tensors table (issue 26, item 8): only tensors that moved bytes,
// a checkpointing plan drops activations it never copies; and unnamed
// tensors are named after the op that makes them.
TEST(ReportData, TopTensorsMovedBytesAndHaveLabels) {
  const Graph g = read_graph(testing::data_path("graphs/resnet50-b64.json.gz"));
  const DeviceProfile dev = load_device("v100-16gb");
  const Problem pb(g, dev, peak_live_bytes(g) * 7 / 10);
  std::vector<MethodResult> methods{run_method("checkpoint", pb, {})};
  ASSERT_TRUE(methods[0].feasible) << methods[0].why;
  const std::vector<TensorTraffic> all = tensor_traffic(g, methods[0].plan);
  const auto moved =
      std::count_if(all.begin(), all.end(), [](const TensorTraffic& t) { return t.bytes > 0; });
  ASSERT_LT(moved, static_cast<int64_t>(all.size()));  // some were only dropped
  const ReportInput in{.graph = g,
                       .device = dev,
                       .budget = pb.budget,
                       .peak_live = peak_live_bytes(g),
                       .batch = 64,
                       .ideal_us = pb.ideal_us,
                       .methods = methods,
                       .main = 0,
                       .origin = "test",
                       .source = "resnet50-b64"};
  const json d = json::parse(report_data_json(in));
  const json& tr = d["traffic"];
  EXPECT_EQ(tr["total"], moved);
  EXPECT_EQ(tr["bytes"].size(), static_cast<size_t>(moved));
  for (const json& b : tr["bytes"])
    EXPECT_GT(b.get<int64_t>(), 0);
  // The graph names no op and no activation: its activations are called
  // after their producers, "aten::<type> #<op>:out<k>".
  const json& t = d["tensors"];
  int activations = 0;
  for (size_t i = 0; i < t["id"].size(); ++i) {
    const int id = t["id"][i];
    if (g.tensors[id].kind != TensorKind::kActivation) continue;
    ++activations;
    const std::string name = t["name"][i];
    EXPECT_EQ(name.rfind("aten::", 0), 0u) << name;
    EXPECT_NE(name.find(":out"), std::string::npos) << name;
  }
  EXPECT_GT(activations, 0);
}

}  // namespace
}  // namespace sa
