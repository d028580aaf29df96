// `swapadvisor run --kernels aten`'s report (issue 26's smaller defects).

#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/aten/aten_kernels.h"
#include "test_util.h"
#include "util/file_io.h"
#include "util/units.h"

namespace sa::runtime {
namespace {

using nlohmann::json;
using sa::testing::data_path;
using sa::testing::run_cli;

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

// `run --kernels aten` with an arena plan said "pool 0 B": an arena plan
// has no pool. It says where the objects reach, as `run` does.
TEST(AtenRunCli, AnArenaPlanSaysWhereItsObjectsReach) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  const std::string graph = quoted(data_path("capture/tiny_mlp.graph.json.gz"));
  const std::string plan = ::testing::TempDir() + "/tiny_mlp.arena.plan.json";
  ASSERT_EQ(run_cli("plan " + graph +
                        " --memory-fraction 0.6 --evaluations 20 --threads 1 "
                        "--quiet --allocator arena -o " +
                        quoted(plan),
                    60)
                .exit_code,
            0);
  const json p = json::parse(read_file(plan));
  ASSERT_EQ(p["allocator"], "arena");
  int64_t reach = 0;
  for (const json& o : p["objects"])
    reach = std::max(reach, o[0].get<int64_t>() + o[1].get<int64_t>());
  ASSERT_GT(reach, 0);
  const auto r =
      run_cli("run " + graph + " " + quoted(plan) + " --kernels aten --iterations 1", 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(fmt::format("objects reach {}\n", format_bytes(reach))), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("pool 0 B"), std::string::npos) << r.out;
  const auto j = run_cli("run " + graph + " " + quoted(plan) +
                             " --kernels aten --iterations 1 "
                             "--json",
                         60);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_EQ(json::parse(j.out)["pool_bytes"], reach);
}

}  // namespace
}  // namespace sa::runtime
