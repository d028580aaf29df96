#include "cost/device.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/file_io.h"
#include "util/json.h"
#include "util/limits.h"
#include "util/suggest.h"

namespace sa {
namespace {

using json = nlohmann::json;

// Figures and their sources: docs/devices.md. Efficiency factors: a dense
// FP32 conv/GEMM in cuDNN/cuBLAS typically sustains 60-70% of peak and a
// streaming elementwise kernel 70-80% of HBM bandwidth; we use 0.6 and 0.75
// everywhere so that devices compare like for like.
// The per-math peaks are dense (no 2:4 sparsity), as datasheets list them
// beside the sparse figure; 0 where the part has no such tensor cores.
const std::vector<DeviceProfile>& builtins() {
  static const std::vector<DeviceProfile> kBuiltins = {
      {"v100-16gb", int64_t{16} << 30, 12, 12, 20, 15.7, 900, 0.6, 0.75, 6,
       "SwapAdvisor paper testbed (ASPLOS'20 sec. 6): V100 16 GB, PCIe 3.0 x16 measured at 12 GB/s "
       "each way and 20 GB/s both ways at once; FP32 peak 15.7 TFLOP/s, FP16 tensor cores "
       "125 TFLOP/s and HBM2 900 GB/s from the NVIDIA V100 datasheet (SXM2). No TF32, BF16 or FP8 "
       "units: those run at the FP32 rate (FP8 at the FP16 rate).",
       0, 125, 0, 0},
      {"a100-40gb", int64_t{40} << 30, 24, 24, 40, 19.5, 1555, 0.6, 0.75, 5,
       "NVIDIA A100 40 GB datasheet: FP32 19.5 TFLOP/s (non-tensor-core), tensor cores TF32 156 "
       "and FP16/BF16 312 TFLOP/s dense, HBM2e 1555 GB/s; no FP8 (runs at the FP16 rate). "
       "PCIe 4.0 x16 is 32 GB/s raw per direction; pinned cudaMemcpy reaches about 24-26 GB/s "
       "one way and about 40 GB/s both ways (75% and 62% of raw), used here.",
       156, 312, 312, 0},
      {"h100-80gb", int64_t{80} << 30, 50, 50, 80, 67, 3350, 0.6, 0.75, 4,
       "NVIDIA H100 SXM5 80 GB datasheet: FP32 67 TFLOP/s, tensor cores TF32 495, FP16/BF16 989 "
       "and FP8 1979 TFLOP/s dense (half the datasheet's sparse figures), HBM3 3.35 TB/s. "
       "PCIe 5.0 x16 is 64 GB/s raw per direction; pinned copies reach about 50 GB/s one way and "
       "80 GB/s both ways (same efficiencies as gen4 above, rounded).",
       495, 989, 989, 1979},
      {"h200-141gb", int64_t{141} * 1000 * 1000 * 1000, 50, 50, 80, 67, 4800, 0.6, 0.75, 4,
       "NVIDIA H200 SXM 141 GB datasheet: the H100's compute (FP32 67, TF32 495, FP16/BF16 989, "
       "FP8 1979 TFLOP/s dense), HBM3e 4.8 TB/s, 141 GB (10^9). PCIe 5.0 x16 as for the H100. "
       "Replace with a measured profile from scripts/gpu-check.",
       495, 989, 989, 1979},
      {"gh200-96gb", int64_t{96} * 1000 * 1000 * 1000, 416, 170, 586, 67, 4000, 0.6, 0.75, 4,
       "NVIDIA GH200 Grace Hopper datasheet: the H100's compute (FP32 67, TF32 495, FP16/BF16 989, "
       "FP8 1979 TFLOP/s dense), 96 GB HBM3 at 4 TB/s, NVLink-C2C 900 GB/s total (450 each way) "
       "to the Grace CPU's LPDDR5X. "
       "Host link measured elsewhere on GH200 (Megatron-LM issue 6491): host-to-GPU copies reach "
       "411-421 GB/s, GPU-to-host about 170 GB/s; taken as 416 and 170, and both at once as their "
       "sum (C2C is full duplex, each way under its 450). Replace with a measured profile from "
       "`swapadvisor bandwidth` or scripts/gpu-check.",
       495, 989, 989, 1979},
      {"gh200-144gb", int64_t{144} * 1000 * 1000 * 1000, 416, 170, 586, 67, 4900, 0.6, 0.75, 4,
       "NVIDIA GH200 Grace Hopper datasheet, HBM3e version: the H100's compute (FP32 67, TF32 495, "
       "FP16/BF16 989, FP8 1979 TFLOP/s dense), 144 GB HBM3e at 4.9 TB/s, NVLink-C2C 900 GB/s "
       "total (450 each way). "
       "Host link measured elsewhere on GH200 (Megatron-LM issue 6491): host-to-GPU copies reach "
       "411-421 GB/s, GPU-to-host about 170 GB/s; taken as 416 and 170, and both at once as their "
       "sum (C2C is full duplex, each way under its 450). Replace with a measured profile from "
       "`swapadvisor bandwidth` or scripts/gpu-check.",
       495, 989, 989, 1979},
  };
  return kBuiltins;
}

// The collective link of each built-in (docs/devices.md, "Collective link"):
// 80% of the NVLink bandwidth per direction of the SXM part, 5 us per ring
// step, and the GPUs per PCIe switch of the NVIDIA DGX of that generation.
struct CollectiveLink {
  const char* name;
  double gbps, latency_us;
  int gpus_per_host_link;
};
constexpr CollectiveLink kCollectiveLinks[] = {
    {"v100-16gb", 120, 5, 2},   // NVLink 2: 6 links x 25 GB/s; DGX-1: 2 GPUs per switch
    {"a100-40gb", 240, 5, 2},   // NVLink 3: 12 links x 25 GB/s; DGX A100: 2 per switch
    {"h100-80gb", 360, 5, 2},   // NVLink 4: 18 links x 25 GB/s; DGX H100: 2 per switch
    {"h200-141gb", 360, 5, 2},  // as the H100 (NVLink 4)
    // NVLink 4 as the H100; each superchip has its own C2C host link.
    {"gh200-96gb", 360, 5, 1},
    {"gh200-144gb", 360, 5, 1},
};

const std::vector<DeviceProfile>& builtins_with_links() {
  static const std::vector<DeviceProfile> kWithLinks = [] {
    std::vector<DeviceProfile> out = builtins();
    for (DeviceProfile& d : out)
      for (const CollectiveLink& l : kCollectiveLinks)
        if (d.name == l.name) {
          d.collective_gbps = l.gbps;
          d.collective_latency_us = l.latency_us;
          d.gpus_per_host_link = l.gpus_per_host_link;
        }
    return out;
  }();
  return kWithLinks;
}

// A profile's number fields and what each may be (docs/devices.md): figures
// outside these ranges are typos or hostile (a link of 10^-300 GB/s makes
// every copy take longer than the universe has existed).
struct NumberField {
  const char* key;
  bool required;
  double lo, hi;  // inclusive; lo == 0 allows 0
  const char* unit;
};
constexpr double kMinGbps = 1e-3, kMaxLinkGbps = 1e5, kMaxHbmGbps = 1e6;
constexpr NumberField kH2d{"h2d_gbps", true, kMinGbps, kMaxLinkGbps, "GB/s"};
constexpr NumberField kD2h{"d2h_gbps", true, kMinGbps, kMaxLinkGbps, "GB/s"};
constexpr NumberField kDuplex{"duplex_gbps", false, kMinGbps, 2 * kMaxLinkGbps, "GB/s"};
constexpr NumberField kPeak{"peak_tflops", true, 1e-6, 1e6, "TFLOP/s"};
constexpr NumberField kHbm{"hbm_gbps", true, kMinGbps, kMaxHbmGbps, "GB/s"};
constexpr NumberField kComputeEff{"compute_efficiency", false, 1e-6, 1, ""};
constexpr NumberField kMemoryEff{"memory_efficiency", false, 1e-6, 1, ""};
constexpr NumberField kOverhead{"launch_overhead_us", false, 0, 1e6, "us"};
constexpr NumberField kTf32{"tf32_tflops", false, 1e-6, 1e6, "TFLOP/s"};
constexpr NumberField kFp16{"fp16_tflops", false, 1e-6, 1e6, "TFLOP/s"};
constexpr NumberField kBf16{"bf16_tflops", false, 1e-6, 1e6, "TFLOP/s"};
constexpr NumberField kFp8{"fp8_tflops", false, 1e-6, 1e6, "TFLOP/s"};
constexpr NumberField kCollective{"collective_gbps", false, kMinGbps, kMaxLinkGbps, "GB/s"};
constexpr NumberField kCollectiveLatency{"collective_latency_us", false, 0, 1e6, "us"};
constexpr NumberField kGpusPerLink{"gpus_per_host_link", false, 1, 1024, ""};
constexpr NumberField kNvmeRead{"nvme_read_gbps", false, kMinGbps, kMaxLinkGbps, "GB/s"};
constexpr NumberField kNvmeWrite{"nvme_write_gbps", false, kMinGbps, kMaxLinkGbps, "GB/s"};
constexpr NumberField kNvmeLatency{"nvme_latency_us", false, 0, 1e6, "us"};
constexpr NumberField kNvmeDepth{"nvme_queue_depth", false, 1, 4096, ""};

// A number field within its range, or fallback when it is optional and absent.
double number(const FieldReader& r, const json& doc, const NumberField& f, double fallback) {
  const json* j = FieldReader::find(doc, f.key);
  if (!j) {
    if (f.required) r.fail(f.key, "missing required field");
    return fallback;
  }
  if (!j->is_number()) r.fail(f.key, fmt::format("expected a number, got {}", describe(*j)));
  const double v = j->get<double>();
  if (f.lo > 0 && v <= 0) r.fail(f.key, fmt::format("must be a positive number, got {}", v));
  if (v < f.lo || v > f.hi)
    r.fail(f.key, fmt::format("must be between {} and {}{}{}, got {}", f.lo, f.hi,
                              *f.unit ? " " : "", f.unit, v));
  return v;
}

}  // namespace

double DeviceProfile::math_tflops(MathType m) const {
  switch (m) {
    case MathType::kFp32:
      return peak_tflops;
    case MathType::kTf32:
      return tf32_tflops > 0 ? tf32_tflops : peak_tflops;
    case MathType::kFp16:
      return fp16_tflops > 0 ? fp16_tflops : peak_tflops;
    case MathType::kBf16:
      return bf16_tflops > 0 ? bf16_tflops : peak_tflops;
    case MathType::kFp8:
      return fp8_tflops > 0 ? fp8_tflops : math_tflops(MathType::kFp16);
  }
  return peak_tflops;
}

std::vector<std::string> builtin_device_names() {
  std::vector<std::string> names;
  for (const auto& d : builtins_with_links())
    names.push_back(d.name);
  return names;
}

DeviceProfile parse_device(const std::string& text, const std::string& origin) {
  const json doc = parse_json(text, origin);
  if (!doc.is_object())
    throw Error(
        fmt::format("{}: a device profile must be a JSON object, got {}", origin, describe(doc)));
  const FieldReader r(origin);
  const json* format = FieldReader::find(doc, "format");
  if (!format || *format != "swapadvisor-device")
    r.fail("format", fmt::format("expected \"swapadvisor-device\", got {}",
                                 format ? describe(*format) : "nothing"));
  const json* version = FieldReader::find(doc, "version");
  if (!version || json_integer(*version, 1, 1) != 1)
    r.fail("version", fmt::format("unsupported version {} (this reader supports 1)",
                                  version ? describe(*version) : "(none)"));
  DeviceProfile d;
  const std::string* name = r.optional_string(doc, "", "name");
  d.name = name ? *name : std::filesystem::path(origin).stem().string();
  const json& mem = r.field(doc, "", "memory_bytes");
  const double bytes = mem.is_number() ? mem.get<double>() : 0;
  if (!mem.is_number() || bytes != std::floor(bytes) || bytes < 1 ||
      bytes > static_cast<double>(kMaxBytes))
    r.fail("memory_bytes",
           fmt::format("expected a whole number of bytes from 1 to 2^50 (1 PiB), got {}",
                       describe(mem)));
  d.memory_bytes = static_cast<int64_t>(bytes);
  d.h2d_gbps = number(r, doc, kH2d, 0);
  d.d2h_gbps = number(r, doc, kD2h, 0);
  d.duplex_gbps = number(r, doc, kDuplex, d.h2d_gbps + d.d2h_gbps);
  d.peak_tflops = number(r, doc, kPeak, 0);
  d.hbm_gbps = number(r, doc, kHbm, 0);
  d.compute_efficiency = number(r, doc, kComputeEff, 0.6);
  d.memory_efficiency = number(r, doc, kMemoryEff, 0.75);
  d.launch_overhead_us = number(r, doc, kOverhead, 5);
  // 0: not given, math_tflops() falls back to the FP32 peak.
  d.tf32_tflops = number(r, doc, kTf32, 0);
  d.fp16_tflops = number(r, doc, kFp16, 0);
  d.bf16_tflops = number(r, doc, kBf16, 0);
  d.fp8_tflops = number(r, doc, kFp8, 0);
  // Without a collective link, ranks all-reduce over the host link.
  d.collective_gbps = number(r, doc, kCollective, std::min(d.h2d_gbps, d.d2h_gbps));
  d.collective_latency_us = number(r, doc, kCollectiveLatency, 10);
  const double gpus = number(r, doc, kGpusPerLink, 1);
  if (gpus != std::floor(gpus))
    r.fail("gpus_per_host_link", fmt::format("expected a whole number, got {}", gpus));
  d.gpus_per_host_link = static_cast<int>(gpus);
  // The NVMe tier: both bandwidths or neither.
  d.nvme_read_gbps = number(r, doc, kNvmeRead, 0);
  d.nvme_write_gbps = number(r, doc, kNvmeWrite, 0);
  if ((d.nvme_read_gbps > 0) != (d.nvme_write_gbps > 0))
    r.fail(d.nvme_read_gbps > 0 ? "nvme_write_gbps" : "nvme_read_gbps",
           "an NVMe tier needs both nvme_read_gbps and nvme_write_gbps");
  d.nvme_latency_us = number(r, doc, kNvmeLatency, d.has_nvme() ? 100 : 0);
  const double depth = number(r, doc, kNvmeDepth, d.has_nvme() ? 32 : 0);
  if (depth != std::floor(depth))
    r.fail("nvme_queue_depth", fmt::format("expected a whole number, got {}", depth));
  d.nvme_queue_depth = static_cast<int>(depth);
  if (d.duplex_gbps < std::max(d.h2d_gbps, d.d2h_gbps))
    throw Error(origin + ": duplex_gbps must be at least the faster single direction");
  if (const std::string* source = r.optional_string(doc, "", "source")) d.source = *source;
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
            {"source", d.source},
            {"collective_gbps", d.collective_gbps},
            {"collective_latency_us", d.collective_latency_us},
            {"gpus_per_host_link", d.gpus_per_host_link}};
  // Only the per-math peaks the profile has: absent means "the FP32 peak".
  for (const auto& [key, v] :
       {std::pair{"tf32_tflops", d.tf32_tflops}, std::pair{"fp16_tflops", d.fp16_tflops},
        std::pair{"bf16_tflops", d.bf16_tflops}, std::pair{"fp8_tflops", d.fp8_tflops}})
    if (v > 0) j[key] = v;
  if (d.has_nvme()) {  // absent means "no NVMe tier"
    j["nvme_read_gbps"] = d.nvme_read_gbps;
    j["nvme_write_gbps"] = d.nvme_write_gbps;
    j["nvme_latency_us"] = d.nvme_latency_us;
    j["nvme_queue_depth"] = d.nvme_queue_depth;
  }
  return j.dump(2) + "\n";
}

DeviceProfile load_device(const std::string& name_or_path) {
  std::error_code ec;
  // Any file, so that a directory or an unreadable file gets its own error.
  // A file of a built-in's name is read only when it exists, as before.
  const bool is_file = std::filesystem::exists(name_or_path, ec);
  for (const auto& d : builtins_with_links())
    if (d.name == name_or_path || (!is_file && same_letters(d.name, name_or_path)))
      return d;  // built-in names are matched case-insensitively (V100-16GB)
  if (is_file) return parse_device(read_file(name_or_path), name_or_path);
  const std::vector<std::string> names = builtin_device_names();
  const auto near = closest(name_or_path, names);
  throw Error(fmt::format("unknown device {}: not a built-in ({}) and not a profile file{}",
                          quote(name_or_path), fmt::join(names, ", "),
                          near ? fmt::format("; did you mean '{}'?", *near) : ""));
}

}  // namespace sa
