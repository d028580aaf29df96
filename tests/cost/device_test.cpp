#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cost/device.h"
#include "test_util.h"
#include "util/error.h"

namespace sa {
namespace {

TEST(Device, BuiltinsArePresentAndSane) {
  for (const char* name :
       {"v100-16gb", "a100-40gb", "h100-80gb", "h200-141gb", "gh200-96gb", "gh200-144gb"}) {
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
  // GH200's host link is asymmetric (measured elsewhere, docs/devices.md):
  // host to GPU 416 GB/s, GPU to host 170 GB/s, both at once their sum.
  for (const char* name : {"gh200-96gb", "gh200-144gb"}) {
    const DeviceProfile gh = load_device(name);
    EXPECT_EQ(gh.h2d_gbps, 416) << name;
    EXPECT_EQ(gh.d2h_gbps, 170) << name;
    EXPECT_EQ(gh.duplex_gbps, 586) << name;
  }
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

// A profile with one field replaced (or removed, with value "DROP"); the
// message after "p.json: ".
std::string profile_error(const std::string& key, const std::string& value) {
  nlohmann::json doc = nlohmann::json::parse(device_to_json(load_device("v100-16gb")));
  if (value == "DROP")
    doc.erase(key);
  else
    doc[key] = nlohmann::json::parse(value);
  const std::string e = testing::error_of([&] { parse_device(doc.dump(), "p.json"); });
  return e.rfind("p.json: ", 0) == 0 ? e.substr(8) : e;
}

// A field's value and the error it must give ("(no error)": accepted).
struct FieldCase {
  const char* key;
  const char* value;  // JSON, or DROP
  const char* error;  // after "p.json: "
};

// Wrongly typed fields are named, with what they are.
constexpr FieldCase kWronglyTyped[] = {
    {"format", "5", "format: expected \"swapadvisor-device\", got the number 5"},
    {"format", "DROP", "format: expected \"swapadvisor-device\", got nothing"},
    {"version", "\"1\"", "version: unsupported version the string \"1\" (this reader supports 1)"},
    {"version", "1.0", "version: unsupported version the number 1.0 (this reader supports 1)"},
    {"name", "5", "name: expected a string, got the number 5"},
    {"source", "[]", "source: expected a string, got an array"},
    {"h2d_gbps", "\"12\"", "h2d_gbps: expected a number, got the string \"12\""},
    {"memory_bytes", "\"16GB\"",
     "memory_bytes: expected a whole number of bytes from 1 to 2^50 (1 PiB), got the string "
     "\"16GB\""},
    {"h2d_gbps", "DROP", "h2d_gbps: missing required field"},
    {"name", "\"ok\"", "(no error)"},
};

// Figures far outside what any device has (docs/devices.md) are rejected;
// at the limits they are accepted.
constexpr FieldCase kAbsurd[] = {
    {"h2d_gbps", "1e-300", "h2d_gbps: must be between 0.001 and 100000 GB/s, got 1e-300"},
    {"d2h_gbps", "1e6", "d2h_gbps: must be between 0.001 and 100000 GB/s, got 1000000"},
    {"peak_tflops", "1e-9", "peak_tflops: must be between 1e-06 and 1000000 TFLOP/s, got 1e-09"},
    {"launch_overhead_us", "1e308",
     "launch_overhead_us: must be between 0 and 1000000 us, got 1e+308"},
    {"compute_efficiency", "1.5", "compute_efficiency: must be between 1e-06 and 1, got 1.5"},
    {"memory_bytes", "2e15",
     "memory_bytes: expected a whole number of bytes from 1 to 2^50 (1 PiB), got the number "
     "2e+15"},
    {"launch_overhead_us", "0", "(no error)"},
    {"memory_bytes", "1125899906842624", "(no error)"},
};

TEST(Device, WronglyTypedFieldsAreNamed) {
  for (const FieldCase& c : kWronglyTyped)
    EXPECT_EQ(profile_error(c.key, c.value), c.error) << c.key << " = " << c.value;
}

TEST(Device, AbsurdFiguresAreRejected) {
  for (const FieldCase& c : kAbsurd)
    EXPECT_EQ(profile_error(c.key, c.value), c.error) << c.key << " = " << c.value;
}

TEST(Device, ADirectoryIsNotAProfile) {
  const std::string dir = ::testing::TempDir();
  EXPECT_EQ(testing::error_of([&] { load_device(dir); }), dir + ": is a directory, not a file");
}

}  // namespace
}  // namespace sa
