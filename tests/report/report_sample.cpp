// Writes a report page with an arena plan and a budget sweep, for the
// browser test (tests/report/browser_test.sh): no command gives the report
// a sweep yet.
//
//   report_sample GRAPH OUT.html
//
// The plan: odswap with planned offsets (Allocator::kArena) at half the
// graph's peak live bytes on v100-16gb, beside the ideal. The sweep:
// sa::sweep() with a short search (3 points of 24 evaluations, target 80%),
// plus the search at half the smallest feasible budget, which fails, so that
// the page shows an infeasible point.

#include <algorithm>
#include <cstdio>

#include "cost/device.h"
#include "graph/graph_io.h"
#include "graph/stats.h"
#include "methods/sweep.h"
#include "report/report.h"
#include "util/error.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: report_sample GRAPH OUT.html\n");
    return 2;
  }
  try {
    const sa::Graph g = sa::read_graph(argv[1]);
    const sa::DeviceProfile device = sa::load_device("v100-16gb");
    const int64_t peak = sa::peak_live_bytes(g);
    sa::MethodOptions options;
    options.allocator = sa::Allocator::kArena;
    options.search.population = 8;
    options.search.max_evaluations = 24;

    const sa::Problem problem(g, device, peak / 2);
    std::vector<sa::MethodResult> methods;
    methods.push_back(sa::run_method("odswap", problem, options));
    methods.push_back(sa::run_method("ideal", problem, options));
    if (!methods[0].feasible) throw sa::Error("odswap: " + methods[0].why);

    sa::SweepOptions so;
    so.points = 3;
    so.target = 0.8;
    so.target_steps = 1;
    so.method = options;
    sa::SweepResult sweep = sa::sweep(g, device, so);
    sa::SweepPoint low;
    low.budget = sweep.min_budget / 2;
    try {
      const sa::MethodResult m =
          sa::run_method("swapadvisor", sa::Problem(g, device, low.budget), options);
      low.feasible = m.feasible;
      low.why = m.why;
      low.iteration_us = m.sim.iteration_us;
    } catch (const sa::Error& e) {
      low.why = e.what();
    }
    sweep.points.insert(sweep.points.begin(), low);

    const sa::ReportInput in{.graph = g,
                             .device = device,
                             .budget = problem.budget,
                             .peak_live = peak,
                             .batch = std::nullopt,
                             .ideal_us = problem.ideal_us,
                             .methods = methods,
                             .main = 0,
                             .origin = "planned by report_sample",
                             .source = argv[1],
                             .sweep = &sweep};
    sa::write_report(in, argv[2]);
  } catch (const sa::Error& e) {
    std::fprintf(stderr, "report_sample: %s\n", e.what());
    return 1;
  }
  return 0;
}
