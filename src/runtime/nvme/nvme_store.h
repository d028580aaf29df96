#pragma once
// The runtime's third tier (issue 30): tensors beyond the host-memory
// budget live in a file on an SSD (or on a raw block device), each at a
// byte offset the plan gives.
//
// Note [NVMe store]
// -----------------
// Transfers use O_DIRECT: they bypass the page cache, which would otherwise
// hold the very bytes the host budget has no room for, and make the SSD's
// own bandwidth what the planner sees. O_DIRECT needs the file offset, the
// length and the host buffer's address aligned (kAlignment, 4096, covers
// the block sizes of every SSD and the page size). So:
//   - offsets must be multiples of kAlignment (an sa::Error otherwise);
//   - host buffers must be aligned (AlignedBuffer) and hold the length
//     rounded up to kAlignment (nvme_round_up): the store reads and writes
//     the rounded length, so a read of 100 bytes fills 4096 of dst;
//   - offset + rounded length must lie within the capacity.
// A request is split into chunks (options.chunk_bytes) so that a large one
// keeps several in flight; partial transfers are continued, and a read
// that meets the end of the file is an error ("short read"), as is every
// other failure: nothing is silently truncated. Requests run in any order;
// a caller that reads what it wrote waits for the write first.
// Two engines move the bytes (runtime/nvme/io_engine.h): io_uring when the
// build has liburing and the kernel allows it (containers often forbid it),
// else queue_depth threads doing pread/pwrite.

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "runtime/nvme/aligned_buffer.h"
#include "runtime/nvme/io_engine.h"
#include "runtime/nvme/nvme_file.h"

namespace sa::runtime {

enum class NvmeBackend : uint8_t { kAuto, kIoUring, kThreads };

// "auto", "io_uring", "threads"; nullopt for anything else.
std::optional<NvmeBackend> parse_nvme_backend(std::string_view name);

struct NvmeOptions {
  int queue_depth = 32;  // chunks in flight, 1 to 4096
  NvmeBackend backend = NvmeBackend::kAuto;
  int64_t chunk_bytes = int64_t{1} << 20;  // a multiple of kAlignment
  bool must_create = false;                // refuse a path that exists
};

class NvmeStore {
 public:
  using Ticket = uint64_t;
  static constexpr int64_t kAlignment = kNvmeAlignment;

  // Opens or creates the file at path and reserves capacity_bytes
  // (NvmeFile); throws sa::Error naming the path. backend kIoUring throws
  // when io_uring is unavailable; kAuto falls back to threads.
  NvmeStore(const std::string& path, int64_t capacity_bytes, NvmeOptions options = {});
  // Waits for every request (their errors are dropped), closes the file and
  // removes it if this store created it.
  ~NvmeStore();
  NvmeStore(const NvmeStore&) = delete;
  NvmeStore& operator=(const NvmeStore&) = delete;

  // Start a transfer of nvme_round_up(bytes) bytes (Note [NVMe store]); the
  // buffer must stay valid until the ticket is waited for. Throws sa::Error
  // for an unaligned offset or buffer or a request past the capacity.
  Ticket submit_write(int64_t offset, const void* src, int64_t bytes);
  Ticket submit_read(int64_t offset, void* dst, int64_t bytes);
  // Blocks until the request has ended; throws its error (sa::Error naming
  // the path, the offset and the cause). A ticket waited for already, or
  // ended by drain(), returns at once.
  void wait(Ticket ticket);
  // Waits for every request; throws the first error among those not
  // waited for (their errors are then spent).
  void drain();

  const char* backend_name() const { return engine_->name(); }
  const std::string& path() const { return file_.path(); }
  int64_t capacity() const { return file_.capacity(); }
  int queue_depth() const { return options_.queue_depth; }

  // Whether the io_uring engine can run here: built with liburing, and the
  // kernel lets this process set up a ring; *why says why not.
  static bool io_uring_available(std::string* why = nullptr);

 private:
  struct Request {
    int64_t chunks_left = 0;
    std::string error;  // the first chunk's failure
  };
  Ticket submit(NvmeOp op, int64_t offset, std::byte* data, int64_t bytes);
  void chunk_done(const NvmeChunk& c, const std::string& error);
  [[noreturn]] void fail(const std::string& error) const;

  NvmeOptions options_;
  NvmeFile file_;
  std::mutex mutex_;
  std::condition_variable ended_;
  std::unordered_map<Ticket, Request> requests_;  // not yet waited for
  Ticket next_ = 1;
  std::unique_ptr<NvmeEngine> engine_;  // last: destroyed first, ending its chunks
};

}  // namespace sa::runtime
