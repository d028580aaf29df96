#include "runtime/nvme/nvme_store.h"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "util/error.h"
#include "util/units.h"

namespace sa::runtime {

std::optional<NvmeBackend> parse_nvme_backend(std::string_view name) {
  if (name == "auto") return NvmeBackend::kAuto;
  if (name == "io_uring") return NvmeBackend::kIoUring;
  if (name == "threads") return NvmeBackend::kThreads;
  return std::nullopt;
}

namespace {

NvmeOptions checked_options(const std::string& path, NvmeOptions o) {
  if (o.queue_depth < 1 || o.queue_depth > 4096)
    throw Error(fmt::format("{}: NVMe queue depth {} is outside 1 to 4096", path, o.queue_depth));
  if (o.chunk_bytes <= 0 || o.chunk_bytes % kNvmeAlignment != 0)
    throw Error(fmt::format("{}: NVMe chunk size {} is not a positive multiple of {}", path,
                            o.chunk_bytes, kNvmeAlignment));
  return o;
}

// Capacities up to 2^60 bytes (1 EiB), so that rounding up cannot overflow.
int64_t checked_capacity(const std::string& path, int64_t bytes) {
  if (bytes <= 0 || bytes > (int64_t{1} << 60))
    throw Error(fmt::format("{}: NVMe capacity {} is outside 1 to 2^60 bytes", path, bytes));
  return nvme_round_up(bytes);
}

}  // namespace

NvmeStore::NvmeStore(const std::string& path, int64_t capacity_bytes, NvmeOptions options)
    : options_(checked_options(path, options)),
      file_(path, checked_capacity(path, capacity_bytes), options.must_create) {
  NvmeDone done = [this](const NvmeChunk& c, const std::string& e) { chunk_done(c, e); };
  std::string why;
  if (options_.backend != NvmeBackend::kThreads)
    engine_ = make_uring_engine(file_.fd(), options_.queue_depth, done, &why);
  if (!engine_ && options_.backend == NvmeBackend::kIoUring)
    throw Error(fmt::format("{}: the io_uring backend is not available: {}", path, why));
  if (!engine_) engine_ = make_thread_engine(file_.fd(), options_.queue_depth, done);
}

NvmeStore::~NvmeStore() {
  engine_.reset();  // finishes every chunk before the file closes
}

bool NvmeStore::io_uring_available(std::string* why) {
  // An engine on no file: setting up the ring is what the kernel may refuse.
  auto engine = make_uring_engine(
      -1, 1, [](const NvmeChunk&, const std::string&) {}, why);
  return engine != nullptr;
}

NvmeStore::Ticket NvmeStore::submit_write(int64_t offset, const void* src, int64_t bytes) {
  // The engine only reads from src for a write.
  return submit(NvmeOp::kWrite, offset, static_cast<std::byte*>(const_cast<void*>(src)), bytes);
}

NvmeStore::Ticket NvmeStore::submit_read(int64_t offset, void* dst, int64_t bytes) {
  return submit(NvmeOp::kRead, offset, static_cast<std::byte*>(dst), bytes);
}

NvmeStore::Ticket NvmeStore::submit(NvmeOp op, int64_t offset, std::byte* data, int64_t bytes) {
  const char* what = op == NvmeOp::kRead ? "read" : "write";
  if (offset < 0 || offset % kAlignment != 0)
    throw Error(fmt::format(
        "{}: {} at offset {}: the offset is not a multiple of {} (O_DIRECT needs aligned "
        "offsets)",
        path(), what, offset, kAlignment));
  if (bytes < 0 || bytes > capacity())
    throw Error(fmt::format("{}: {} of {} bytes: must be 0 to the capacity {}", path(), what, bytes,
                            capacity()));
  if (reinterpret_cast<uintptr_t>(data) % kAlignment != 0)
    throw Error(fmt::format(
        "{}: {} at offset {}: the host buffer {} is not aligned to {} bytes (O_DIRECT needs "
        "aligned buffers: AlignedBuffer)",
        path(), what, offset, static_cast<const void*>(data), kAlignment));
  const int64_t rounded = nvme_round_up(bytes);
  if (offset > capacity() || rounded > capacity() - offset)
    throw Error(fmt::format("{}: {} of {} bytes at offset {} ends past the capacity {} ({})",
                            path(), what, rounded, offset, capacity(), format_bytes(capacity())));
  const int64_t chunks = (rounded + options_.chunk_bytes - 1) / options_.chunk_bytes;
  Ticket t;
  {
    std::lock_guard lock(mutex_);
    t = next_++;
    if (chunks == 0) return t;  // nothing to move: ended already
    requests_[t].chunks_left = chunks;
  }
  // Outside the lock: the engine's threads take it to report chunks.
  for (int64_t at = 0; at < rounded; at += options_.chunk_bytes)
    engine_->submit({op, offset + at, data + at, std::min(options_.chunk_bytes, rounded - at), t});
  return t;
}

void NvmeStore::chunk_done(const NvmeChunk& c, const std::string& error) {
  std::lock_guard lock(mutex_);
  Request& r = requests_.at(c.ticket);
  if (!error.empty() && r.error.empty()) r.error = error;
  if (--r.chunks_left == 0) ended_.notify_all();
}

void NvmeStore::wait(Ticket ticket) {
  std::unique_lock lock(mutex_);
  SA_CHECK(ticket > 0 && ticket < next_, "NVMe ticket {} was never issued", ticket);
  const auto it = requests_.find(ticket);
  if (it == requests_.end()) return;
  // A reference, not the iterator: a submit while we sleep may rehash.
  Request& r = it->second;
  ended_.wait(lock, [&] { return r.chunks_left == 0; });
  const std::string error = std::move(r.error);
  requests_.erase(ticket);
  lock.unlock();
  if (!error.empty()) fail(error);
}

void NvmeStore::drain() {
  std::unique_lock lock(mutex_);
  ended_.wait(lock, [&] {
    return std::all_of(requests_.begin(), requests_.end(),
                       [](const auto& r) { return r.second.chunks_left == 0; });
  });
  Ticket first = 0;
  std::string error;
  for (const auto& [t, r] : requests_)
    if (!r.error.empty() && (first == 0 || t < first)) {
      first = t;
      error = r.error;
    }
  requests_.clear();
  lock.unlock();
  if (!error.empty()) fail(error);
}

void NvmeStore::fail(const std::string& error) const {
  throw Error(fmt::format("{}: {}", path(), error));
}

}  // namespace sa::runtime
