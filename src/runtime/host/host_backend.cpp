#include "runtime/host/host_backend.h"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "runtime/clock.h"
#include "runtime/host/link_pacer.h"
#include "runtime/host/stream_worker.h"
#include "runtime/mpi/ranks.h"
#include "runtime/synthetic_collective.h"
#include "runtime/synthetic_op.h"
#include "util/error.h"

namespace sa::runtime {
namespace {

// Note [Stream clocks]
// --------------------
// A GPU starts a stream's next op or copy when the previous one on the
// stream has finished and the events it waits for have completed. A stream
// thread does not get there on time: it wakes up some microseconds after an
// event completes (milliseconds when the machine is loaded), its sleeps
// overshoot, and a synthetic kernel can take longer than its op (Note [Time
// scale] in runtime/executor.h). So each stream thread keeps the clock of the
// device it emulates instead of its own: an op or copy begins at the latest
// of the previous one's end on that clock (StreamClock::free), the completion
// times of the events the stream waited for (StreamClock::ready: when the
// other stream recorded them) and the time it was issued; an op ends its
// duration later, a copy when the link would have moved its bytes (Note
// [Paced copies]). The thread sleeps until then if it is done sooner, and
// goes on without sleeping if it is late, so a late op or copy delays the
// next ones on its stream only until they have made the time up, as a late
// chunk of a copy is made up by the next chunks. The events a stream records
// still complete when its thread gets to them, so no stream sees a result
// before it is really there, and every measured time is wall time. Other
// work on a stream (checksums, clearing slots, delays) restarts its clock
// from when it is done, and so does an event recorded while the stream is
// idle (the start of an iteration), so that the work after it is timed from
// its completion.
struct StreamClock {
  Clock::time_point free;   // when the device would have finished the stream's last work
  Clock::time_point ready;  // the latest completion of an event the stream waited for
  Clock::time_point begin(Clock::time_point issued) const {
    return std::max({free, ready, issued});
  }
};

// Tests only: with SA_TEST_HOST_ALLOC_LIMIT=BYTES in the environment, an
// allocation of more bytes fails as a failed malloc does: an arena that one
// rank of an MPI test cannot allocate (Note [Rank failures] in
// runtime/mpi/ranks.h), without allocating gigabytes on the others.
int64_t test_alloc_limit() {
  const char* s = std::getenv("SA_TEST_HOST_ALLOC_LIMIT");
  if (!s || !*s) return INT64_MAX;
  char* end = nullptr;
  const long long v = std::strtoll(s, &end, 10);
  return *end == '\0' && v >= 0 ? v : INT64_MAX;
}

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
    const auto issued = Clock::now();
    worker(s).submit([this, s, &ev, generation, issued] {
      // Issued to an idle stream: its clock restarts from here, so that no
      // work after it seems to take less than its time since this event.
      StreamClock& c = clock(s);
      if (c.free < issued) c.free = Clock::now();
      ev.complete(generation);
    });
  }

  void wait(Stream s, const Event& e) override {
    auto& ev = const_cast<HostEvent&>(host_event(e));
    const uint64_t generation = ev.recorded;
    if (generation == 0) return;
    worker(s).submit([this, s, &ev, generation] {
      ev.wait_for(generation);
      StreamClock& c = clock(s);
      c.ready = std::max(c.ready, ev.when());
    });
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
    const auto issued = Clock::now();
    worker(Stream::kH2D).submit([this, device, host, bytes, issued] {
      StreamClock& c = clock(Stream::kH2D);
      c.free = pacer_.copy(Direction::kH2D, device, host, bytes, c.begin(issued));
    });
  }
  void copy_d2h(std::byte* host, const std::byte* device, int64_t bytes) override {
    const auto issued = Clock::now();
    worker(Stream::kD2H).submit([this, device, host, bytes, issued] {
      StreamClock& c = clock(Stream::kD2H);
      c.free = pacer_.copy(Direction::kD2H, host, device, bytes, c.begin(issued));
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
      clock(Stream::kCompute).free = Clock::now();
    });
  }

