// util/units.h: byte counts and durations as people write and read them.

#include <cstdint>
#include <optional>

#include <gtest/gtest.h>

#include "util/units.h"

namespace sa {
namespace {

TEST(Units, ParsesSizesWithDecimalAndBinaryUnits) {
  EXPECT_EQ(parse_bytes("4096"), 4096);
  EXPECT_EQ(parse_bytes("1e9"), 1'000'000'000);
  EXPECT_EQ(parse_bytes("16GB"), 16'000'000'000);
  EXPECT_EQ(parse_bytes("16 gb"), 16'000'000'000);
  EXPECT_EQ(parse_bytes("11.5GiB"), int64_t{23} << 29);  // 11.5 * 2^30
  EXPECT_EQ(parse_bytes("512MiB"), int64_t{512} << 20);
  EXPECT_EQ(parse_bytes("2 KiB"), 2048);
  EXPECT_EQ(parse_bytes("3k"), 3000);
  EXPECT_EQ(parse_bytes("1TiB"), int64_t{1} << 40);
  EXPECT_EQ(parse_bytes("  7 B  "), 7);
  EXPECT_EQ(parse_bytes("1.5"), 1);  // whole bytes: rounded down
}

TEST(Units, RejectsWhatIsNotASize) {
  for (const char* bad : {"", "   ", "GB", "-1", "0", "0.5", "16XB", "16 G B", "nan", "inf", "-inf",
                          "1e30", "9.1e18", "1e400", "0x10"})
    EXPECT_EQ(parse_bytes(bad), std::nullopt) << "'" << bad << "'";
  EXPECT_EQ(parse_bytes("9e18"), int64_t{9'000'000'000'000'000'000});  // the largest accepted
}

TEST(Units, FormatsBytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.0 KiB");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(int64_t{37} << 20), "37.0 MiB");
  EXPECT_EQ(format_bytes(int64_t{3} << 29), "1.50 GiB");
  EXPECT_EQ(format_bytes(int64_t{5} << 40), "5.00 TiB");
}

TEST(Units, FormatsMicroseconds) {
  EXPECT_EQ(format_us(850), "850 us");
  EXPECT_EQ(format_us(999.4), "999 us");
  EXPECT_EQ(format_us(12'300), "12.3 ms");
  EXPECT_EQ(format_us(2'100'000), "2.10 s");
}

}  // namespace
}  // namespace sa
