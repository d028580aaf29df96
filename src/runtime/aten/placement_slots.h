#pragma once
// The bookkeeping of the ATen kernels' placing allocators (Note [ATen
// kernels], runtime/aten/aten_kernels.h), the same on the CPU and on CUDA and
// free of libtorch: while op o runs, an allocation of exactly the storage
// size of one of its outputs gets that output's pool object (once per
// output); every other allocation is scratch, outside the plan's arena,
// whose live bytes and peak are counted.
//
//   PlacementSlots slots;
//   slots.arm({{object, 4096}});          // before the op
//   void* p = slots.take(4096);           // == object: the kernel writes in place
//   void* q = slots.take(64);             // nullptr: allocate scratch, then
//   slots.note_scratch(q = malloc(64), 64);
//   slots.release(q);                     // true: q was scratch, free it
//   slots.disarm();                       // after the op
//
// Only the op's own allocations may take its slots: those of the thread
// that armed them (the one running the op) and of the kernel's worker
// threads (the caller says so: at::in_parallel_region() in the ATen
// plugin). Torch's allocator is one for the whole process, and another
// thread allocating a tensor of an output's size meanwhile (the Trainer's
// step values, computed while the step runs; a loader thread's batch) took
// the output's object and wrote its own values there: a loss or a clipping
// norm that came out wrong once in a few hundred runs (CI, 7 December 2026).

#include <cstdint>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace sa::runtime {

class PlacementSlots {
 public:
  struct Slot {
    void* ptr = nullptr;  // the output's pool object
    int64_t bytes = 0;    // its captured storage size
    bool taken = false;
  };

  void arm(std::vector<Slot> slots);
  void disarm();

  // The first untaken slot of exactly `bytes`, now taken; nullptr when none,
  // and for a thread that neither armed the slots nor works for the kernel
  // (kernel_worker: the caller knows it runs in the op's parallel region).
  void* take(int64_t bytes, bool kernel_worker = false);
  // A scratch allocation was made at p.
  void note_scratch(void* p, int64_t bytes);
  // p is given back: true when it was scratch (the caller frees it; it is
  // no longer counted). A slot's object is never freed: it is untaken, so a
  // later allocation of its size (a kernel's temporary died first) may have it
  // again. Unknown pointers are left alone (false).
  bool release(void* p);

  int64_t scratch_live_bytes() const;
  int64_t scratch_peak_bytes() const;

 private:
  mutable std::mutex mutex_;  // kernels may allocate from their worker threads
  std::vector<Slot> slots_;
  std::thread::id armed_by_;  // the thread running the op
  std::unordered_map<void*, int64_t> scratch_;
  int64_t live_ = 0;
  int64_t peak_ = 0;
};

}  // namespace sa::runtime
