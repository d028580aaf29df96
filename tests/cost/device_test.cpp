#include <gtest/gtest.h>

#include "cost/device.h"
#include "util/error.h"

namespace sa {
namespace {

TEST(Device, BuiltinsArePresentAndSane) {
  for (const char* name : {"v100-16gb", "a100-40gb", "h100-80gb", "h200-141gb"}) {
    const DeviceProfile d = load_device(name);
    EXPECT_EQ(d.name, name);
    EXPECT_GT(d.memory_bytes, 0);
    EXPECT_GE(d.duplex_gbps, std::max(d.h2d_gbps, d.d2h_gbps));
    EXPECT_LE(d.duplex_gbps, d.h2d_gbps + d.d2h_gbps);
    EXPECT_FALSE(d.source.empty());
  }
  // The paper's testbed, exactly.
  const DeviceProfile v100 = load_device("v100-16gb");
  EXPECT_EQ(v100.memory_bytes, int64_t{16} << 30);
  EXPECT_EQ(v100.h2d_gbps, 12);
  EXPECT_EQ(v100.d2h_gbps, 12);
  EXPECT_EQ(v100.duplex_gbps, 20);
  EXPECT_DOUBLE_EQ(v100.h2d_bytes_per_us(), 12000);
}

TEST(Device, JsonRoundTrip) {
  const DeviceProfile d = load_device("a100-40gb");
  const DeviceProfile back = parse_device(device_to_json(d), "x.json");
  EXPECT_EQ(device_to_json(back), device_to_json(d));
}

TEST(Device, BadProfilesAreClearErrors) {
  EXPECT_THROW(load_device("no-such-gpu"), Error);
  try {
    parse_device(R"({"format":"swapadvisor-device","version":1,"memory_bytes":1e9,
                     "h2d_gbps":-3,"d2h_gbps":1,"peak_tflops":1,"hbm_gbps":1})",
                 "p.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "p.json: h2d_gbps: must be a positive number, got -3");
  }
  EXPECT_THROW(parse_device("{", "p.json"), Error);
  EXPECT_THROW(parse_device(R"({"format":"swapadvisor-device","version":1})", "p.json"), Error);
}

}  // namespace
}  // namespace sa
