#pragma once
// What moves an NvmeStore's bytes: an engine takes chunks (aligned pieces
// of the store's requests), keeps up to its queue depth of them in flight,
// and reports each one's end through a callback from its own thread.
// Two engines: io_uring (uring_engine.cpp, with liburing) and a pool of
// threads doing pread/pwrite (thread_engine.cpp, always built).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/nvme/aligned_buffer.h"

namespace sa::runtime {

enum class NvmeOp : uint8_t { kRead, kWrite };

struct NvmeChunk {
  NvmeOp op = NvmeOp::kRead;
  int64_t offset = 0;  // in the file; offset, data and bytes are aligned
  std::byte* data = nullptr;
  int64_t bytes = 0;
  uint64_t ticket = 0;  // the store's request it belongs to
};

// A chunk has ended: error is empty on success, else what went wrong
// (without the path: the store adds it). Called from an engine's thread,
// never while the engine's submit() runs on the caller's.
using NvmeDone = std::function<void(const NvmeChunk&, const std::string& error)>;

class NvmeEngine {
 public:
  virtual ~NvmeEngine() = default;  // finishes every chunk submitted first
  virtual void submit(const NvmeChunk& chunk) = 0;
  virtual const char* name() const = 0;
};

std::unique_ptr<NvmeEngine> make_thread_engine(int fd, int queue_depth, NvmeDone done);

// nullptr when io_uring is not compiled in (no liburing) or the kernel
// refuses it (containers often forbid io_uring_setup); *why says which.
std::unique_ptr<NvmeEngine> make_uring_engine(int fd, int queue_depth, NvmeDone done,
                                              std::string* why);

// What a chunk's failure reads as, after `done` of its bytes moved: err 0
// is a short transfer (a read at the end of the file).
std::string transfer_error(const NvmeChunk& c, int64_t done, int err);

// Whether a transfer that has moved `done` bytes (0 < done < c.bytes) must
// stop as short: O_DIRECT cannot go on from an unaligned position, which
// only the end of the file (or a size limit) leaves.
inline bool stops_short(int64_t done) {
  return done % kNvmeAlignment != 0;
}

}  // namespace sa::runtime
