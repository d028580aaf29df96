#pragma once
// What the executor needs from a device: memory, three streams ordered by
// events, asynchronous copies and the synthetic kernels. Two backends
// implement it: the host backend (runtime/host/host_backend.h: the device is a
// separate arena in host memory, each stream a thread) and the CUDA backend
// (runtime/cuda/cuda_backend.h).
//
//   auto backend = sa::runtime::make_host_backend({});
//   Buffer arena = backend->alloc_device(budget);
//   auto done = backend->create_event();
//   backend->copy_h2d(arena.data(), host.data(), bytes);   // on the H2D stream
//   backend->record(Stream::kH2D, *done);
//   backend->wait(Stream::kCompute, *done);                // compute waits for the copy
//   backend->launch_op(op, duration_us);                   // on the compute stream
//   backend->synchronize();
//
// Streams run their work in issue order. Events behave as CUDA's do: wait()
// waits for the most recent record() issued before it (a never-recorded event
// is complete). All methods are called from one thread, the issuing thread;
// work runs asynchronously on the streams until synchronize().

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "plan/plan.h"
#include "runtime/synthetic.h"

namespace sa::runtime {

using sa::Stream;  // kCompute, kH2D, kD2H

// Memory allocated by a backend and given back to it on destruction.
class Buffer {
 public:
  using Deleter = std::function<void(std::byte*)>;
  Buffer() = default;
  Buffer(std::byte* data, int64_t bytes, Deleter free)
      : data_(data), bytes_(bytes), free_(std::move(free)) {}
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    Buffer(std::move(o)).swap(*this);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (data_ && free_) free_(data_);
  }
  std::byte* data() const { return data_; }
  int64_t bytes() const { return bytes_; }

 private:
  void swap(Buffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    std::swap(free_, o.free_);
  }
  std::byte* data_ = nullptr;
  int64_t bytes_ = 0;
  Deleter free_;
};

// A point in a stream's work (backend-specific).
class Event {
 public:
  virtual ~Event() = default;
};

// The synthetic kernels of a whole graph: the accesses of op o are
// accesses[op_begin[o], op_begin[o + 1]), with offsets into the device arena
// (runtime/kernel_table.h builds it from a Plan).
// The kernels a run launches: one per op (kernel o runs op o), then one per
// recompute step of the plan, which runs its op again with the step's objects
// (kernel_op says which op each runs; empty: kernel k runs op k).
struct KernelTable {
  std::vector<synthetic::KernelAccess> accesses;
  std::vector<int32_t> op_begin;  // per kernel, size num_kernels + 1
  std::vector<int32_t> kernel_op;
  int num_slots = 0;  // checksum slots the op kernels write
  // Per kernel: what a collective op's kernel does instead of run_op (Note
  // [Ranks] in runtime/mpi/ranks.h); kNone for every other op.
  std::vector<synthetic::Collective> collective;
  synthetic::Collective collective_of(int32_t kernel) const {
    return kernel < static_cast<int32_t>(collective.size()) ? collective[kernel]
                                                            : synthetic::Collective::kNone;
  }
  std::span<const synthetic::KernelAccess> of(int32_t kernel) const {
    return {accesses.data() + op_begin[kernel], accesses.data() + op_begin[kernel + 1]};
  }
  int32_t op_of(int32_t kernel) const {
    return kernel < static_cast<int32_t>(kernel_op.size()) ? kernel_op[kernel] : kernel;
  }
  // Whether a kernel is a recompute step's: those follow the ops' kernels,
  // so they run an op other than their own index.
  bool recomputes(int32_t kernel) const { return op_of(kernel) != kernel; }
};

// An op's real kernel in place of its synthetic one (the ATen kernels,
// runtime/aten/aten_run.h): launch_op(kernel) calls it with the kernel's op,
// whether it runs for a recompute step (a real kernel must then reproduce
// the op's first run, e.g. its random draws: Note [ATen recompute]), the
// kernel's accesses as the kernel table has them and the device arena. On
// the host backend it runs on
// the compute stream's thread and stream is null; on the CUDA backend it runs
// on the issuing thread and must queue its work on `stream`, the compute
// stream (a cudaStream_t), without waiting for it.
// A collective op's exchange of words between the ranks (runtime/mpi/ranks.h):
// the CUDA backend, in its own library, is given it.
using CollectiveHook = std::function<void(synthetic::Collective, std::span<uint64_t>)>;

using OpKernelHook = std::function<void(int32_t op, bool recompute,
                                        std::span<const synthetic::KernelAccess> accesses,
                                        std::byte* arena, void* stream)>;

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;         // "host", "cuda"
  virtual std::string device_name() const = 0;  // e.g. "NVIDIA H200"
  virtual int64_t device_memory_bytes() const = 0;

  // Device memory (the arena), and host memory that copies can use at full
  // speed (pinned on CUDA). Both are allocated once, before timing starts.
  virtual Buffer alloc_device(int64_t bytes) = 0;
  virtual Buffer alloc_host(int64_t bytes) = 0;

  virtual std::unique_ptr<Event> create_event() = 0;
  virtual void record(Stream s, Event& e) = 0;
  virtual void wait(Stream s, const Event& e) = 0;
  // Microseconds between two completed events (wall time).
  virtual double elapsed_us(const Event& from, const Event& to) = 0;
  // Waits until every stream is idle; reports (throws) any error a stream met.
  virtual void synchronize() = 0;

  // Copies on the H2D and D2H streams.
  virtual void copy_h2d(std::byte* device, const std::byte* host, int64_t bytes) = 0;
  virtual void copy_d2h(std::byte* host, const std::byte* device, int64_t bytes) = 0;

  // Synthetic kernels (Note [Synthetic kernels]) on the compute stream.
  // load_kernels once (streams idle), then: clear_slots zeroes the checksum
  // slots, launch_op runs op's kernel for at least duration_us,
  // launch_checksum puts the checksum of `bytes` bytes of device memory in a
  // slot; read_slots (streams idle) returns the slots.
  virtual void load_kernels(const KernelTable& table, std::byte* arena, int num_slots) = 0;
  virtual void clear_slots() = 0;
  virtual void launch_op(int32_t op, double duration_us) = 0;
  virtual void launch_checksum(const std::byte* device, int64_t bytes, int32_t slot) = 0;
  virtual std::vector<uint64_t> read_slots() = 0;

  // Keeps stream s busy for `us` microseconds (tests, measurements).
  virtual void delay(Stream s, double us) = 0;

  // Runs f on the host in stream s's order: after the stream's work before
  // it, before its work after (the NVMe tier's reads and writes, Note [Host
  // tier] in plan/host_tier.h). An exception f throws is the stream's error
  // (synchronize throws it).
  virtual void host_task(Stream s, std::function<void()> f) = 0;

  // From now on, copies take `scale` x the link's time, or as long as they
  // take with 0 (streams idle; Note [Automatic time scale] in
  // runtime/executor.h). Only the host backend paces copies; op durations
  // come scaled with launch_op.
  virtual void set_time_scale(double /*scale*/) {}

  // The op kernels that ran longer than the duration launch_op gave them
  // since the last call, and by how much in all (wall time), then starts
  // counting again (streams idle). Only the host backend counts: its kernels
  // run on a CPU thread and can be slower than the op they stand for; a CUDA
  // kernel's duration is a minimum too, but it is not measured.
  struct KernelOverrun {
    int kernels = 0;
    double wall_us = 0;
  };
  virtual KernelOverrun take_kernel_overrun() { return {}; }
};

}  // namespace sa::runtime
