// Fuzzes the plan reader and what trusts it: parse_plan against the graph
// the input names (tests/data/capture's tiny_mlp or tiny_cnn, else the
// zoo's mlp-3 of tests/data/plans), the writer (a plan that reads must
// write and read back to the same text), then verify_plan, and for a plan
// that verifies the simulator, timeline included: a verified plan must
// simulate without a deadlock and within its budget.

#include <cmath>
#include <vector>

#include "cost/device.h"
#include "cost/op_cost.h"
#include "fuzz_common.h"
#include "graph/graph_io.h"
#include "plan/plan_io.h"
#include "plan/simulator.h"
#include "plan/verify.h"

namespace {

struct Target {
  sa::Graph g;
  std::vector<double> op_us;
};

const sa::DeviceProfile& device() {
  static const sa::DeviceProfile d = sa::load_device("v100-16gb");
  return d;
}

Target target(const std::string& path) {
  Target t{sa::read_graph(sa::fuzz::data_dir() + path), {}};
  t.op_us = sa::op_times_us(t.g, device());
  return t;
}

const Target& target_named(const std::string& name) {
  static const Target mlp3 = target("/plans/mlp3.graph.json");
  static const Target tiny_mlp = target("/capture/tiny_mlp.graph.json.gz");
  static const Target tiny_cnn = target("/capture/tiny_cnn.graph.json.gz");
  if (name == tiny_mlp.g.name) return tiny_mlp;
  if (name == tiny_cnn.g.name) return tiny_cnn;
  return mlp3;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sa::fuzz::refused_or_read([&] {
    const std::string text = sa::fuzz::input(data, size);
    const Target& t = target_named(sa::fuzz::graph_name(text));
    const sa::Graph& g = t.g;
    const sa::Plan p = sa::parse_plan(g, text, "fuzz");
    sa::fuzz::check_round_trip(
        sa::plan_to_json(g, p),
        [&](const std::string& s) { return sa::parse_plan(g, s, "written"); },
        [&](const sa::Plan& read) { return sa::plan_to_json(g, read); });
    if (!sa::verify_plan(g, p).ok) return;
    sa::Simulator sim;
    const sa::SimResult r = sim.run(g, p, t.op_us, device(), {.record_timeline = true});
    if (!r.ok) sa::fuzz::fuzz_fail("a verified plan does not simulate");
    if (!std::isfinite(r.iteration_us) || r.iteration_us < r.compute_us)
      sa::fuzz::fuzz_fail("a verified plan's simulated time is not a finite number >= its compute");
    if (r.peak_device_bytes > p.memory_budget)
      sa::fuzz::fuzz_fail("a verified plan holds more device bytes than its budget");
  });
  return 0;
}
