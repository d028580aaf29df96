#include "runtime/nvme/nvme_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "runtime/clock.h"
#include "util/error.h"

namespace sa::runtime {
namespace {

double nvme_us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

// Requests kept in flight: enough to fill the engine's queue with chunks
// (queue depth x chunk bytes), plus one being refilled.
int nvme_window(const NvmeOptions& o, int64_t request_bytes) {
  const int64_t in_queue = o.queue_depth * o.chunk_bytes;
  return static_cast<int>(std::max<int64_t>(2, (in_queue + request_bytes - 1) / request_bytes + 1));
}

// Sequential requests over [0, bytes): write or read each from its own
// buffer, `window` at a time. Writes stamp each request's index into its
// first 8 bytes; reads check it, so that the figures are of real data.
double nvme_stream(NvmeStore& store, bool write, int64_t bytes, int64_t request,
                   std::vector<AlignedBuffer>& buffers) {
  const int64_t n = (bytes + request - 1) / request;
  const auto window = static_cast<int64_t>(buffers.size());
  std::vector<NvmeStore::Ticket> tickets(buffers.size());
  auto check = [&](int64_t i) {
    if (write) return;
    int64_t stamp = -1;
    std::memcpy(&stamp, buffers[i % window].data(), sizeof stamp);
    if (stamp != i)
      throw Error(fmt::format("{}: read back other data at offset {} than was written there",
                              store.path(), i * request));
  };
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t slot = i % window;
    if (i >= window) {
      store.wait(tickets[slot]);
      check(i - window);
    }
    const int64_t len = std::min(request, bytes - i * request);
    std::byte* buf = buffers[slot].data();
    if (write) {
      std::memcpy(buf, &i, sizeof i);
      tickets[slot] = store.submit_write(i * request, buf, len);
    } else {
      tickets[slot] = store.submit_read(i * request, buf, len);
    }
  }
  for (int64_t i = std::max<int64_t>(0, n - window); i < n; ++i) {
    store.wait(tickets[i % window]);
    check(i);
  }
  return static_cast<double>(bytes) / nvme_us_since(t0) / 1e3;  // bytes/us / 1e3 = GB/s
}

}  // namespace

NvmeMeasurement measure_nvme(const std::string& path, int64_t bytes, NvmeOptions options,
                             int64_t request_bytes, int latency_reads) {
  SA_CHECK(request_bytes > 0 && bytes >= request_bytes && latency_reads > 0,
           "bytes {} request {} reads {}", bytes, request_bytes, latency_reads);
  options.must_create = true;
  // Random contents: a device that compresses or deduplicates would
  // otherwise measure faster than it stores tensors. The buffers outlive
  // the store, whose destructor ends what an error left in flight.
  std::vector<AlignedBuffer> buffers;
  std::mt19937_64 rng(42);
  for (int i = 0; i < nvme_window(options, request_bytes); ++i) {
    AlignedBuffer& b = buffers.emplace_back(request_bytes);
    auto* words = reinterpret_cast<uint64_t*>(b.data());
    for (int64_t w = 0; w < b.size() / 8; ++w)
      words[w] = rng();
  }
  AlignedBuffer one(kNvmeAlignment);
  NvmeStore store(path, bytes, options);
  NvmeMeasurement m;
  m.bytes = store.capacity();
  m.request_bytes = request_bytes;
  m.chunk_bytes = options.chunk_bytes;
  m.queue_depth = options.queue_depth;
  m.backend = store.backend_name();
  m.write_gbps = nvme_stream(store, true, m.bytes, request_bytes, buffers);
  m.read_gbps = nvme_stream(store, false, m.bytes, request_bytes, buffers);

  // One request at a time: the time a single small read takes to come back.
  std::uniform_int_distribution<int64_t> block(0, m.bytes / kNvmeAlignment - 1);
  std::vector<double> us;
  for (int i = 0; i < latency_reads; ++i) {
    const int64_t at = block(rng) * kNvmeAlignment;
    const auto t0 = Clock::now();
    store.wait(store.submit_read(at, one.data(), kNvmeAlignment));
    us.push_back(nvme_us_since(t0));
  }
  std::sort(us.begin(), us.end());
  m.latency_reads = latency_reads;
  m.latency_us = us[us.size() / 2];
  m.latency_p99_us = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  return m;
}

}  // namespace sa::runtime
