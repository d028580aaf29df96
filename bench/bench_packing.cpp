// The packings of plan/packing.h on real plans' tenancies: the captured
// models of tests/data/graphs, planned with planned offsets in program order
// at 100%, 50% and 25% of their peak live bytes. For each: the items, the
// lower bound (the most bytes alive at once) and each policy's peak and
// time. Run from the repository root:
//
//   build/bench/bench_packing [GRAPH...]

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cost/device.h"
#include "graph/graph_io.h"
#include "graph/stats.h"
#include "plan/packing.h"
#include "plan/problem.h"
#include "plan/swap_planner.h"
#include "util/error.h"

int main(int argc, char** argv) {
  using namespace sa;
  std::vector<std::string> graphs(argv + 1, argv + argc);
  if (graphs.empty())
    for (const auto& e : std::filesystem::directory_iterator("tests/data/graphs"))
      if (e.path().string().ends_with(".json.gz")) graphs.push_back(e.path().string());
  std::sort(graphs.begin(), graphs.end());
  const DeviceProfile dev = load_device("v100-16gb");
  std::printf("%-32s %5s %7s %10s %10s %8s %10s %8s\n", "graph", "budget", "items", "live MiB",
              "greedy", "ms", "sweep", "ms");
  for (const std::string& path : graphs) {
    const Graph g = read_graph(path);
    const int64_t peak = peak_live_bytes(g);
    for (double f : {1.0, 0.5, 0.25}) {
      const auto budget = static_cast<int64_t>(f * static_cast<double>(peak));
      const Problem pb(g, dev, budget);
      SwapPlanner planner(g, pb.sizes, pb.op_us, dev);
      Plan p;
      PlannerOptions o;
      o.max_repairs = 0;
      o.deadline_copy_order = false;
      const PlanResult r =
          planner.plan_arena(program_order(g.num_ops()), budget, INT64_MAX / 4, o, &p);
      if (!r.ok) {
        std::printf("%-32s %4.0f%% %s\n", g.name.c_str(), 100 * f, r.why.c_str());
        continue;
      }
      const std::vector<PackItem> items(planner.last_packing().begin(),
                                        planner.last_packing().end());
      Packer packer;
      std::vector<int64_t> off;
      double ms[2];
      int64_t peaks[2];
      int k = 0;
      for (PackPolicy policy : {PackPolicy::kGreedyBySize, PackPolicy::kSweepBestFit}) {
        const auto t0 = std::chrono::steady_clock::now();
        peaks[k] = packer.pack(items, &off, policy);
        ms[k] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count();
        if (!packing_is_valid(items, off)) std::printf("INVALID packing\n");
        ++k;
      }
      const double live = static_cast<double>(max_live_bytes(items));
      std::printf("%-32s %4.0f%% %7zu %10.1f %9.3fx %8.1f %9.3fx %8.1f\n", g.name.c_str(), 100 * f,
                  items.size(), live / (1 << 20), peaks[0] / live, ms[0], peaks[1] / live, ms[1]);
    }
  }
  return 0;
}
