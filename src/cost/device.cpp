#include "cost/device.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/file_io.h"
#include "util/json.h"

namespace sa {
namespace {

using json = nlohmann::json;

// Figures and their sources: docs/devices.md. Efficiency factors: a dense
// FP32 conv/GEMM in cuDNN/cuBLAS typically sustains 60-70% of peak and a
// streaming elementwise kernel 70-80% of HBM bandwidth; we use 0.6 and 0.75
// everywhere so that devices compare like for like.
const std::vector<DeviceProfile>& builtins() {
  static const std::vector<DeviceProfile> kBuiltins = {
      {"v100-16gb", int64_t{16} << 30, 12, 12, 20, 15.7, 900, 0.6, 0.75, 6,
       "SwapAdvisor paper testbed (ASPLOS'20 sec. 6): V100 16 GB, PCIe 3.0 x16 measured at 12 GB/s "
       "each way and 20 GB/s both ways at once; FP32 peak 15.7 TFLOP/s and HBM2 900 GB/s from the "
       "NVIDIA V100 datasheet (SXM2)."},
      {"a100-40gb", int64_t{40} << 30, 24, 24, 40, 19.5, 1555, 0.6, 0.75, 5,
       "NVIDIA A100 40 GB datasheet: FP32 19.5 TFLOP/s (non-tensor-core), HBM2e 1555 GB/s. "
       "PCIe 4.0 x16 is 32 GB/s raw per direction; pinned cudaMemcpy reaches about 24-26 GB/s "
       "one way and about 40 GB/s both ways (75% and 62% of raw), used here."},
      {"h100-80gb", int64_t{80} << 30, 50, 50, 80, 67, 3350, 0.6, 0.75, 4,
       "NVIDIA H100 SXM5 80 GB datasheet: FP32 67 TFLOP/s, HBM3 3.35 TB/s. PCIe 5.0 x16 is 64 GB/s "
       "raw per direction; pinned copies reach about 50 GB/s one way and 80 GB/s both ways "
       "(same efficiencies as gen4 above, rounded)."},
      {"h200-141gb", int64_t{141} * 1000 * 1000 * 1000, 50, 50, 80, 67, 4800, 0.6, 0.75, 4,
       "NVIDIA H200 SXM 141 GB datasheet: FP32 67 TFLOP/s, HBM3e 4.8 TB/s, 141 GB (10^9). "
       "PCIe 5.0 x16 as for the H100. Replace with a measured profile from scripts/gpu-check."},
  };
  return kBuiltins;
}

double positive(const json& doc, const std::string& origin, const char* key, bool required,
                double fallback) {
  auto it = doc.find(key);
  if (it == doc.end()) {
    if (required) throw Error(fmt::format("{}: {}: missing required field", origin, key));
    return fallback;
  }
  if (!it->is_number())
    throw Error(fmt::format(
        "{}: {}: expected a number, got {}", origin, key,
        it->is_string() ? quote(it->get_ref<const std::string&>()) : std::string(it->type_name())));
  const double v = it->get<double>();
  if (!std::isfinite(v) || v <= 0)
    throw Error(fmt::format("{}: {}: must be a positive number, got {}", origin, key, v));
  return v;
}

}  // namespace

std::vector<std::string> builtin_device_names() {
  std::vector<std::string> names;
  for (const auto& d : builtins())
    names.push_back(d.name);
  return names;
}

DeviceProfile parse_device(const std::string& text, const std::string& origin) {
  const json doc = parse_json(text, origin);
  if (!doc.is_object()) throw Error(origin + ": a device profile must be a JSON object");
  if (doc.value("format", std::string()) != "swapadvisor-device")
    throw Error(origin + ": format: expected \"swapadvisor-device\"");
  if (!doc.contains("version") || doc["version"] != 1)
    throw Error(origin + ": version: unsupported (this reader supports 1)");
  DeviceProfile d;
  d.name = doc.value("name", std::filesystem::path(origin).stem().string());
  const double mem = positive(doc, origin, "memory_bytes", true, 0);
  if (mem != std::floor(mem) || mem > 9e18)
    throw Error(fmt::format("{}: memory_bytes: expected a whole number of bytes", origin));
  d.memory_bytes = static_cast<int64_t>(mem);
  d.h2d_gbps = positive(doc, origin, "h2d_gbps", true, 0);
  d.d2h_gbps = positive(doc, origin, "d2h_gbps", true, 0);
  d.duplex_gbps = positive(doc, origin, "duplex_gbps", false, d.h2d_gbps + d.d2h_gbps);
  d.peak_tflops = positive(doc, origin, "peak_tflops", true, 0);
  d.hbm_gbps = positive(doc, origin, "hbm_gbps", true, 0);
  d.compute_efficiency = positive(doc, origin, "compute_efficiency", false, 0.6);
  d.memory_efficiency = positive(doc, origin, "memory_efficiency", false, 0.75);
  if (d.compute_efficiency > 1 || d.memory_efficiency > 1)
    throw Error(origin + ": efficiencies are fractions and must be at most 1");
  auto overhead = doc.find("launch_overhead_us");
  d.launch_overhead_us = 5;
  if (overhead != doc.end()) {
    if (!overhead->is_number() || overhead->get<double>() < 0)
      throw Error(origin + ": launch_overhead_us: expected a number >= 0");
    d.launch_overhead_us = overhead->get<double>();
  }
  if (d.duplex_gbps < std::max(d.h2d_gbps, d.d2h_gbps))
    throw Error(origin + ": duplex_gbps must be at least the faster single direction");
  if (auto src = doc.find("source"); src != doc.end() && src->is_string()) d.source = *src;
  return d;
}

std::string device_to_json(const DeviceProfile& d) {
  json j = {{"format", "swapadvisor-device"},
            {"version", 1},
            {"name", d.name},
            {"memory_bytes", d.memory_bytes},
            {"h2d_gbps", d.h2d_gbps},
            {"d2h_gbps", d.d2h_gbps},
            {"duplex_gbps", d.duplex_gbps},
            {"peak_tflops", d.peak_tflops},
            {"hbm_gbps", d.hbm_gbps},
            {"compute_efficiency", d.compute_efficiency},
            {"memory_efficiency", d.memory_efficiency},
            {"launch_overhead_us", d.launch_overhead_us},
            {"source", d.source}};
  return j.dump(2) + "\n";
}

DeviceProfile load_device(const std::string& name_or_path) {
  for (const auto& d : builtins())
    if (d.name == name_or_path) return d;
  std::error_code ec;
  if (std::filesystem::is_regular_file(name_or_path, ec))
    return parse_device(read_file(name_or_path), name_or_path);
  throw Error(fmt::format("unknown device '{}': not a built-in ({}) and not a profile file",
                          name_or_path, fmt::join(builtin_device_names(), ", ")));
}

}  // namespace sa
