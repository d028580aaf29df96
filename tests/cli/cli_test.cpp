#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace sa {
namespace {

using testing::run_cli;

TEST(Cli, UnknownSubcommandFlagDeviceAndModelFailClearly) {
  auto r = run_cli("frobnicate");
  EXPECT_NE(r.exit_code, 0);
  r = run_cli("stats --no-such-flag");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("no-such-flag"), std::string::npos) << r.err;
  r = run_cli("stats --model no-such-model --batch 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown model 'no-such-model'"), std::string::npos) << r.err;
  r = run_cli("stats " + testing::data_path("graphs/resnet50-b64.json.gz") + " --device tpu");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown device \"tpu\""), std::string::npos) << r.err;
  r = run_cli("stats /nonexistent.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent.json: cannot open"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos);
}

TEST(Cli, StatsPrintsATable) {
  auto r = run_cli("stats " + testing::data_path("graphs/resnet50-b64.json.gz"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("peak live bytes"), std::string::npos);
  EXPECT_NE(r.out.find("ideal iteration"), std::string::npos);
}

}  // namespace
}  // namespace sa

namespace sa {
namespace {

using testing::run_cli;

const std::string kResnet = testing::data_path("graphs/resnet50-b64.json.gz");

TEST(CliPlan, PlansWritesAndVerifies) {
  const std::string plan_file = "/tmp/sa_cli_plan_test.json";
  auto r =
      run_cli("plan " + kResnet +
              " --memory-fraction 0.5 --evaluations 60 --threads 2 --quiet --json -o " + plan_file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  for (const char* key :
       {"iteration_us", "ideal_us", "throughput_vs_ideal", "swap_in_bytes", "swap_out_bytes",
        "stall_us", "peak_device_bytes", "memory_budget_bytes", "search_seconds", "evaluations"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_LE(j["peak_device_bytes"].get<int64_t>(), j["memory_budget_bytes"].get<int64_t>());
  EXPECT_GE(j["iteration_us"].get<double>(), j["ideal_us"].get<double>());
  r = run_cli("verify " + kResnet + " " + plan_file);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("valid plan"), std::string::npos);
  r = run_cli("verify " + testing::data_path("graphs/resnet152-b32.json.gz") + " " + plan_file);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("made for another graph"), std::string::npos) << r.err;
  std::remove(plan_file.c_str());
}

// Note [Host tier] end to end: a plan with a host budget on a profile with
// an NVMe tier keeps tensors on NVMe, verifies, runs with --nvme-file
// (integrity ok) and not without one; sweep --over host sweeps the host
// budget at the device budget given.
TEST(CliPlan, HostBudgetPlansVerifyRunAndSweep) {
  const testing::TempDir dir;
  const std::string device = dir / "nvme.json", plan_file = dir / "plan.json";
  std::ofstream(device) << (R"({"format": "swapadvisor-device", "version": 1,
    "name": "v100-with-nvme", "memory_bytes": 17179869184, "h2d_gbps": 12, "d2h_gbps": 12,
    "duplex_gbps": 20, "peak_tflops": 15.7, "hbm_gbps": 900,
    "nvme_read_gbps": 1.7, "nvme_write_gbps": 1.25, "nvme_latency_us": 50})");
  const std::string graph = testing::data_path("graphs/lstm-h1024-l2-b32-s50.json.gz");
  const std::string common = graph + " --device " + device + " --memory-fraction 0.4";
  auto r =
      run_cli("plan " + common +
              " --host-memory 160MiB --evaluations 12 --threads 2 --quiet --json -o " + plan_file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["nvme_tensors"].get<int>(), 0);
  EXPECT_LE(j["host_bytes"].get<int64_t>(), int64_t{160} << 20);
  EXPECT_GT(j["nvme_read_bytes"].get<int64_t>(), 0);
  r = run_cli("verify " + graph + " " + plan_file);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_cli("run " + graph + " " + plan_file + " --device " + device +
              " --iterations 1 --quiet --json --nvme-file " + (dir / "tier.bin"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["integrity"], "ok");
  EXPECT_GT(j["nvme_bytes"].get<int64_t>(), 0);
  r = run_cli("run " + graph + " " + plan_file + " --device " + device + " --iterations 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--nvme-file"), std::string::npos) << r.err;
  r = run_cli("sweep " + common + " --over host --points 2 --evaluations 8 --threads 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["over"], "host");
  EXPECT_GT(j["host_need_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(j["points"].back()["budget_bytes"], j["host_need_bytes"]);
}

// --data-parallel: a plan for one rank of 2 that verify and run read back
// through its data_parallel field; bad values exit 1.
TEST(CliPlan, DataParallelPlansVerifyAndRun) {
  const std::string graph = "/tmp/sa_cli_dp_graph.json", plan = "/tmp/sa_cli_dp_plan.json";
  auto r = run_cli("zoo --model mlp-4 --batch 4 -o " + graph);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli("plan " + graph +
              " --data-parallel 2 --shard-optimizer --memory-fraction 0.6 --evaluations 50 "
              "--threads 1 --quiet --json -o " +
              plan);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["data_parallel"]["ranks"], 2);
  EXPECT_GT(j["data_parallel"]["collective_us"].get<double>(), 0);
  EXPECT_GT(j["samples_per_s_total"].get<double>(), j["samples_per_s"].get<double>());
  r = run_cli("verify " + graph + " " + plan);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("one rank of 2"), std::string::npos) << r.out;
  r = run_cli("run " + graph + " " + plan + " --time-scale 0 --iterations 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("integrity   ok"), std::string::npos) << r.out;
  r = run_cli("plan " + graph + " --data-parallel 0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--data-parallel"), std::string::npos) << r.err;
  r = run_cli("plan " + graph + " --shard-optimizer");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--shard-optimizer needs --data-parallel"), std::string::npos) << r.err;
  std::remove(graph.c_str());
  std::remove(plan.c_str());
}

// The stall causes add up to the stall; --copy-order takes two words.
TEST(CliPlan, StallCausesAddUpAndCopyOrderIsChecked) {
  for (const char* order : {"deadline", "release"}) {
    auto r = run_cli("plan " + kResnet + " --memory-fraction 0.3 --evaluations 40 --threads 2 " +
                     "--quiet --json --copy-order " + order);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    double sum = 0;
    for (const char* dir : {"swap_in", "swap_out"})
      for (const auto& [key, us] : j["stall_causes"][dir].items())
        sum += us.get<double>();
    EXPECT_GT(j["stall_us"].get<double>(), 0) << order;
    EXPECT_NEAR(sum, j["stall_us"].get<double>(), 1e-6 * j["stall_us"].get<double>()) << order;
  }
  auto r = run_cli("plan " + kResnet + " --memory-fraction 0.3 --evaluations 10 --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("compute stall"), std::string::npos);
  EXPECT_NE(r.out.find("swap-ins"), std::string::npos) << r.out;
  r = run_cli("plan " + kResnet + " --copy-order fifo --evaluations 10 --quiet");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--copy-order"), std::string::npos) << r.err;
}

TEST(CliPlan, BudgetBelowAnOpsNeedNamesTheOp) {
  auto r = run_cli("plan " + kResnet + " --memory 10MB --evaluations 10 --quiet");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is below what op"), std::string::npos) << r.err;
  r = run_cli("plan " + kResnet + " --memory lots --evaluations 10 --quiet");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--memory: cannot read 'lots'"), std::string::npos) << r.err;
}

// Issue 26: a budget the device does not have, or a fraction meant as a
// percentage, is refused with what to give instead.
TEST(CliPlan, BudgetsBeyondTheDeviceAreRefusedUnlessAskedFor) {
  auto r = run_cli(
      "plan --model gpt2-xl --batch 1 --device v100-16gb --memory 64GB "
      "--evaluations 4 --quiet");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is over v100-16gb's memory of 16.00 GiB"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--allow-any-budget"), std::string::npos) << r.err;
  r = run_cli("plan " + kResnet + " --memory-fraction 50 --evaluations 4 --quiet");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--memory-fraction 50 is over 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("give 0.5"), std::string::npos) << r.err;
  r = run_cli("plan " + kResnet +
              " --memory-fraction 1.5 --allow-any-budget --evaluations 4 "
              "--quiet --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// Issue 26: a mistyped flag or device gets a suggestion; a built-in device
// is found whatever the case of its letters.
TEST(Cli, MistakesGetSuggestions) {
  auto r = run_cli("plan " + kResnet + " --memroy-fraction 0.5");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("did you mean '--memory-fraction'?"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("swapadvisor plan --help"), std::string::npos) << r.err;
  r = run_cli("stats " + kResnet + " --device v100-16g");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("did you mean 'v100-16gb'?"), std::string::npos) << r.err;
  r = run_cli("stats " + kResnet + " --device V100-16GB --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// Issue 26: options that build a zoo model are refused with a graph file
// (they were ignored silently), and verify and run take --model as plan does.
TEST(Cli, ModelOptionsWithAGraphFileAndVerifyAndRunWithAModel) {
  for (const char* opt : {"--precision bf16", "--optimizer adam", "--seq-len 10"}) {
    auto r = run_cli("stats " + kResnet + " " + opt);
    EXPECT_EQ(r.exit_code, 1) << opt;
    EXPECT_NE(r.err.find("applies to --model only"), std::string::npos) << r.err;
  }
  const std::string plan_file = "/tmp/sa_cli_verify_model.json";
  auto r = run_cli(
      "plan --model mlp-3 --batch 8 --memory-fraction 0.5 --evaluations 8 --quiet -o " + plan_file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli("verify --model mlp-3 --batch 8 " + plan_file);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_cli("verify --model mlp-3 --batch 16 " + plan_file);
  EXPECT_EQ(r.exit_code, 1);
  r = run_cli("verify " + plan_file);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("give a GRAPH file and a PLAN file"), std::string::npos) << r.err;
  r = run_cli("run --model mlp-3 --batch 8 " + plan_file + " --iterations 1 --time-scale 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["integrity"], "ok");
  r = run_cli("run --model mlp-3 --batch 8 " + plan_file + " --kernels aten");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("give its graph file"), std::string::npos) << r.err;
  std::remove(plan_file.c_str());
}

// Issue 26: the batch is an input's shape[0], which may not fit an int (a
// batch of 2^31 printed negative samples/s).
TEST(CliPlan, ABatchOverAnIntIsCountedWhole) {
  const std::string graph = ::testing::TempDir() + "/sa_big_batch.json";
  FILE* f = std::fopen(graph.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(R"({"format": "swapadvisor-graph", "version": 1, "name": "big-batch",
 "tensors": [
  {"id": 0, "bytes": 100, "kind": "input", "name": "x", "shape": [2147483648, 1]},
  {"id": 1, "bytes": 10, "kind": "param", "name": "w"},
  {"id": 2, "bytes": 200, "kind": "activation"},
  {"id": 3, "bytes": 10, "kind": "gradient"}],
 "ops": [
  {"id": 0, "type": "mm", "phase": "forward", "inputs": [0, 1], "outputs": [2], "time_us": 10},
  {"id": 1, "type": "mm_bwd", "phase": "backward", "inputs": [2, 0], "outputs": [3], "time_us": 10},
  {"id": 2, "type": "sgd", "phase": "update", "inputs": [3], "outputs": [], "updates": [1], "time_us": 1}]})",
             f);
  std::fclose(f);
  auto r = run_cli("plan " + graph + " --evaluations 4 --quiet --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["samples_per_s"].get<double>(), 2147483648.0);
  std::remove(graph.c_str());
}

TEST(CliCompare, EveryMethodSideBySide) {
  auto r = run_cli("compare " + kResnet +
                   " --memory-fraction 0.5 --evaluations 40 --threads 2 "
                   "--quiet --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  std::vector<std::string> names;
  for (const auto& m : j["methods"]) {
    names.push_back(m["name"]);
    if (m["feasible"])
      EXPECT_GT(m["iteration_us"].get<double>(), 0);
    else
      EXPECT_FALSE(m["why"].get<std::string>().empty());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"swapadvisor", "ideal", "odswap", "vdnn", "swap-all",
                                             "tflms", "checkpoint", "dtr"}));
  // The bounds (plan/bounds.h): the one whatever is recomputed is never
  // above the swap-only one, nor below the sum of op times, and no plan
  // beats it.
  const double ideal = j["ideal_us"];
  for (const char* order : {"program", "search"}) {
    const double swap_only = j[fmt::format("bound_{}_order_us", order)];
    const double rc = j[fmt::format("bound_recompute_{}_order_us", order)];
    EXPECT_LE(rc, swap_only) << order;
    EXPECT_GE(rc, ideal * (1 - 1e-12)) << order;
  }
  const double rc_search = j["bound_recompute_search_order_us"];
  EXPECT_GE(j["methods"][0]["iteration_us"].get<double>(), rc_search * (1 - 1e-9));
}

}  // namespace
}  // namespace sa
