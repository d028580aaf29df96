#include <gtest/gtest.h>

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
  EXPECT_NE(r.err.find("unknown device 'tpu'"), std::string::npos) << r.err;
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
