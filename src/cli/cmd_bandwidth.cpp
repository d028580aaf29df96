// `swapadvisor bandwidth`: measure the host↔device link (each way alone and
// both at once), the GEMM rate per math type (runtime/math_rates.h) and,
// with --nvme, the NVMe tier (runtime/nvme/nvme_bandwidth.h), and
// optionally write a device profile with them.

#include <algorithm>
#include <cctype>
#include <ctime>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "cli/options.h"
#include "runtime/backends.h"
#include "runtime/bandwidth.h"
#include "runtime/math_rates.h"
#include "runtime/nvme/nvme_bandwidth.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/json.h"
#include "util/terminal.h"
#include "util/units.h"

namespace sa::cli {
namespace {

constexpr int64_t kMinCopyBytes = int64_t{1} << 20;   // 1 MiB
constexpr int64_t kMaxCopyBytes = int64_t{16} << 30;  // 16 GiB

struct BandwidthArgs {
  std::string backend = "cuda";
  std::string bytes = "256MiB";
  int repeats = 8;
  std::string base = "auto";
  std::string link = "v100-16gb";  // host backend: the profile it paces to
  double time_scale = 1;
  bool pace = true;
  int cuda_device = 0;
  std::string output;
  bool json = false;
  int gemm = -1;     // GEMM size for the rate measurement; -1: the backend's default, 0: none
  std::string nvme;  // the NVMe tier's test file; empty: not measured
  std::string nvme_bytes = "1GiB";
  int nvme_queue_depth = 32;
  std::string nvme_backend = "auto";
};

// The NVMe measurement writes, then reads, nvme_bytes in requests of
// kNvmeRequest: at least two requests, and at most what a big SSD holds
// spare.
constexpr int64_t kNvmeRequest = int64_t{8} << 20;   // 8 MiB
constexpr int64_t kMinNvmeBytes = 2 * kNvmeRequest;  // 16 MiB
constexpr int64_t kMaxNvmeBytes = int64_t{1} << 40;  // 1 TiB

// Measures the NVMe tier first, so that a bad --nvme path fails before the
// link and GEMM measurements have taken their time.
std::optional<runtime::NvmeMeasurement> measure_nvme_tier(const BandwidthArgs& args) {
  if (args.nvme.empty()) return std::nullopt;
  const auto bytes = parse_bytes(args.nvme_bytes);
  if (!bytes) throw Error(fmt::format("--nvme-bytes: cannot read '{}' as a size", args.nvme_bytes));
  if (*bytes < kMinNvmeBytes || *bytes > kMaxNvmeBytes)
    throw Error(fmt::format("--nvme-bytes: {} is outside {} to {}", format_bytes(*bytes),
                            format_bytes(kMinNvmeBytes), format_bytes(kMaxNvmeBytes)));
  runtime::NvmeOptions o;
  o.queue_depth = args.nvme_queue_depth;
  o.backend = *runtime::parse_nvme_backend(args.nvme_backend);  // checked by CLI11
  return runtime::measure_nvme(args.nvme, *bytes, o, kNvmeRequest);
}

void apply_nvme(DeviceProfile& p, const runtime::NvmeMeasurement& m) {
  p.nvme_read_gbps = m.read_gbps;
  p.nvme_write_gbps = m.write_gbps;
  p.nvme_latency_us = m.latency_us;
  p.nvme_queue_depth = m.queue_depth;
}

std::string nvme_source(const runtime::NvmeMeasurement& m, const std::string& path) {
  return fmt::format(
      "; NVMe tier measured at {} ({} engine, {} written then read in {} requests, "
      "{} chunks of {} in flight)",
      path, m.backend, format_bytes(m.bytes), format_bytes(m.request_bytes), m.queue_depth,
      format_bytes(m.chunk_bytes));
}

void print_nvme(const runtime::NvmeMeasurement& m, const std::string& path) {
  fmt::print("nvme        {} ({} engine), {} written then read, {} requests, {} x {} in flight\n",
             terminal_safe(path), m.backend, format_bytes(m.bytes), format_bytes(m.request_bytes),
             m.queue_depth, format_bytes(m.chunk_bytes));
  fmt::print("nvme write  {:.2f} GB/s\n", m.write_gbps);
  fmt::print("nvme read   {:.2f} GB/s\n", m.read_gbps);
  fmt::print("nvme 4 KiB  {:.1f} us median, {:.1f} us p99 ({} single reads)\n", m.latency_us,
             m.latency_p99_us, m.latency_reads);
}

// A short GEMM per math type: big enough to reach the device's rate, small
// enough to take well under a second (8192^3 is 1.1 TFLOP, about 40 ms in
// FP32 on an H100); the host's plain C++ loop is far slower, hence 256.
constexpr int kCudaGemm = 8192, kHostGemm = 256, kGemmRepeats = 5;
// The largest --gemm each backend runs in a few seconds (a warm-up and
// kGemmRepeats products per math type). The host's plain loop took 1.0 s at
// 1024 and 10 s at 2048 (this repository's 2-core build machine), and would
// take hours at 32768. On CUDA, 16384^3 is 8.8 TFLOP per product, about 3 s
// for the FP32 runs on a V100 (15.7 TFLOP/s, from the datasheet, not
// measured here) and 3 GiB of matrices; 32768 would be 8x the time and
// 12 GiB.
constexpr int kMinGemm = 16, kMaxHostGemm = 1024, kMaxCudaGemm = 16384;

// Puts the measured rates into the profile: on CUDA the measured FP32,
// TF32, FP16 and BF16 rates replace the base's datasheet peaks (FP8 keeps
// the datasheet figure); on the host the CPU's FP32 rate is the peak and no
// tensor-core rate is claimed.
void apply_rates(DeviceProfile& p, const runtime::MathRates& m, bool cuda) {
  p.peak_tflops = m.fp32;
  if (cuda) {
    p.tf32_tflops = m.tf32;
    p.fp16_tflops = m.fp16;
    p.bf16_tflops = m.bf16;
  } else {
    p.tf32_tflops = p.fp16_tflops = p.bf16_tflops = p.fp8_tflops = 0;
  }
}

// The built-in profile whose compute figures a measured profile borrows.
std::string base_for(const std::string& device_name, int64_t memory_bytes) {
  std::string up = device_name;
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  // Before H200, which "GH200" contains; the HBM3e version has over 100 GB.
  if (up.find("GH200") != std::string::npos)
    return memory_bytes > int64_t{100} * 1000 * 1000 * 1000 ? "gh200-144gb" : "gh200-96gb";
  if (up.find("H200") != std::string::npos) return "h200-141gb";
  if (up.find("H100") != std::string::npos) return "h100-80gb";
  if (up.find("A100") != std::string::npos) return "a100-40gb";
  if (up.find("V100") != std::string::npos) return "v100-16gb";
  return "h100-80gb";
}

std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-')
    out.pop_back();
  return out;
}

void run_bandwidth(const BandwidthArgs& args) {
  const auto bytes = parse_bytes(args.bytes);
  if (!bytes) throw Error(fmt::format("--bytes: cannot read '{}' as a size", args.bytes));
  // Smaller copies measure the latency of a copy, not the link's bandwidth;
  // larger ones need that much host and device memory twice.
  if (*bytes < kMinCopyBytes || *bytes > kMaxCopyBytes)
    throw Error(fmt::format(
        "--bytes: {} is outside {} to {}: smaller copies measure latency, not "
        "bandwidth",
        format_bytes(*bytes), format_bytes(kMinCopyBytes), format_bytes(kMaxCopyBytes)));
  const int max_gemm = args.backend == "cuda" ? kMaxCudaGemm : kMaxHostGemm;
  if (args.gemm > 0 && args.gemm < kMinGemm)
    throw Error(fmt::format("--gemm {}: 0 (no measurement) or from {} to {}", args.gemm, kMinGemm,
                            max_gemm));
  if (args.gemm > max_gemm)
    throw Error(fmt::format(
        "--gemm {}: at most {} on the {} backend (its GEMM takes seconds at {} and grows as "
        "N^3; 0 skips the measurement)",
        args.gemm, max_gemm, args.backend, max_gemm));
  const std::optional<runtime::NvmeMeasurement> nvme = measure_nvme_tier(args);
  runtime::BackendOptions bo;
  bo.name = args.backend;
  bo.link = load_device(args.link);
  bo.time_scale = args.time_scale;
  bo.pace = args.pace;
  bo.cuda_device = args.cuda_device;
  const auto backend = runtime::make_backend(bo);
  const runtime::LinkMeasurement m = runtime::measure_link(*backend, *bytes, args.repeats);
  // On a paced host backend, report the emulated device's bandwidths.
  const double scale =
      args.backend == "host" && args.pace && args.time_scale > 0 ? args.time_scale : 1;
  const double h2d = m.h2d_gbps * scale, d2h = m.d2h_gbps * scale, duplex = m.duplex_gbps * scale;

  DeviceProfile profile = load_device(
      args.base == "auto" ? base_for(backend->device_name(), backend->device_memory_bytes())
                          : args.base);
  const std::string base_name = profile.name;
  profile.name = "measured-" + slug(backend->device_name());
  if (backend->device_memory_bytes() > 0) profile.memory_bytes = backend->device_memory_bytes();
  profile.h2d_gbps = h2d;
  profile.d2h_gbps = d2h;
  profile.duplex_gbps = duplex;
  const bool cuda = args.backend == "cuda";
  int gemm = args.gemm < 0 ? (cuda ? kCudaGemm : kHostGemm) : args.gemm;
  runtime::MathRates rates;
  if (gemm > 0) {
    // The link is what this command is for: without cuBLAS, say so and keep
    // the base's compute figures rather than losing the link measurement.
    try {
      rates = cuda ? runtime::measure_cuda_matmul(args.cuda_device, gemm, kGemmRepeats)
                   : runtime::measure_host_matmul(gemm, kGemmRepeats);
      apply_rates(profile, rates, cuda);
    } catch (const Error& e) {
      print_warnings({fmt::format("GEMM rates not measured: {}", e.what())});
      gemm = 0;
    }
  }
  char date[32] = "";
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  profile.source = fmt::format(
      "link measured by `swapadvisor bandwidth` on {} ({} backend, {} copies of {}, {}); memory "
      "from the device; {}",
      backend->device_name(), backend->name(), args.repeats, format_bytes(*bytes), date,
      gemm == 0
          ? "compute figures from the built-in profile " + base_name
          : fmt::format("GEMM rates measured ({}); HBM bandwidth{} from the built-in profile {}",
                        rates.how, cuda ? " and FP8 rate" : "", base_name));
  if (nvme) {
    apply_nvme(profile, *nvme);
    profile.source += nvme_source(*nvme, args.nvme);
  }
  if (!args.output.empty()) write_file(args.output, device_to_json(profile) + "\n");

  if (args.json) {
    nlohmann::json j = {{"device", backend->device_name()},
                        {"backend", backend->name()},
                        {"bytes", *bytes},
                        {"repeats", args.repeats},
                        {"h2d_gbps", h2d},
                        {"d2h_gbps", d2h},
                        {"duplex_gbps", duplex}};
    if (gemm > 0) {
      nlohmann::json r = {{"fp32", rates.fp32}};
      if (cuda) {
        r["tf32"] = rates.tf32;
        r["fp16"] = rates.fp16;
        r["bf16"] = rates.bf16;
      }
      j["gemm_tflops"] = r;
      j["gemm_size"] = gemm;
    }
    if (nvme) {
      j["nvme_read_gbps"] = nvme->read_gbps;
      j["nvme_write_gbps"] = nvme->write_gbps;
      j["nvme_latency_us"] = nvme->latency_us;
      j["nvme_queue_depth"] = nvme->queue_depth;
      j["nvme"] = {{"path", args.nvme},
                   {"backend", nvme->backend},
                   {"bytes", nvme->bytes},
                   {"request_bytes", nvme->request_bytes},
                   {"chunk_bytes", nvme->chunk_bytes},
                   {"latency_p99_us", nvme->latency_p99_us},
                   {"latency_reads", nvme->latency_reads}};
    }
    fmt::print("{}\n", dump_json(j, 2));
    return;
  }
  fmt::print("device      {} ({} backend)\n", terminal_safe(backend->device_name()),
             backend->name());
  fmt::print("copies      {} x {} each way, host memory {}\n", args.repeats, format_bytes(*bytes),
             args.backend == "cuda" ? "pinned" : "malloc");
  fmt::print("h2d         {:.2f} GB/s\n", h2d);
  fmt::print("d2h         {:.2f} GB/s\n", d2h);
  fmt::print("both ways   {:.2f} GB/s in total\n", duplex);
  if (gemm > 0) {
    fmt::print("gemm {}^3  FP32 {:.3g} TFLOP/s", gemm, rates.fp32);
    if (cuda)
      fmt::print(", TF32 {:.3g}, FP16 {:.3g}, BF16 {:.3g} (FP8 not measured)", rates.tf32,
                 rates.fp16, rates.bf16);
    else
      fmt::print(" on the CPU (other math types are not measured on the host)");
    fmt::print("\n");
  }
  if (nvme) print_nvme(*nvme, args.nvme);
  if (!args.output.empty()) fmt::print("profile     {} written to {}\n", profile.name, args.output);
}

}  // namespace

