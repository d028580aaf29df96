// The threads engine: queue_depth threads, each doing one chunk at a time
// with pread/pwrite, so that up to queue_depth chunks are in flight.

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "runtime/nvme/io_engine.h"
#include "runtime/nvme/nvme_file.h"

namespace sa::runtime {

std::string transfer_error(const NvmeChunk& c, int64_t done, int err) {
  const char* what = c.op == NvmeOp::kRead ? "read" : "write";
  if (err == 0)
    return fmt::format("short {} at offset {}: {} of {} bytes{}", what, c.offset, done, c.bytes,
                       c.op == NvmeOp::kRead ? " (the file ends before the data: truncated?)" : "");
  if (err == ENOSPC || err == EFBIG || err == EDQUOT)
    return fmt::format("disk full: {} at offset {} failed after {} of {} bytes ({})", what,
                       c.offset, done, c.bytes, errno_text(err));
  return fmt::format("I/O error: {} at offset {} failed after {} of {} bytes ({})", what, c.offset,
                     done, c.bytes, errno_text(err));
}

namespace {

// Moves the whole chunk, looping on partial transfers; "" on success.
std::string transfer_chunk(int fd, const NvmeChunk& c) {
  int64_t done = 0;
  while (done < c.bytes) {
    const auto n = c.op == NvmeOp::kRead
                       ? ::pread(fd, c.data + done, c.bytes - done, c.offset + done)
                       : ::pwrite(fd, c.data + done, c.bytes - done, c.offset + done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return transfer_error(c, done, errno);
    }
    if (n == 0) return transfer_error(c, done, 0);
    done += n;
    if (done < c.bytes && stops_short(done)) return transfer_error(c, done, 0);
  }
  return {};
}

class ThreadEngine final : public NvmeEngine {
 public:
  ThreadEngine(int fd, int queue_depth, NvmeDone done) : fd_(fd), done_(std::move(done)) {
    for (int i = 0; i < queue_depth; ++i)
      threads_.emplace_back([this] { loop(); });
  }
  ~ThreadEngine() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_)
      t.join();
  }
  void submit(const NvmeChunk& chunk) override {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(chunk);
    }
    cv_.notify_one();
  }
  const char* name() const override { return "threads"; }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    while (true) {
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to do
      const NvmeChunk c = queue_.front();
      queue_.pop_front();
      lock.unlock();
      const std::string error = transfer_chunk(fd_, c);
      done_(c, error);
      lock.lock();
    }
  }

  int fd_;
  NvmeDone done_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<NvmeChunk> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;  // last: started once the rest exists
};

}  // namespace

std::unique_ptr<NvmeEngine> make_thread_engine(int fd, int queue_depth, NvmeDone done) {
  return std::make_unique<ThreadEngine>(fd, queue_depth, std::move(done));
}

}  // namespace sa::runtime
