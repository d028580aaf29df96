#include "runtime/host_backend.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "runtime/clock.h"
#include "runtime/link_pacer.h"
#include "runtime/stream_worker.h"
#include "runtime/synthetic_op.h"
#include "util/error.h"

namespace sa::runtime {
namespace {

// Note [Compute stream clock]
// ---------------------------
// A GPU starts an op when the previous op on its stream has finished and the
// events it waits for have completed. The compute thread does not get there
// on time: it wakes up some microseconds after an event completes, its
// sleeps overshoot, and a synthetic kernel can take longer than its op
// (Note [Time scale] in runtime/executor.h). So the thread keeps the device's
// clock instead of its own: an op begins at the latest of the previous op's
// end on that clock (compute_free_), the completion times of the events the
// stream waited for (compute_ready_, the time the other stream recorded
// them) and the time it was issued, and ends op time later; the thread
// sleeps until then if its kernel is done sooner. A late op thus delays the
// next ones only until they have made the time up, as a late copy chunk does
// (Note [Paced copies]). The events it records still complete when the
// thread gets to them, so no other stream sees an op's results early, and
// every measured time is wall time. Other work on the compute stream
// (checksums, clearing slots, delays) restarts the clock from when it ends,
// and so does an event recorded while the stream is idle (the start of an
// iteration), so that the ops after it are timed from its completion.

// Events as CUDA has them: record() targets the next generation, wait() the
// latest generation recorded so far. `recorded` belongs to the issuing
// thread; the rest is shared with the stream threads.
class HostEvent final : public Event {
 public:
  uint64_t recorded = 0;

  void complete(uint64_t generation) {
    {
      std::lock_guard lock(mutex_);
      completed_ = std::max(completed_, generation);
      when_ = Clock::now();
    }
    cv_.notify_all();
  }
  void wait_for(uint64_t generation) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return completed_ >= generation; });
  }
  Clock::time_point when() const {
    std::lock_guard lock(mutex_);
    SA_CHECK(completed_ > 0, "elapsed time of an event that never completed");
    return when_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t completed_ = 0;
  Clock::time_point when_;
};

const HostEvent& host_event(const Event& e) {
  return static_cast<const HostEvent&>(e);
}

class HostBackend final : public Backend {
 public:
  explicit HostBackend(const HostBackendOptions& o)
      : options_(o), pacer_(o.link, o.time_scale, o.pace) {}
  ~HostBackend() override {
    // The workers join in their destructors; make sure nothing still runs
    // against buffers owned elsewhere.
    for (auto& w : workers_)
      try {
        w.drain();
      } catch (...) {
      }
  }

  std::string name() const override { return "host"; }
  std::string device_name() const override { return "host memory arena"; }
  int64_t device_memory_bytes() const override { return options_.link.memory_bytes; }

  Buffer alloc_device(int64_t bytes) override { return alloc(bytes, "device arena"); }
  Buffer alloc_host(int64_t bytes) override { return alloc(bytes, "host buffer"); }

  std::unique_ptr<Event> create_event() override { return std::make_unique<HostEvent>(); }

  void record(Stream s, Event& e) override {
    auto& ev = static_cast<HostEvent&>(e);
    const uint64_t generation = ++ev.recorded;
    if (s == Stream::kCompute) {
      const auto issued = Clock::now();
      worker(s).submit([this, &ev, generation, issued] {
        // Issued to an idle stream: the clock restarts from here, so that no
        // op after it seems to take less than its time since this event.
        if (compute_free_ < issued) compute_free_ = Clock::now();
        ev.complete(generation);
      });
      return;
    }
    worker(s).submit([&ev, generation] { ev.complete(generation); });
  }

  void wait(Stream s, const Event& e) override {
    auto& ev = const_cast<HostEvent&>(host_event(e));
    const uint64_t generation = ev.recorded;
    if (generation == 0) return;
    if (s == Stream::kCompute) {
      worker(s).submit([this, &ev, generation] {
        ev.wait_for(generation);
        compute_ready_ = std::max(compute_ready_, ev.when());
      });
      return;
    }
    worker(s).submit([&ev, generation] { ev.wait_for(generation); });
  }

  double elapsed_us(const Event& from, const Event& to) override {
    return to_us(host_event(to).when() - host_event(from).when());
  }

