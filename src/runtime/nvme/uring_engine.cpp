// The io_uring engine: one ring of queue_depth entries. Callers submit
// under a lock; one reaper thread waits for completions, resubmits the rest
// of a partial transfer and refills the ring from the backlog. The
// submission and completion queues are separate rings, so submitting under
// the lock while the reaper waits without it is safe (liburing's wait with
// nothing to submit does not touch the submission queue).

#include <liburing.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "runtime/nvme/io_engine.h"
#include "runtime/nvme/nvme_file.h"
#include "util/error.h"

namespace sa::runtime {
namespace {

// A chunk in the ring or the backlog, with how much of it has moved.
struct UringSlot {
  NvmeChunk chunk;
  int64_t done = 0;
};

constexpr uint64_t kUringStopTag = 0;  // the destructor's NOP; slots are pointers

class UringEngine final : public NvmeEngine {
 public:
  UringEngine(int fd, int queue_depth, NvmeDone done)
      : fd_(fd), depth_(queue_depth), done_(std::move(done)) {}
  // Sets up the ring in place (liburing's ring is not meant to be copied)
  // and starts the reaper; a negative errno when the kernel refuses.
  int init() {
    const int r = io_uring_queue_init(static_cast<unsigned>(depth_), &ring_, 0);
    if (r < 0) return r;
    ready_ = true;
    reaper_ = std::thread([this] { reap(); });
    return 0;
  }
  ~UringEngine() override {
    if (!ready_) return;
    {
      std::unique_lock lock(mutex_);
      idle_.wait(lock, [this] { return in_flight_ == 0 && backlog_.empty(); });
      // A NOP would overtake requests still in flight: sent only when idle.
      io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
      SA_CHECK(sqe != nullptr, "io_uring: no free entry in an idle ring");
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data64(sqe, kUringStopTag);
      submit_locked();
    }
    reaper_.join();
    io_uring_queue_exit(&ring_);
  }
  void submit(const NvmeChunk& chunk) override {
    std::lock_guard lock(mutex_);
    backlog_.push_back(new UringSlot{chunk, 0});
    pump_locked();
  }
  const char* name() const override { return "io_uring"; }

 private:
  // Moves backlog into the ring up to the queue depth.
  void pump_locked() {
    bool queued = false;
    while (in_flight_ < depth_ && !backlog_.empty()) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
      if (!sqe) break;  // the ring has fewer entries than asked for
      UringSlot* s = backlog_.front();
      backlog_.pop_front();
      const NvmeChunk& c = s->chunk;
      const auto left = static_cast<unsigned>(c.bytes - s->done);
      if (c.op == NvmeOp::kRead)
        io_uring_prep_read(sqe, fd_, c.data + s->done, left, c.offset + s->done);
      else
        io_uring_prep_write(sqe, fd_, c.data + s->done, left, c.offset + s->done);
      io_uring_sqe_set_data(sqe, s);
      ++in_flight_;
      queued = true;
    }
    if (queued) submit_locked();
  }
  void submit_locked() {
    int r;
    do {
      r = io_uring_submit(&ring_);
    } while (r == -EINTR);
    // -EAGAIN, -EBUSY: the entries stay queued; the next completion's
    // pump submits them again (in_flight_ > 0 means one will come).
    SA_CHECK(r >= 0 || r == -EAGAIN || r == -EBUSY, "io_uring_submit: {}", errno_text(-r));
  }

  void reap() {
    while (true) {
      io_uring_cqe* cqe = nullptr;
      const int r = io_uring_wait_cqe(&ring_, &cqe);
      if (r == -EINTR || r == -EAGAIN) continue;
      SA_CHECK(r == 0, "io_uring_wait_cqe: {}", errno_text(-r));
      const uint64_t tag = io_uring_cqe_get_data64(cqe);
      const int res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      if (tag == kUringStopTag) return;
      finish(reinterpret_cast<UringSlot*>(tag), res);
    }
  }

  // One completion of slot s: done, failed, or partial (its rest goes to
  // the front of the backlog, ahead of chunks that have not started).
  void finish(UringSlot* s, int res) {
    std::string error;
    bool ended = true;
    NvmeChunk c;
    {
      // The slot is read under the lock its submitter wrote it under: the
      // kernel orders the two through the ring, but ThreadSanitizer cannot
      // see that ordering (CI's TSan build reported the slot as a race).
      std::lock_guard lock(mutex_);
      c = s->chunk;
      if (res < 0) {
        error = transfer_error(c, s->done, -res);
      } else if (res == 0) {
        error = transfer_error(c, s->done, 0);
      } else {
        s->done += res;
        if (s->done < c.bytes && stops_short(s->done))
          error = transfer_error(c, s->done, 0);
        else
          ended = s->done == c.bytes;
      }
      --in_flight_;
      if (!ended) backlog_.push_front(s);
      pump_locked();
      if (in_flight_ == 0 && backlog_.empty()) idle_.notify_all();
    }
    if (ended) {
      delete s;
      done_(c, error);
    }
  }

  int fd_;
  int depth_;
  NvmeDone done_;
  io_uring ring_{};
  bool ready_ = false;
  std::mutex mutex_;
  std::condition_variable idle_;
  std::deque<UringSlot*> backlog_;
  int in_flight_ = 0;
  std::thread reaper_;
};

}  // namespace

std::unique_ptr<NvmeEngine> make_uring_engine(int fd, int queue_depth, NvmeDone done,
                                              std::string* why) {
  auto engine = std::make_unique<UringEngine>(fd, queue_depth, std::move(done));
  if (const int r = engine->init(); r < 0) {
    if (why) *why = fmt::format("io_uring_queue_init failed: {}", errno_text(-r));
    return nullptr;
  }
  return engine;
}

}  // namespace sa::runtime
