// `swapadvisor run` and `swapadvisor bandwidth` end to end.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "baselines/baselines.h"
#include "graph/graph_io.h"
#include "graph/stats.h"
#include "plan/plan_io.h"
#include "plan/problem.h"
#include "random_graph.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime_test_util.h"

namespace sa::runtime {
namespace {

using sa::testing::run_cli;

using sa::testing::TempDir;

// A random graph at 60% of its peak live bytes and its odswap plan.
struct Files {
  TempDir dir;
  std::string graph, plan;
  Graph g;
  Plan p;
  Files() {
    g = testing::random_graph(10, 7);
    for (Tensor& t : g.tensors)
      t.bytes *= 37;
    const DeviceProfile d = load_device("v100-16gb");
    const Problem pb(g, d, peak_live_bytes(g) * 6 / 10);
    BaselinePlan m = plan_baseline("odswap", pb, Allocator::kSizeClass);
    EXPECT_TRUE(m.feasible) << m.why;
    p = std::move(m.plan);
    graph = dir / "g.json";
    plan = dir / "p.json";
    write_graph(g, graph);
    write_plan(g, p, plan);
  }
};

TEST(RuntimeCli, RunPrintsJson) {
  Files f;
  const auto r = run_cli("run " + f.graph + " " + f.plan + " --iterations 2 --no-pace --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"measured_us", "simulated_us", "swap_in_bytes", "swap_out_bytes",
                          "peak_device_bytes", "memory_budget_bytes", "integrity"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["integrity"], "ok");
  EXPECT_EQ(j["memory_budget_bytes"], f.p.memory_budget);
  EXPECT_LE(j["peak_device_bytes"].get<int64_t>(), f.p.memory_budget);
  EXPECT_EQ(j["swap_in_bytes"], plan_traffic(f.g, f.p).swap_in_bytes);
  EXPECT_GT(j["simulated_us"].get<double>(), 0);
}

TEST(RuntimeCli, RunPrintsAReport) {
  Files f;
  const auto r = run_cli("run " + f.graph + " " + f.plan + " --time-scale 0.5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("measured / simulated = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("integrity   ok"), std::string::npos) << r.out;
}

// The default time scale is auto on the host backend (Note [Automatic time
// scale] in runtime/executor.h): a calibration iteration measures the host,
// and the scale it picks is printed. The graph's simulated iteration is a few
// tens of us, far less than what the host threads need per step, so the
// scale must be above 1 (at 1 the run measured many times its simulated
// time). The ratio is checked only loosely: tests check correctness.
TEST(RuntimeCli, RunChoosesTheTimeScaleByDefault) {
  Files f;
  const auto r = run_cli("run " + f.graph + " " + f.plan + " --iterations 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["time_scale_auto"], true);
  EXPECT_GT(j["time_scale"].get<double>(), 1);
  EXPECT_GT(j["calibration_wall_us"].get<double>(), 0);
  EXPECT_EQ(j["integrity"], "ok");
  EXPECT_EQ(j["wall_us"].size(), 2u);
  const double ratio = j["ratio"].get<double>();
  EXPECT_GT(ratio, 0.5) << r.out;
  EXPECT_LT(ratio, 5) << r.out;
  // Progress on stderr: the setup, the calibration, each iteration.
  EXPECT_NE(r.err.find("run: setting up: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("run: calibration: one iteration as fast as this host goes took "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("run: iteration 1/2: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("run: iteration 2/2: "), std::string::npos) << r.err;
}

TEST(RuntimeCli, RunReportsTheTimeScaleItChose) {
  Files f;
  const auto r = run_cli("run " + f.graph + " " + f.plan + " --iterations 1 --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" (auto: a calibration iteration took "), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");  // --quiet: no progress lines
  // A number given is used as it is, without calibration.
  const auto fixed =
      run_cli("run " + f.graph + " " + f.plan + " --iterations 1 --time-scale 7 --json --quiet");
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  const auto j = nlohmann::json::parse(fixed.out);
  EXPECT_EQ(j["time_scale"], 7);
  EXPECT_EQ(j["time_scale_auto"], false);
  EXPECT_EQ(j["calibration_wall_us"], 0);
}

TEST(RuntimeCli, RunRefusesAnInvalidPlan) {
  Files f;
  // The first swap-out of an activation becomes a drop: its value is lost.
  for (Step& s : f.p.steps)
    if (s.kind == StepKind::kSwapOut && is_transient(f.g.tensors[s.tensor()].kind)) {
      s.kind = StepKind::kDrop;
      break;
    }
  write_plan(f.g, f.p, f.plan);
  const auto r = run_cli("run " + f.graph + " " + f.plan + " --no-pace");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("the plan is not valid"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("drop"), std::string::npos) << r.err;
}

TEST(RuntimeCli, CudaWithoutAGpuIsAClearError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present";
  Files f;
  const auto r = run_cli("run " + f.graph + " " + f.plan + " --backend cuda");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("CUDA"), std::string::npos) << r.err;
}

// The host backend's paced link, measured and written as a profile.
TEST(RuntimeCli, BandwidthWritesAProfile) {
  TempDir dir;
  const std::string out = dir / "profile.json";
  const auto r = run_cli(
      "bandwidth --backend host --link v100-16gb --time-scale 50 --bytes 4MiB --repeats 3 -o " +
      out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const DeviceProfile d = load_device(out);
  EXPECT_NEAR(d.h2d_gbps, 12, 1.8);
  EXPECT_NEAR(d.d2h_gbps, 12, 1.8);
  EXPECT_NEAR(d.duplex_gbps, 20, 3);
  // The host CPU's measured FP32 GEMM rate; no tensor-core rate is claimed.
  EXPECT_GT(d.peak_tflops, 0);
  EXPECT_EQ(d.bf16_tflops, 0);
  EXPECT_EQ(d.math_tflops(MathType::kBf16), d.peak_tflops);
  EXPECT_NE(d.source.find("on the host CPU"), std::string::npos) << d.source;
  EXPECT_NE(r.out.find("on the CPU (other math types are not measured on the host)"),
            std::string::npos)
      << r.out;
  // --gemm 0 keeps the base profile's compute figures.
  const auto r0 = run_cli(
      "bandwidth --backend host --link v100-16gb --time-scale 50 --bytes 4MiB --repeats 3 "
      "--gemm 0 --base v100-16gb -o " +
      out);
  ASSERT_EQ(r0.exit_code, 0) << r0.err;
  EXPECT_EQ(load_device(out).peak_tflops, 15.7);
  EXPECT_EQ(load_device(out).fp16_tflops, 125);
}

}  // namespace
}  // namespace sa::runtime