void register_bandwidth(CLI::App& app) {
  auto args = std::make_shared<BandwidthArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bandwidth", "measure host<->device copy bandwidth and write a device profile");
  cmd->add_option("--backend", args->backend, "cuda, or host (measures the emulated link)")
      ->check(CLI::IsMember({"host", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--bytes", args->bytes,
                  fmt::format("bytes per copy, {} to {}", format_bytes(kMinCopyBytes),
                              format_bytes(kMaxCopyBytes)))
      ->capture_default_str();
  cmd->add_option("--repeats", args->repeats, "copies per measurement")
      ->check(integer_in(2, 1000))
      ->capture_default_str();
  cmd->add_option("--base", args->base,
                  "profile whose compute figures the written profile keeps (auto: by GPU name)")
      ->capture_default_str();
  cmd->add_option("--link", args->link, "host backend: the profile whose link it emulates")
      ->capture_default_str();
  cmd->add_option("--time-scale", args->time_scale,
                  "host backend: time scale of the emulation (as for run)")
      ->check(zero_or_number_in(kMinTimeScale, kMaxTimeScale));
  cmd->add_flag("--pace,!--no-pace", args->pace, "host backend: pace the copies (default on)");
  cmd->add_option("--cuda-device", args->cuda_device, "CUDA device index")
      ->check(cuda_device_index());
  cmd->add_option("--gemm", args->gemm,
                  fmt::format("size N of the N^3 GEMM timed per math type (default {} on cuda, {} "
                              "on host, at most {} and {}; 0: do not measure, keep the base's "
                              "compute figures)",
                              kCudaGemm, kHostGemm, kMaxCudaGemm, kMaxHostGemm))
      ->check(integer_in(0, 32768));
  cmd->add_option("-o,--output", args->output, "write a device profile (JSON) with the results");
  cmd->add_option("--nvme", args->nvme,
                  "also measure the NVMe tier: O_DIRECT writes, then reads, of a new file at PATH "
                  "(removed afterwards), put into the profile as nvme_read_gbps, "
                  "nvme_write_gbps, nvme_latency_us and nvme_queue_depth; PATH must be on the SSD "
                  "to measure (O_DIRECT bypasses the page cache, so the figures are that "
                  "device's; a file system without O_DIRECT, such as an old kernel's tmpfs, is "
                  "refused)")
      ->type_name("PATH");
  cmd->add_option("--nvme-bytes", args->nvme_bytes,
                  fmt::format("bytes the NVMe measurement writes and reads, {} to {}",
                              format_bytes(kMinNvmeBytes), format_bytes(kMaxNvmeBytes)))
      ->capture_default_str();
  cmd->add_option("--nvme-queue-depth", args->nvme_queue_depth,
                  "NVMe requests in flight (1 MiB chunks of 8 MiB requests)")
      ->check(integer_in(1, 4096))
      ->capture_default_str();
  cmd->add_option("--nvme-backend", args->nvme_backend,
                  "the NVMe store's engine: auto (io_uring where the kernel allows it), io_uring, "
                  "threads")
      ->check(CLI::IsMember({"auto", "io_uring", "threads"}))
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->callback([args] { run_bandwidth(*args); });
}

}  // namespace sa::cli