  void synchronize() override {
    std::exception_ptr first;
    for (auto& w : workers_) {
      try {
        w.drain();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
  }

  void copy_h2d(std::byte* device, const std::byte* host, int64_t bytes) override {
    worker(Stream::kH2D).submit([this, device, host, bytes] {
      pacer_.copy(Direction::kH2D, device, host, bytes);
    });
  }
  void copy_d2h(std::byte* host, const std::byte* device, int64_t bytes) override {
    worker(Stream::kD2H).submit([this, device, host, bytes] {
      pacer_.copy(Direction::kD2H, host, device, bytes);
    });
  }

  void load_kernels(const KernelTable& table, std::byte* arena, int num_slots) override {
    SA_CHECK(num_slots >= table.num_slots, "{} slots for a table that writes {}", num_slots,
             table.num_slots);
    table_ = table;
    arena_ = arena;
    slots_.assign(num_slots, 0);
  }

  void clear_slots() override {
    worker(Stream::kCompute).submit([this] {
      std::fill(slots_.begin(), slots_.end(), 0);
      compute_free_ = Clock::now();
    });
  }

  void launch_op(int32_t op, double duration_us) override {
    SA_CHECK(arena_ != nullptr && op >= 0 && op + 1 < static_cast<int>(table_.op_begin.size()),
             "launch_op({}) without a kernel table for it", op);
    const auto issued = Clock::now();
    worker(Stream::kCompute).submit([this, op, duration_us, issued] {
      const auto start = Clock::now();
      if (options_.kernel) {
        options_.kernel(op, table_.of(op), arena_);
      } else {
        synthetic::BufferMem mem{arena_};
        synthetic::run_op(op, table_.of(op), mem, slots_.data());
      }
      const auto end = Clock::now();
      if (duration_us <= 0) {
        compute_free_ = end;
        return;
      }
      // Note [Compute stream clock]: the op runs from when the device would
      // start it, not from when this thread got to it.
      const auto begin = std::max({compute_free_, compute_ready_, issued});
      const auto due = begin + from_us(duration_us);
      const double kernel_us = to_us(end - start);
      if (kernel_us > duration_us) {  // late (Note [Time scale] in runtime/executor.h)
        ++overrun_.kernels;
        overrun_.wall_us += kernel_us - duration_us;
      }
      if (end < due) sleep_until_precise(due);
      compute_free_ = due;
    });
  }

  KernelOverrun take_kernel_overrun() override { return std::exchange(overrun_, {}); }

  void launch_checksum(const std::byte* device, int64_t bytes, int32_t slot) override {
    SA_CHECK(slot >= 0 && slot < static_cast<int>(slots_.size()), "checksum slot {} of {}", slot,
             slots_.size());
    worker(Stream::kCompute).submit([this, device, bytes, slot] {
      slots_[slot] = synthetic::checksum_buffer(device, bytes);
      compute_free_ = Clock::now();
    });
  }

  std::vector<uint64_t> read_slots() override { return slots_; }

  void delay(Stream s, double us) override {
    worker(s).submit([this, s, us] {
      sleep_until_precise(Clock::now() + from_us(us));
      if (s == Stream::kCompute) compute_free_ = Clock::now();
    });
  }

 private:
  StreamWorker& worker(Stream s) {
    SA_CHECK(s != Stream::kNone, "work issued on no stream");
    return workers_[static_cast<int>(s)];
  }

  Buffer alloc(int64_t bytes, const char* what) {
    SA_CHECK(bytes >= 0, "negative allocation");
    // Exactly `bytes` (at least one, so that the pointer is distinct).
    auto* p =
        static_cast<std::byte*>(std::malloc(static_cast<size_t>(std::max<int64_t>(bytes, 1))));
    if (!p)
      throw Error(fmt::format("cannot allocate the {} of {} bytes in host memory", what, bytes));
    if (options_.prefault) std::memset(p, 0, static_cast<size_t>(bytes));
    return Buffer(p, bytes, [](std::byte* q) { std::free(q); });
  }

  HostBackendOptions options_;
  LinkPacer pacer_;
  KernelTable table_;
  std::byte* arena_ = nullptr;
  std::vector<uint64_t> slots_;  // written by the compute thread only
  KernelOverrun overrun_;        // written by the compute thread only
  // The compute stream's clock (Note [Compute stream clock]); compute thread only.
  Clock::time_point compute_free_;     // when the device would have finished its last op
  Clock::time_point compute_ready_;    // the latest completion of an event it waited for
  StreamWorker workers_[kNumStreams];  // last: they stop before the rest goes
};

}  // namespace

std::unique_ptr<Backend> make_host_backend(const HostBackendOptions& options) {
  return std::make_unique<HostBackend>(options);
}

}  // namespace sa::runtime
