// Fuzzes the device profile reader: parse_device, then the writer: a
// profile that reads must write and read back to the same text.

#include "cost/device.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sa::fuzz::refused_or_read([&] {
    const sa::DeviceProfile d = sa::parse_device(sa::fuzz::input(data, size), "fuzz");
    sa::fuzz::check_round_trip(
        sa::device_to_json(d), [](const std::string& t) { return sa::parse_device(t, "written"); },
        [](const sa::DeviceProfile& read) { return sa::device_to_json(read); });
  });
  return 0;
}
