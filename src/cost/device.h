#pragma once
// Device profiles: what the planner needs to know about a GPU and its link to
// the host. Built-in profiles are documented in docs/devices.md (where every
// figure comes from); users can write their own as JSON:
//
//   {"format": "swapadvisor-device", "version": 1, "name": "my-gpu",
//    "memory_bytes": 17179869184,
//    "h2d_gbps": 12, "d2h_gbps": 12, "duplex_gbps": 20,
//    "peak_tflops": 15.7, "hbm_gbps": 900,
//    "compute_efficiency": 0.6, "memory_efficiency": 0.75,
//    "launch_overhead_us": 6, "source": "where these figures come from",
//    "tf32_tflops": 15.7, "fp16_tflops": 125, "bf16_tflops": 15.7,
//    "collective_gbps": 120, "collective_latency_us": 5, "gpus_per_host_link": 2}
//
// The collective_* and gpus_per_host_link fields are optional too
// (docs/devices.md, "Collective link", gives their defaults).
//
// Bandwidths are in GB/s (10^9 bytes per second). The per-math peaks
// (tf32/fp16/bf16/fp8_tflops) are optional: absent, an op in that math runs
// at the FP32 peak (fp8: at the FP16 rate), today's behaviour for old files.

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace sa {

struct DeviceProfile {
  std::string name;
  int64_t memory_bytes = 0;       // device memory
  double h2d_gbps = 0;            // host→device alone
  double d2h_gbps = 0;            // device→host alone
  double duplex_gbps = 0;         // total of both directions when both run
  double peak_tflops = 0;         // FP32 peak (dense), 10^12 flop/s
  double hbm_gbps = 0;            // device memory bandwidth
  double compute_efficiency = 0;  // fraction of peak flop/s a typical op reaches
  double memory_efficiency = 0;   // fraction of HBM bandwidth a typical op reaches
  double launch_overhead_us = 0;  // added to every op
  std::string source;             // provenance of the figures
  // Dense tensor-core peaks per math type, 10^12 flop/s; 0 = the part has no
  // such units or the profile does not say: see math_tflops().
  double tf32_tflops = 0;
  double fp16_tflops = 0;
  double bf16_tflops = 0;
  double fp8_tflops = 0;

  // The peak an op whose flops run in math m reaches: its field when set,
  // else the FP32 peak (FP8 falls back to the FP16 rate first), so that a
  // profile without these fields costs every op as format 1.0 did.
  double math_tflops(MathType m) const;

  // Data-parallel training (docs/devices.md, "Collective link"): the link
  // the gradient all-reduce runs on between ranks (NVLink on SXM parts), as
  // the bandwidth one ring step sustains per direction and the latency of
  // one step; and how many GPUs share one host link (a PCIe switch uplink).
  double collective_gbps = 0;
  double collective_latency_us = 0;
  int gpus_per_host_link = 1;

  // The NVMe tier (docs/devices.md, "NVMe tier"): an SSD or RAID on the host
  // where tensors go when host memory is short (issue 30). Sequential
  // bandwidths of large O_DIRECT requests, the latency of one request, and
  // the requests the runtime keeps in flight. nvme_read_gbps 0: no NVMe tier
  // (every profile without the fields, as before).
  double nvme_read_gbps = 0;
  double nvme_write_gbps = 0;
  double nvme_latency_us = 0;
  int nvme_queue_depth = 0;
  bool has_nvme() const { return nvme_read_gbps > 0 && nvme_write_gbps > 0; }

  // Bytes per microsecond, the simulator's unit (1 GB/s = 1000 B/us).
  double h2d_bytes_per_us() const { return h2d_gbps * 1e3; }
  double d2h_bytes_per_us() const { return d2h_gbps * 1e3; }
  double duplex_bytes_per_us() const { return duplex_gbps * 1e3; }
};

// Names of the built-in profiles: v100-16gb, a100-40gb, h100-80gb, h200-141gb,
// gh200-96gb, gh200-144gb.
std::vector<std::string> builtin_device_names();

// A built-in name, or else a path to a profile JSON file. Throws sa::Error
// listing the built-in names when neither matches.
DeviceProfile load_device(const std::string& name_or_path);

DeviceProfile parse_device(const std::string& json_text, const std::string& origin);
std::string device_to_json(const DeviceProfile& d);

}  // namespace sa
