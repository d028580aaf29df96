// Hostile names (issue 26, item 4): escaped for each place they are shown:
// embedded JSON in the report page (Note [Embedded JSON] in report/html.h),
// the terminal (Note [Names on a terminal] in util/terminal.h), JSON outputs
// (invalid UTF-8: dump_json in util/json.h); and the labels of unnamed
// tensors (report/labels.h).

#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cost/device.h"
#include "graph/graph_io.h"
#include "plan_fixture.h"
#include "report/html.h"
#include "report/labels.h"
#include "report/report.h"
#include "report/report_data.h"
#include "report/trace.h"
#include "util/file_io.h"
#include "util/json.h"
#include "util/terminal.h"

namespace sa {
namespace {

using nlohmann::json;

TEST(TerminalSafe, EscapesWhatATerminalActsOn) {
  // What a terminal shows as text stays as it is, markup included.
  EXPECT_EQ(terminal_safe("layer1.0.conv1"), "layer1.0.conv1");
  EXPECT_EQ(terminal_safe("<!--<script>"), "<!--<script>");
  EXPECT_EQ(terminal_safe("a\\b \"q\""), "a\\b \"q\"");
  EXPECT_EQ(terminal_safe("\xc2\xb5s \xe2\x86\x92 \xf0\x9f\x99\x82"),
            "\xc2\xb5s \xe2\x86\x92 \xf0\x9f\x99\x82");  // µs → and an emoji
  // ESC [2J clears the screen; ESC ]0;...BEL retitles the window.
  EXPECT_EQ(terminal_safe("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(terminal_safe("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
  EXPECT_EQ(terminal_safe(std::string("x\0y", 3)), "x\\x00y");
  EXPECT_EQ(terminal_safe("del\x7f"), "del\\x7f");
  EXPECT_EQ(terminal_safe("line\nnext\ttab\rcr"), "line\\nnext\\ttab\\rcr");
  // C1 controls (CSI is U+009B) and the bidirectional overrides.
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "2J"),
            "\\u009b2J");
  EXPECT_EQ(terminal_safe("abc\xe2\x80\xae"
                          "def"),
            "abc\\u202edef");
  EXPECT_EQ(terminal_safe("\xe2\x81\xa6"), "\\u2066");
}

TEST(TerminalSafe, ShowsInvalidUtf8AsBytes) {
  EXPECT_EQ(terminal_safe("x\xffy"), "x\\xffy");
  EXPECT_EQ(terminal_safe("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(terminal_safe("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");           // overlong, 3 bytes
  EXPECT_EQ(terminal_safe("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(terminal_safe("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(terminal_safe("ab\xe2\x80"), "ab\\xe2\\x80");                // cut short
  EXPECT_EQ(terminal_safe("\x80z"), "\\x80z");                           // a lone continuation
}

TEST(TerminalSafe, AMessageKeepsItsLines) {
  EXPECT_EQ(terminal_message("first\n\tsecond \x1b[31mred"), "first\n\tsecond \\x1b[31mred");
}

TEST(ScriptJson, NoNameCanCloseTheScriptOrOpenAComment) {
  EXPECT_EQ(script_json(R"({"n":"</script>"})"), R"({"n":"\u003c/script\u003e"})");
  EXPECT_EQ(script_json(R"({"n":"<!--<script>"})"), R"({"n":"\u003c!--\u003cscript\u003e"})");
  EXPECT_EQ(script_json(R"({"n":"-->"})"), R"({"n":"--\u003e"})");
  EXPECT_EQ(script_json(R"({"n":"a & b"})"), R"({"n":"a \u0026 b"})");
  EXPECT_EQ(script_json("[\"\xe2\x80\xa8\xe2\x80\xa9\xe2\x80\xaa\"]"),
            "[\"\\u2028\\u2029\xe2\x80\xaa\"]");  // U+202A is left alone
  // A backslash before '<' is an escaped backslash, and stays one.
  EXPECT_EQ(script_json(R"(["\\<"])"), R"(["\\\u003c"])");
  // The same value, read back.
  const json v = {{"name", "<!--<script>\\</script>--> & \xe2\x80\xa8 \"q\""}, {"n", 1}};
  EXPECT_EQ(json::parse(script_json(v.dump())), v);
}

TEST(EscapeHtml, EscapesMarkupAndInvalidUtf8) {
  EXPECT_EQ(escape_html("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
  EXPECT_EQ(escape_html("x\xffy"), "x\xef\xbf\xbdy");
}

TEST(DumpJson, InvalidUtf8IsReplacedNotThrown) {
  const json j = {{"device", "gpu\xff\xfe"}};
  EXPECT_THROW((void)j.dump(), json::type_error);  // what the outputs called before
  EXPECT_EQ(dump_json(j), "{\"device\":\"gpu\xef\xbf\xbd\xef\xbf\xbd\"}");
  EXPECT_EQ(json::parse(dump_json(j, 2))["device"], "gpu\xef\xbf\xbd\xef\xbf\xbd");
}

// An unnamed tensor is called after the op that creates it.
TEST(Labels, UnnamedTensorsTakeTheirProducersName) {
  testing::GraphBuilder b;
  const TensorId x = b.tensor(4, TensorKind::kInput);
  const TensorId y0 = b.tensor(4, TensorKind::kActivation);
  const TensorId y1 = b.tensor(4, TensorKind::kActivation, "mask");
  const TensorId z = b.tensor(4, TensorKind::kActivation);
  const TensorId w = b.tensor(4, TensorKind::kActivation);
  b.op({x}, {y0, y1}, {}, 1.0, "aten::conv");
  b.op({y0}, {z, w}, {}, 1.0, "aten::relu");
  b.g.ops[0].name = "conv1";
  const std::vector<std::string> l = tensor_labels(b.g);
  EXPECT_EQ(l[x], "tensor #0");  // created by no op
  EXPECT_EQ(l[y0], "conv1:out0");
  EXPECT_EQ(l[y1], "mask");               // its own name first
  EXPECT_EQ(l[z], "aten::relu #1:out0");  // an unnamed op: its type and id
  EXPECT_EQ(l[w], "aten::relu #1:out1");
}

// The report of the stall fixture (plan_fixture.h) with the names given.
struct HostileReport {
  testing::StallFixture f;
  std::vector<MethodResult> methods;
  explicit HostileReport(const std::string& name) {
    f.graph.name = name;
    f.device.name = name + "\xff";  // a device file's stem need not be UTF-8
    for (Tensor& t : f.graph.tensors)
      t.name = name;
    for (Op& op : f.graph.ops)
      op.name = name;
    MethodResult r;
    r.name = name;
    r.feasible = true;
    r.plan = f.plan;
    r.sim = f.sim;
    methods.push_back(r);
    MethodResult bad;
    bad.name = name;
    bad.why = name;
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
            .origin = name(),
            .source = name()};
  }
  const std::string& name() const { return f.graph.name; }
};

// The page's data element: what lies between its tags, or "" when the
// element is not whole.
std::string data_element(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"sa-data\">";
  const size_t a = html.find(open);
  if (a == std::string::npos) return "";
  const size_t b = html.find("</script>", a);
  if (b == std::string::npos) return "";
  return html.substr(a + open.size(), b - a - open.size());
}

TEST(ReportPage, HostileNamesStayInsideTheData) {
  const std::string name = "<!--<script>x</script>--> \"q\" 'a' \\ & \x1b[2J\xe2\x80\xa8";
  HostileReport r(name);
  const std::string html = render_report(r.input());
  const std::string data = data_element(html);
  ASSERT_FALSE(data.empty());
  // No '<' or '>' at all in the element: nothing in it can end it or open a
  // comment; and the page's script follows it whole.
  EXPECT_EQ(data.find_first_of("<>"), std::string::npos);
  EXPECT_NE(html.find("<script>\n// The report page", html.find(data) + data.size()),
            std::string::npos);
  const json d = json::parse(data);
  EXPECT_EQ(d["summary"]["graph"], name);
  EXPECT_EQ(d["summary"]["device"], name + "\xef\xbf\xbd");
  EXPECT_EQ(d["tensors"]["name"][0], name);
  EXPECT_EQ(d["ops"]["name"][0], name);
  EXPECT_EQ(d["methods"][1]["why"], name);
  EXPECT_EQ(d, json::parse(report_data_json(r.input())));
  // The title: markup escaped, the invalid byte replaced.
  EXPECT_NE(html.find("<title>&lt;!--&lt;script&gt;x&lt;/script&gt;--&gt;"), std::string::npos);
  EXPECT_EQ(html.find('\xff'), std::string::npos);
}

TEST(Trace, HostileNamesGiveValidJson) {
  HostileReport r("<!--\x1b[2J\"\\\x01");
  r.f.graph.tensors[2].name = "bad\xff";  // invalid UTF-8 in memory (no file can hold it)
  const std::string text =
      trace_to_json(r.f.graph, r.f.plan, r.f.sim, {.title = r.f.device.name + " trace"});
  json t;
  ASSERT_NO_THROW(t = json::parse(text));
  EXPECT_EQ(t["otherData"]["graph"], r.name());
  EXPECT_EQ(t["traceEvents"][0]["args"]["name"], r.name() + "\xef\xbf\xbd trace");
  bool replaced = false;
  for (const json& e : t["traceEvents"])
    replaced |= e["name"] == "bad\xef\xbf\xbd (6 B)";
  EXPECT_TRUE(replaced);
}

// The commands on a graph whose names hold terminal escapes and markup, and a
// device profile named by its file's stem, which is not UTF-8 (issue 26, items
// 4 and 7): JSON outputs parse (they ended in an internal error, exit 2),
// nothing printed holds an ESC or an invalid byte.
class CliNames : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // A directory of this process's own: ctest runs each test of the suite
    // as a process of its own, side by side (a shared name raced, stop 32).
    dir_ = new sa::testing::TempDir();
    Graph g = read_graph(testing::data_path("adversarial/mlp3.json"));
    g.name = "\x1b]0;pwned\x07<!--<script>";
    for (Op& op : g.ops)
      op.name = "op\x1b[2J" + op.name + "</script>";
    for (Tensor& t : g.tensors)
      if (!t.name.empty()) t.name = "\x1b[31m" + t.name + "-->";
    write_graph(g, graph());
    json d = json::parse(device_to_json(load_device("v100-16gb")));
    d.erase("name");
    write_file(device(), d.dump());
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string graph() { return *dir_ / "hostile.json"; }
  static std::string device() { return *dir_ / "dev\xff\x1b[2J.json"; }
  static std::string file(const std::string& name) { return *dir_ / name; }
  static std::string planning() {
    // fmt, not +: g++ 12 warns on "'" + std::string (-Wrestrict, a false positive).
    return fmt::format(
        "'{}' --device '{}' --memory-fraction 0.5 --evaluations 5 --threads 1 --quiet", graph(),
        device());
  }
  // Runs a command that must succeed and print nothing a terminal acts on.
  static testing::CliResult ok(const std::string& args) {
    const testing::CliResult r = testing::run_cli(args, 120);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
    for (const std::string* out : {&r.out, &r.err}) {
      EXPECT_EQ(out->find('\x1b'), std::string::npos) << args << ": " << *out;
      EXPECT_EQ(out->find('\xff'), std::string::npos) << args << ": " << *out;
    }
    return r;
  }

 private:
  static sa::testing::TempDir* dir_;
};
sa::testing::TempDir* CliNames::dir_ = nullptr;

// The device's name: its file's stem, the invalid byte replaced.
const std::string kDeviceJson = "dev\xef\xbf\xbd\x1b[2J";

TEST_F(CliNames, JsonOutputsParse) {
  json j = json::parse(ok("compare " + planning() + " --json").out);
  EXPECT_EQ(j["device"], kDeviceJson);
  EXPECT_EQ(j["graph"], "\x1b]0;pwned\x07<!--<script>");
  j = json::parse(ok("plan " + planning() + " --json --trace '" + file("trace.json") + "'").out);
  EXPECT_GT(j["iteration_us"].get<double>(), 0);
  const json t = json::parse(read_file(file("trace.json")));
  const std::string title = t["traceEvents"][0]["args"]["name"];
  EXPECT_NE(title.find(" plan on " + kDeviceJson + ", budget"), std::string::npos) << title;
  j = json::parse(ok("sweep " + planning() + " --points 2 --json").out);
  EXPECT_EQ(j["device"], kDeviceJson);
  j = json::parse(ok("stats '" + graph() + "' --device '" + device() + "' --json").out);
  EXPECT_GT(j["ops"].get<int>(), 0);
}

TEST_F(CliNames, TextOutputsShowEscapes) {
  std::string out = ok("stats '" + graph() + "' --device '" + device() + "'").out;
  EXPECT_NE(out.find("graph             \\x1b]0;pwned\\x07<!--<script>\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("device            dev\\xff\\x1b[2J\n"), std::string::npos) << out;
  out = ok("compare " + planning()).out;
  EXPECT_NE(out.find("\\x1b]0;pwned\\x07<!--<script> on dev\\xff\\x1b[2J, budget"),
            std::string::npos)
      << out;
  // The ideal method's row is no-limit, explained below the table (issue 26,
  // item 8): no row "ideal" under the header's "ideal 136 us".
  EXPECT_NE(out.find("\nno-limit     "), std::string::npos) << out;
  EXPECT_EQ(out.find("\nideal "), std::string::npos) << out;
  EXPECT_NE(out.find("\n\nno-limit: the ideal method (--method ideal), unlimited memory in program "
                     "order"),
            std::string::npos)
      << out;
  out = ok("plan " + planning() + " -o '" + file("plan.json") + "'").out;
  EXPECT_NE(out.find("device        dev\\xff\\x1b[2J\n"), std::string::npos) << out;
  ok("verify '" + graph() + "' '" + file("plan.json") + "'");
  ok("report " + planning() + " -o '" + file("report.html") + "'");
  ok("sweep " + planning() + " --points 2");
}

// An error that quotes an op's name (the budget below what it touches).
TEST_F(CliNames, ErrorsShowEscapes) {
  const testing::CliResult r =
      testing::run_cli("plan '" + graph() + "' --device '" + device() + "' --memory 1", 60);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'op\\x1b[2J"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sa
