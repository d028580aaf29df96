// The name fuzzer for the report (issue 26, item 4): writes report pages
// whose graph, op, tensor, device and method names are hostile, for the
// browser test (tests/report/browser_test.sh) to load in headless Chromium,
// and checks here what needs no browser: the page's data element holds no
// '<' or '>' and parses as JSON, as does the trace of the same plan.
//
//   report_names GRAPH OUT_DIR
//
// Writes OUT_DIR/names-0.html (every name the same long hostile one),
// names-1.html ... (random names; SA_NAME_FUZZ_ITERATIONS pages in all,
// default 3) and long.html (the plan's times x 10^15: an iteration of
// about 10^20 us, past the int64 nanoseconds that the page's data once
// used). The names are drawn from a pool of fragments (markup that closes
// or comments out a script, quotes, backslashes, control characters,
// terminal escapes, invalid UTF-8, very long runs) with a seed that it
// prints; SA_NAME_FUZZ_SEED replays one.
//
// The plan: odswap at half the graph's peak live bytes on v100-16gb, beside
// the ideal method and the other baselines (the comparison shows their names
// and why they failed).

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost/device.h"
#include "graph/graph_io.h"
#include "graph/stats.h"
#include "methods/methods.h"
#include "report/report.h"
#include "report/trace.h"
#include "util/error.h"
#include "util/file_io.h"

namespace {

using nlohmann::json;

const std::vector<std::string> kFragments = {
    "<!--",
    "<script>",
    "</script>",
    "-->",
    "<!--<script>",
    "</SCRIPT >",
    "<script",
    "</style>",
    "<img src=x onerror=alert(1)>",
    "\"",
    "'",
    "`",
    "\\",
    "\\u003c",
    "&",
    "&amp;",
    "&lt;",
    "{{data}}",
    "{{js}}",
    ")sa_asset\"",
    "${x}",
    "\x1b[2J",
    "\x1b]0;pwned\x07",
    std::string("\0", 1),
    "\x01",
    "\x7f",
    "\n",
    "\r",
    "\t",
    "\xc2\x9b",      // C1 CSI
    "\xe2\x80\xa8",  // U+2028
    "\xe2\x80\xae",  // right-to-left override
    "\xff",          // invalid UTF-8
    "\xc0\xaf",      // overlong
    "\xed\xa0\x80",  // a surrogate
    "\xe2\x82",      // cut short
    "\xf0\x9f\x99\x82",
    "layer1.0.conv1",
    std::string(300, 'x'),
    std::string(120, '<'),
};

std::string random_name(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> count(0, 6);
  std::uniform_int_distribution<size_t> pick(0, kFragments.size() - 1);
  std::string s;
  for (int n = count(rng); n > 0; --n)
    s += kFragments[pick(rng)];
  return s;  // sometimes empty: the page's fallback labels
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// The text between the page's data element's tags.
std::string data_element(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"sa-data\">";
  const size_t a = html.find(open);
  if (a == std::string::npos) throw sa::Error("the page has no data element");
  const size_t b = html.find("</script>", a);
  if (b == std::string::npos) throw sa::Error("the data element is not closed");
  return html.substr(a + open.size(), b - a - open.size());
}

// Renders, checks and writes one page and its trace.
void write_page(const sa::ReportInput& in, const std::string& path) {
  const std::string html = sa::render_report(in);
  const std::string data = data_element(html);
  if (data.find_first_of("<>") != std::string::npos)
    throw sa::Error(path + ": the data element holds '<' or '>'");
  if (!json::accept(data)) throw sa::Error(path + ": the page's data is not valid JSON");
  const sa::MethodResult& m = in.methods[in.main];
  if (!json::accept(sa::trace_to_json(in.graph, m.plan, m.sim, {.title = in.device.name})))
    throw sa::Error(path + ": the trace is not valid JSON");
  sa::write_file(path, html);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: report_names GRAPH OUT_DIR\n");
    return 2;
  }
  const std::string out = argv[2];
  const int pages = env_int("SA_NAME_FUZZ_ITERATIONS", 3);
  const uint64_t seed = std::getenv("SA_NAME_FUZZ_SEED")
                            ? std::strtoull(std::getenv("SA_NAME_FUZZ_SEED"), nullptr, 10)
                            : std::random_device{}();
  std::printf("report_names: seed %llu (SA_NAME_FUZZ_SEED=%llu replays it), %d pages\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed), pages);
  std::fflush(stdout);
  try {
    sa::Graph g = sa::read_graph(argv[1]);
    sa::DeviceProfile device = sa::load_device("v100-16gb");
    const int64_t peak = sa::peak_live_bytes(g);
    const sa::Problem problem(g, device, peak / 2);
    std::vector<sa::MethodResult> methods;
    methods.push_back(sa::run_method("odswap", problem, {}));
    if (!methods[0].feasible) throw sa::Error("odswap: " + methods[0].why);
    for (const char* name : {"ideal", "vdnn", "checkpoint"})
      methods.push_back(sa::run_method(name, problem, {}));
    const std::vector<std::string> method_names = {"odswap", "ideal", "vdnn", "checkpoint"};

    std::mt19937_64 rng(seed);
    for (int page = 0; page < pages; ++page) {
      // Page 0: every name one long hostile name, so that every table has one.
      const std::string fixed = "<!--<script>" + std::string(200, 'y') + "\x1b[2J\xff</script>";
      auto name = [&] { return page == 0 ? fixed : random_name(rng); };
      g.name = name();
      device.name = name();
      for (sa::Tensor& t : g.tensors)
        t.name = name();
      for (sa::Op& op : g.ops)
        op.name = name();
      for (size_t m = 1; m < methods.size(); ++m)
        if (!methods[m].feasible) methods[m].why = name();
      methods[0].name = name();  // a plan file's method can be anything
      const sa::ReportInput in{.graph = g,
                               .device = device,
                               .budget = problem.budget,
                               .peak_live = peak,
                               .batch = 64,
                               .ideal_us = problem.ideal_us,
                               .methods = methods,
                               .main = 0,
                               .origin = name(),
                               .source = name()};
      write_page(in, out + "/names-" + std::to_string(page) + ".html");
    }

    // Ordinary names, very long times.
    g = sa::read_graph(argv[1]);
    device = sa::load_device("v100-16gb");
    for (size_t m = 0; m < methods.size(); ++m) {
      methods[m].name = method_names[m];
      sa::SimResult& s = methods[m].sim;
      for (sa::StepTiming& t : s.timeline) {
        t.start_us *= 1e15;
        t.end_us *= 1e15;
      }
      for (sa::MemoryPoint& p : s.memory)
        p.time_us *= 1e15;
      s.iteration_us *= 1e15;
      s.compute_us *= 1e15;
      s.stall_us *= 1e15;
    }
    const sa::ReportInput in{.graph = g,
                             .device = device,
                             .budget = problem.budget,
                             .peak_live = peak,
                             .batch = 64,
                             .ideal_us = problem.ideal_us * 1e15,
                             .methods = methods,
                             .main = 0,
                             .origin = "times x 10^15",
                             .source = argv[1]};
    write_page(in, out + "/long.html");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "report_names (seed %llu): %s\n", static_cast<unsigned long long>(seed),
                 e.what());
    return 1;
  }
  return 0;
}
