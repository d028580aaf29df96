// `swapadvisor bandwidth`: measure the host↔device link (each way alone and
// both at once) and optionally write a device profile with it.

#include <algorithm>
#include <cctype>
#include <ctime>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "cli/options.h"
#include "runtime/backends.h"
#include "runtime/bandwidth.h"
#include "util/error.h"
#include "util/file_io.h"
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
};

// The built-in profile whose compute figures a measured profile borrows.
std::string base_for(const std::string& device_name) {
  std::string up = device_name;
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
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

  DeviceProfile profile =
      load_device(args.base == "auto" ? base_for(backend->device_name()) : args.base);
  const std::string base_name = profile.name;
  profile.name = "measured-" + slug(backend->device_name());
  if (backend->device_memory_bytes() > 0) profile.memory_bytes = backend->device_memory_bytes();
  profile.h2d_gbps = h2d;
  profile.d2h_gbps = d2h;
  profile.duplex_gbps = duplex;
  char date[32] = "";
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  profile.source = fmt::format(
      "link measured by `swapadvisor bandwidth` on {} ({} backend, {} copies of {}, {}); memory "
      "from the device; compute figures from the built-in profile {}",
      backend->device_name(), backend->name(), args.repeats, format_bytes(*bytes), date, base_name);
  if (!args.output.empty()) write_file(args.output, device_to_json(profile) + "\n");

  if (args.json) {
    nlohmann::json j = {{"device", backend->device_name()},
                        {"backend", backend->name()},
                        {"bytes", *bytes},
                        {"repeats", args.repeats},
                        {"h2d_gbps", h2d},
                        {"d2h_gbps", d2h},
                        {"duplex_gbps", duplex}};
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("device      {} ({} backend)\n", backend->device_name(), backend->name());
  fmt::print("copies      {} x {} each way, host memory {}\n", args.repeats, format_bytes(*bytes),
             args.backend == "cuda" ? "pinned" : "malloc");
  fmt::print("h2d         {:.2f} GB/s\n", h2d);
  fmt::print("d2h         {:.2f} GB/s\n", d2h);
  fmt::print("both ways   {:.2f} GB/s in total\n", duplex);
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
  cmd->add_option("-o,--output", args->output, "write a device profile (JSON) with the results");
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->callback([args] { run_bandwidth(*args); });
}

}  // namespace sa::cli
