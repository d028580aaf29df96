// The report page: placeholders filled, data embedded safely and complete.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "plan_fixture.h"
#include "report/report.h"
#include "report/report_data.h"

namespace sa {
namespace {

using nlohmann::json;

struct Report {
  testing::StallFixture f;
  std::vector<MethodResult> methods;
  Report() {
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
            .budget = 40,
            .peak_live = 30,
            .batch = std::nullopt,
            .ideal_us = 21,
            .methods = methods,
            .main = 0,
            .origin = "built by hand",
            .source = "plan_fixture.h"};
  }
};

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

}  // namespace
}  // namespace sa