  void launch_op(int32_t kernel, double duration_us) override {
    SA_CHECK(
        arena_ != nullptr && kernel >= 0 && kernel + 1 < static_cast<int>(table_.op_begin.size()),
        "launch_op({}) without a kernel table for it", kernel);
    const auto issued = Clock::now();
    worker(Stream::kCompute).submit([this, kernel, duration_us, issued] {
      const auto start = Clock::now();
      const int32_t op = table_.op_of(kernel);
      if (options_.kernel) {
        options_.kernel(op, table_.recomputes(kernel), table_.of(kernel), arena_, nullptr);
      } else if (const auto c = table_.collective_of(kernel); c != synthetic::Collective::kNone) {
        synthetic::BufferMem mem{arena_};
        synthetic::run_collective(c, table_.of(kernel), mem, slots_.data(), exchange_words);
      } else {
        synthetic::BufferMem mem{arena_};
        synthetic::run_op(op, table_.of(kernel), mem, slots_.data());
      }
      const auto end = Clock::now();
      StreamClock& c = clock(Stream::kCompute);
      if (duration_us <= 0) {
        c.free = end;
        return;
      }
      // Note [Stream clocks]: the op runs from when the device would start
      // it, not from when this thread got to it.
      const auto due = c.begin(issued) + from_us(duration_us);
      const double kernel_us = to_us(end - start);
      if (kernel_us > duration_us) {  // late (Note [Time scale] in runtime/executor.h)
        ++overrun_.kernels;
        overrun_.wall_us += kernel_us - duration_us;
      }
      if (end < due) sleep_until_precise(due);
      c.free = due;
    });
  }

  void set_time_scale(double scale) override { pacer_.set_time_scale(scale); }

  KernelOverrun take_kernel_overrun() override { return std::exchange(overrun_, {}); }

  void launch_checksum(const std::byte* device, int64_t bytes, int32_t slot) override {
    SA_CHECK(slot >= 0 && slot < static_cast<int>(slots_.size()), "checksum slot {} of {}", slot,
             slots_.size());
    worker(Stream::kCompute).submit([this, device, bytes, slot] {
      slots_[slot] = synthetic::checksum_buffer(device, bytes);
      clock(Stream::kCompute).free = Clock::now();
    });
  }

  std::vector<uint64_t> read_slots() override { return slots_; }

  // Starts when the device would (Note [Stream clocks]) and takes its wall
  // time: disk I/O is not paced or scaled.
  void host_task(Stream s, std::function<void()> f) override {
    const auto issued = Clock::now();
    worker(s).submit([this, s, f = std::move(f), issued] {
      StreamClock& c = clock(s);
      const auto start = c.begin(issued);
      if (Clock::now() < start) sleep_until_precise(start);
      f();
      c.free = Clock::now();
    });
  }

  void delay(Stream s, double us) override {
    worker(s).submit([this, s, us] {
      sleep_until_precise(Clock::now() + from_us(us));
      clock(s).free = Clock::now();
    });
  }

 private:
  // Touched only by stream s's thread.
  StreamClock& clock(Stream s) { return clocks_[static_cast<int>(s)]; }

  StreamWorker& worker(Stream s) {
    SA_CHECK(s != Stream::kNone, "work issued on no stream");
    return workers_[static_cast<int>(s)];
  }

  Buffer alloc(int64_t bytes, const char* what) {
    SA_CHECK(bytes >= 0, "negative allocation");
    // Exactly `bytes` (at least one, so that the pointer is distinct), page
    // aligned as cudaMallocHost's are: the NVMe staging in the host arena
    // needs O_DIRECT's alignment (Note [Host arena]).
    void* q = nullptr;
    if (bytes <= test_alloc_limit() &&
        posix_memalign(&q, 4096, static_cast<size_t>(std::max<int64_t>(bytes, 1))) != 0)
      q = nullptr;
    auto* p = static_cast<std::byte*>(q);
    if (!p)
      throw Error(fmt::format("cannot allocate the {} of {} bytes in host memory", what, bytes));
    if (options_.prefault) std::memset(p, 0, static_cast<size_t>(bytes));
    return Buffer(p, bytes, [](std::byte* q) { std::free(q); });
  }

  HostBackendOptions options_;
  LinkPacer pacer_;
  KernelTable table_;
  std::byte* arena_ = nullptr;
  std::vector<uint64_t> slots_;        // written by the compute thread only
  KernelOverrun overrun_;              // written by the compute thread only
  StreamClock clocks_[kNumStreams];    // Note [Stream clocks]
  StreamWorker workers_[kNumStreams];  // last: they stop before the rest goes
};

}  // namespace

std::unique_ptr<Backend> make_host_backend(const HostBackendOptions& options) {
  return std::make_unique<HostBackend>(options);
}

}  // namespace sa::runtime
