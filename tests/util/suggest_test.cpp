#include "util/suggest.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace sa {
namespace {

TEST(EditDistance, CountsInsertionsDeletionsSubstitutionsAndSwaps) {
  EXPECT_EQ(edit_distance("", ""), 0);
  EXPECT_EQ(edit_distance("abc", ""), 3);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3);
  EXPECT_EQ(edit_distance("memroy", "memory"), 1);        // one swap of neighbours
  EXPECT_EQ(edit_distance("V100-16GB", "v100-16gb"), 0);  // letters compared case-insensitively
}

TEST(SameLetters, IgnoresOnlyTheCaseOfLetters) {
  EXPECT_TRUE(same_letters("V100-16GB", "v100-16gb"));
  EXPECT_FALSE(same_letters("v100-16gb", "v100-16g"));
  EXPECT_FALSE(same_letters("v100_16gb", "v100-16gb"));
}

TEST(Closest, SuggestsALikelyTypoAndNothingFarOff) {
  const std::vector<std::string> flags = {"--memory", "--memory-fraction", "--time-budget",
                                          "--threads"};
  EXPECT_EQ(closest("--memroy-fraction", flags), "--memory-fraction");
  EXPECT_EQ(closest("--thread", flags), "--threads");
  EXPECT_EQ(closest("--time-buget", flags), "--time-budget");
  EXPECT_EQ(closest("--frobnicate", flags), std::nullopt);
  EXPECT_EQ(closest("", flags), std::nullopt);
  const std::vector<std::string> devices = {"v100-16gb", "a100-40gb", "h100-80gb"};
  EXPECT_EQ(closest("v100-16g", devices), "v100-16gb");
  EXPECT_EQ(closest("h100", devices), "h100-80gb");  // a prefix
  EXPECT_EQ(closest("tpu-v4", devices), std::nullopt);
}

}  // namespace
}  // namespace sa
