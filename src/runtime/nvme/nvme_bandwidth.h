#pragma once
// Measures the NVMe tier through an NvmeStore, as the runtime would use it:
// sequential O_DIRECT writes of large requests filling a new file at path,
// then reads of it back (checked), then single 4 KiB reads at random
// offsets, one at a time, for the latency. The file is removed afterwards.
// O_DIRECT bypasses the page cache, so the figures are the device's, and
// the reads are of written data (a file system reads unwritten extents as
// zeros without touching the device).

#include <cstdint>
#include <string>

#include "runtime/nvme/nvme_store.h"

namespace sa::runtime {

struct NvmeMeasurement {
  double write_gbps = 0;  // GB/s (10^9 B/s)
  double read_gbps = 0;
  double latency_us = 0;  // median of the single 4 KiB reads
  double latency_p99_us = 0;
  int latency_reads = 0;
  int64_t bytes = 0;  // written, then read
  int64_t request_bytes = 0;
  int64_t chunk_bytes = 0;
  int queue_depth = 0;
  std::string backend;  // the store's engine
};

// REQUIRES: bytes >= request_bytes > 0. options.must_create is forced: the
// measurement writes its own file and removes it, never a user's.
NvmeMeasurement measure_nvme(const std::string& path, int64_t bytes, NvmeOptions options,
                             int64_t request_bytes = int64_t{8} << 20, int latency_reads = 256);

}  // namespace sa::runtime
