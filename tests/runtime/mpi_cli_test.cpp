// `mpirun -np 2 swapadvisor run` with one rank failing (Note [Rank failures]
// in src/runtime/mpi/ranks.h): every rank must be gone soon after, mpirun's exit
// status non-zero, and the failing rank's message printed once. Each test
// starts mpirun itself (an MPMD command line: each rank its own arguments)
// under `timeout 30`, so that a hang fails the test (exit status 124)
// instead of blocking ctest; the seconds until mpirun returned are printed.

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "baselines/baselines.h"
#include "graph/graph_io.h"
#include "graph/stats.h"
#include "plan/plan_io.h"
#include "plan/problem.h"
#include "random_graph.h"
#include "test_util.h"

namespace sa::runtime {
namespace {

using sa::testing::data_path;

using sa::testing::TempDir;

struct Outcome {
  int exit_code = -1;
  std::string out, err;
  double seconds = 0;
};

// mpirun with rank 0 running `swapadvisor rank0` and rank 1 `env
// rank1_env swapadvisor rank1`, killed after 30 s.
Outcome mpirun(const std::string& rank0, const std::string& rank1,
               const std::string& rank1_env = "") {
  const std::string launcher =
      std::string("timeout -k 5 30 ") + SA_MPIRUN + " --oversubscribe --allow-run-as-root";
  const std::string cmd = launcher + " -np 1 " + SA_CLI + " " + rank0 + " : -np 1 " +
                          (rank1_env.empty() ? "" : "env " + rank1_env + " ") + SA_CLI + " " +
                          rank1;
  const auto start = std::chrono::steady_clock::now();
  const testing::CliResult r = testing::run_shell(cmd);
  Outcome o{r.exit_code, r.out, r.err,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
  std::printf("[ mpirun   ] exit status %d after %.1f s\n", o.exit_code, o.seconds);
  return o;
}

int count(const std::string& text, const std::string& what) {
  int k = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++k;
  return k;
}

// Every rank gone (no timeout), a failure, and `message` printed once, as
// the only error.
void expect_failed_with(const Outcome& o, const std::string& message) {
  EXPECT_NE(o.exit_code, 124) << "timed out: a rank hung\n" << o.err;
  EXPECT_NE(o.exit_code, 0) << o.err;
  EXPECT_EQ(count(o.err, message), 1) << o.err;
  EXPECT_EQ(count(o.err, "swapadvisor: error:"), 1) << o.err;
}

// A random graph at 60% of its peak live bytes and its odswap plan; `other`
// gives another graph, `fraction` another plan of the same graph.
struct Files {
  TempDir dir;
  std::string graph, plan, other_graph, other_graph_plan, other_plan;
  Files() {
    graph = write(testing::random_graph(10, 7), 0.6, "g");
    plan = dir / "g.plan.json";
    other_plan = dir / "g.other-plan.json";
    write_plan_at(testing::random_graph(10, 7), 0.8, other_plan);
    other_graph = write(testing::random_graph(12, 8), 0.6, "h");
    other_graph_plan = dir / "h.plan.json";
  }
  std::string write(Graph g, double fraction, const std::string& name) {
    const std::string path = dir / (name + ".json");
    write_graph(scaled(g), path);
    write_plan_at(g, fraction, dir / (name + ".plan.json"));
    return path;
  }
  static Graph scaled(Graph g) {
    for (Tensor& t : g.tensors)
      t.bytes *= 37;
    return g;
  }
  static void write_plan_at(Graph g, double fraction, const std::string& path) {
    g = scaled(g);
    const DeviceProfile d = load_device("v100-16gb");
    const Problem pb(g, d, static_cast<int64_t>(peak_live_bytes(g) * fraction));
    BaselinePlan m = plan_baseline("odswap", pb, Allocator::kSizeClass);
    EXPECT_TRUE(m.feasible) << m.why;
    write_plan(g, m.plan, path);
  }
};

// The ranks agree: both run, and mpirun succeeds (the launcher itself works).
TEST(MpiCli, RanksThatAgreeRun) {
  Files f;
  const std::string run = "run " + f.graph + " " + f.plan + " --time-scale 0 --iterations 2";
  const Outcome o = mpirun(run, run);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(count(o.out, "integrity   ok"), 2) << o.out;
  EXPECT_EQ(count(o.out, "rank        1 of 2"), 1) << o.out;
}

// The plan file a command wrote.
std::string read_file(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// `plan` (ending in "-o ") under mpirun -np 2 and in one process: rank 0
// alone prints, it counts `evaluations`, and both write the same plan file.
void expect_two_processes_plan_as_one(const std::string& plan, int evaluations,
                                      const std::string& differ) {
  TempDir dir;
  const std::string a = dir / "mpi.json", b = dir / "one.json";
  const Outcome o = mpirun(plan + a, plan + a);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(count(o.out, "\"method\": \"swapadvisor\""), 1) << "rank 0 prints, alone\n" << o.out;
  const testing::CliResult one = testing::run_cli(plan + b);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_FALSE(read_file(a).empty());
  EXPECT_EQ(read_file(a), read_file(b)) << differ;
  EXPECT_NE(o.out.find("\"evaluations\": " + std::to_string(evaluations)), std::string::npos)
      << o.out;
}

// Note [Islands]: with --islands 2, two processes search as two islands and
// write the plan that `--islands 2` writes in one process (rank 0 writes it;
// rank 1 prints nothing). The lstm of tests/data/graphs at 40%: 400
// evaluations, 200 an island, so each runs generations past generation 0
// and migrates.
TEST(MpiCli, IslandsAsProcessesPlanAsIslandsInOne) {
  expect_two_processes_plan_as_one(
      "plan " + data_path("graphs/lstm-h1024-l2-b32-s50.json.gz") +
          " --memory-fraction 0.4 --evaluations 400 --threads 1 --seed 3 --no-recompute "
          "--islands 2 --json --quiet -o ",
      400, "mpirun -np 2 and --islands 2 wrote different plans");
}

// Note [Shared evaluations]: without --islands, two processes share one
// population's evaluations and write the plan one process writes.
TEST(MpiCli, SharedEvaluationsPlanAsOneProcess) {
  expect_two_processes_plan_as_one(
      "plan " + data_path("graphs/lstm-h1024-l2-b32-s50.json.gz") +
          " --memory-fraction 0.4 --evaluations 300 --threads 1 --seed 3 --json --quiet -o ",
      300, "mpirun -np 2 and one process wrote different plans");
}

// Islands must be one per process, or one population shared.
TEST(MpiCli, IslandsThatAreNotOnePerProcess) {
  const std::string graph = data_path("graphs/lstm-h1024-l2-b32-s50.json.gz");
  const std::string plan =
      "plan " + graph + " --memory-fraction 0.4 --evaluations 40 --threads 1 --quiet --islands 3";
  const Outcome o = mpirun(plan, plan);
  expect_failed_with(o,
                     "2 processes search one population (--islands 1, sharing its "
                     "evaluations) or 2 islands, one each; not --islands 3");
}

// Processes that would search differently stop at the checkpoint, at once.
TEST(MpiCli, IslandsWithAnotherSeedOnOneRank) {
  const std::string graph = data_path("graphs/lstm-h1024-l2-b32-s50.json.gz");
  const std::string plan =
      "plan " + graph + " --memory-fraction 0.4 --evaluations 400 --threads 1 --quiet --seed ";
  const Outcome o = mpirun(plan + "3", plan + "4");
  expect_failed_with(o, "swapadvisor: error: rank 1 of 2 does not run what rank 0 runs: ");
  EXPECT_NE(o.err.find("seed 4"), std::string::npos) << o.err;
}

TEST(MpiCli, AnotherGraphOnOneRank) {
  Files f;
  const Outcome o = mpirun("run " + f.graph + " " + f.plan + " --time-scale 0",
                           "run " + f.other_graph + " " + f.other_graph_plan + " --time-scale 0");
  expect_failed_with(o, "swapadvisor: error: rank 1 of 2 does not run what rank 0 runs: graph ");
}

TEST(MpiCli, AnotherPlanOnOneRank) {
  Files f;
  const Outcome o = mpirun("run " + f.graph + " " + f.plan + " --time-scale 0",
                           "run " + f.graph + " " + f.other_plan + " --time-scale 0");
  expect_failed_with(o, "swapadvisor: error: rank 1 of 2 does not run what rank 0 runs: plan ");
}

TEST(MpiCli, OtherIterationsOnOneRank) {
  Files f;
  const std::string run = "run " + f.graph + " " + f.plan + " --time-scale 0 --iterations ";
  const Outcome o = mpirun(run + "3", run + "2");
  expect_failed_with(o,
                     "swapadvisor: error: rank 1 of 2 does not run what rank 0 runs: iterations: "
                     "2 where rank 0 has 3. Every rank must run the same graph and plan with the "
                     "same options\n");
}

// The host backend cannot allocate rank 1's arena (a test hook stands for a
// machine with less memory than the plan's budget).
TEST(MpiCli, AnArenaOneRankCannotAllocate) {
  Files f;
  const std::string run = "run " + f.graph + " " + f.plan + " --time-scale 0";
  const Outcome o = mpirun(run, run, "SA_TEST_HOST_ALLOC_LIMIT=1000");
  expect_failed_with(o, "swapadvisor: error: rank 1 of 2: cannot allocate the device arena of ");
}

// A captured model trained by two ranks from their own values files; rank
// 1's is missing.
struct AtenFiles {
  TempDir dir;
  std::string graph = data_path("capture/tiny_mlp.graph.json.gz");
  std::string plan = dir / "plan.json";
  AtenFiles() {
    const Graph g = read_graph(graph);
    const DeviceProfile d = load_device("v100-16gb");
    const Problem pb(g, d, peak_live_bytes(g));
    BaselinePlan m = plan_baseline("odswap", pb, Allocator::kSizeClass);
    EXPECT_TRUE(m.feasible) << m.why;
    write_plan(g, m.plan, plan);
    std::filesystem::copy_file(data_path("capture/tiny_mlp.values.bin"), dir / "v0.bin");
  }
  std::string run() const {
    return "run " + graph + " " + plan + " --kernels aten --values '" + (dir / "v{rank}.bin") + "'";
  }
};

TEST(MpiCli, ValuesFileMissingOnOneRank) {
  AtenFiles f;
  const Outcome o = mpirun(f.run(), f.run());
  expect_failed_with(o, "swapadvisor: error: rank 1 of 2: ");
  EXPECT_NE(o.err.find("v1.bin"), std::string::npos) << o.err;
}

// After the collectives, an error leaves that rank as a one-rank run would,
// prefixed with its rank; the other finishes its run.
TEST(MpiCli, AFailureAfterTheRunEndsThatRank) {
  AtenFiles f;
  std::filesystem::copy_file(data_path("capture/tiny_mlp.values.bin"), f.dir / "v1.bin");
  std::filesystem::create_directory(f.dir.path / "out0");  // no out1: rank 1 cannot write
  const std::string run = f.run() + " --save-values '" + (f.dir / "out{rank}/final.bin") + "'";
  const Outcome o = mpirun(run, run);
  if (o.err.find("ATen") != std::string::npos && o.err.find("not") != std::string::npos &&
      count(o.out, "state       written to") == 0)
    GTEST_SKIP() << "no ATen kernels in this build:\n" << o.err;
  expect_failed_with(o, "swapadvisor: error: rank 1 of 2: ");
  EXPECT_EQ(count(o.out, "state       written to"), 1) << o.out;
}

}  // namespace
}  // namespace sa::runtime
