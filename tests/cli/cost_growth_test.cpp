// Issue 26, items 6 and 7: ceilings on what a command may generate or run
// (the zoo's size, bandwidth --gemm), and the small numeric defects of
// stats and sweep (an empty graph's 0/0, --target's range, the % of ideal
// of a row under the target).

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "methods/sweep.h"
#include "test_util.h"

namespace sa {
namespace {

using testing::run_cli;

constexpr int kTimeout = 60;  // seconds; every command here takes well under one

std::string empty_graph() {
  const std::string path = ::testing::TempDir() + "/sa_cost_growth_empty.json";
  std::ofstream(path)
      << R"({"format": "swapadvisor-graph", "version": 1, "tensors": [], "ops": []})";
  return path;
}

TEST(CostGrowth, EmptyGraphStatsPrintNoNan) {
  const testing::CliResult r = run_cli("stats " + empty_graph(), kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no-swap floor     0 B (0 B; 0.0% below peak live)"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("nan"), std::string::npos) << r.out;
}

// An empty iteration runs at ideal (0 us of 0 us): 100%, not 0/0; the share
// of peak of a 0-byte peak is 0.
TEST(CostGrowth, EmptyGraphSweepPrintsNoNan) {
  const std::string args = "sweep " + empty_graph() + " --points 2 --evaluations 1 --quiet";
  testing::CliResult r = run_cli(args + " --target 0.9", kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("nan"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 B    0.0%    100.0%"), std::string::npos) << r.out;
  r = run_cli(args + " --json", kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["points"][0]["fraction_of_peak"], 0.0);
  EXPECT_EQ(j["points"][0]["throughput_vs_ideal"], 1.0);
}

TEST(CostGrowth, SweepTargetIsAFraction) {
  const std::string args = "sweep " + empty_graph() + " --points 2 --evaluations 1 --quiet";
  for (const char* bad : {"nan", "90", "0", "-0.5", "inf", "1.5", "0.9x"}) {
    const testing::CliResult r = run_cli(args + " --target " + bad, kTimeout);
    EXPECT_EQ(r.exit_code, 1) << bad;
    EXPECT_EQ(r.err, std::string("swapadvisor: error: sweep: --target: a fraction in (0, 1], e.g. "
                                 "0.9 for 90%, got '") +
                         bad + "'\n(`swapadvisor sweep --help` lists the options)\n");
  }
  EXPECT_EQ(run_cli(args + " --target 1", kTimeout).exit_code, 0);
}

// 0.89998 once printed as 90.0% beside "smallest budget found for 90%" on
// the next row.
TEST(CostGrowth, PercentOfIdealIsRoundedDown) {
  EXPECT_EQ(percent_floor(0.89998), "89.9");
  EXPECT_EQ(percent_floor(0.9), "90.0");  // 899.99999... tenths in binary
  EXPECT_EQ(percent_floor(0.95549), "95.5");
  EXPECT_EQ(percent_floor(0.99999), "99.9");
  EXPECT_EQ(percent_floor(1.0), "100.0");
  EXPECT_EQ(percent_floor(0.0), "0.0");
  for (int k = 0; k <= 1000; ++k)  // every tenth reads as itself
    EXPECT_EQ(percent_floor(k / 1000.0), fmt::format("{:.1f}", k / 10.0)) << k;
}

// The host's plain GEMM loop would run for hours at 32768; refused at once.
TEST(CostGrowth, BandwidthGemmCeiling) {
  const std::string args = "bandwidth --backend host --bytes 1MiB --repeats 2 --gemm ";
  testing::CliResult r = run_cli(args + "32768", kTimeout);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "swapadvisor: error: --gemm 32768: at most 1024 on the host backend (its GEMM takes "
            "seconds at 1024 and grows as N^3; 0 skips the measurement)\n");
  // Below the GEMM's smallest size: a user error, not an internal one.
  r = run_cli(args + "5", kTimeout);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "swapadvisor: error: --gemm 5: 0 (no measurement) or from 16 to 1024\n");
}

// rnn-1000-1k at 100,000 steps grew past 4 GB before; refused before building.
TEST(CostGrowth, ZooCeilingFromTheCli) {
  for (const char* cmd : {"zoo", "stats"}) {
    const testing::CliResult r =
        run_cli(std::string(cmd) + " --model rnn-1000-1k --batch 8 --seq-len 100000" +
                    (std::string(cmd) == "zoo" ? " -o /dev/null" : ""),
                kTimeout);
    EXPECT_EQ(r.exit_code, 1) << cmd;
    EXPECT_NE(r.err.find("rnn-1000-1k at --seq-len 100000 would generate up to 600017027 ops"),
              std::string::npos)
        << r.err;
  }
}

}  // namespace
}  // namespace sa
