// util/error.h: user errors and internal errors are different types, so that
// catching one never swallows the other, and the CLI exits 1 or 2.

#include <string>
#include <type_traits>

#include <gtest/gtest.h>

#include "util/checked.h"
#include "util/error.h"

namespace sa {
namespace {

static_assert(!std::is_base_of_v<Error, InternalError>);
static_assert(!std::is_base_of_v<InternalError, Error>);

TEST(Error, SaCheckThrowsAnInternalErrorThatSaysItIsABug) {
  const int x = 3;
  try {
    SA_CHECK(x == 4, "x is {}", x);
    FAIL() << "SA_CHECK did not throw";
  } catch (const Error&) {
    FAIL() << "SA_CHECK threw a user error";
  } catch (const InternalError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("internal error (a bug in swapadvisor) at ", 0), 0u) << what;
    EXPECT_NE(what.find("check 'x == 4' failed: x is 3"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(SA_CHECK(x == 3, "never"));
}

TEST(Checked, AddAndMultiplyReportOverflow) {
  constexpr int64_t kMax = INT64_MAX;
  EXPECT_EQ(checked_add(kMax - 1, 1), kMax);
  EXPECT_EQ(checked_add(kMax, 1), std::nullopt);
  EXPECT_EQ(checked_add(INT64_MIN, -1), std::nullopt);
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31), int64_t{1} << 62);
  EXPECT_EQ(checked_mul(int64_t{1} << 32, int64_t{1} << 31), std::nullopt);
  EXPECT_EQ(checked_mul(-1, INT64_MIN), std::nullopt);
  EXPECT_EQ(checked_mul_add(3, 4, 5), 17);
  EXPECT_EQ(checked_mul_add(int64_t{1} << 62, 2, 0), std::nullopt);
  EXPECT_EQ(checked_mul_add(int64_t{1} << 61, 2, int64_t{1} << 62), std::nullopt);
}

}  // namespace
}  // namespace sa
