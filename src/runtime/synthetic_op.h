#pragma once
// One synthetic op, run sequentially on the host (Note [Synthetic kernels] in
// runtime/synthetic.h). The memory is a template parameter so that the host
// backend (words in the arena at the samples' byte offsets) and the compact
// reference (one word per sample) run the very same code:
//
//   struct Mem {
//     uint64_t load(const KernelAccess& a, int64_t i);         // sample i of a
//     void store(const KernelAccess& a, int64_t i, uint64_t);  // already masked
//   };
//
// The CUDA backend computes the same function in parallel
// (runtime/cuda_kernels.cu); the digest and checksums are sums mod 2^64, so
// the order of the terms does not matter.

#include <cstdint>
#include <cstring>
#include <span>

#include "runtime/synthetic.h"

namespace sa::synthetic {

template <class Mem>
void run_op(int32_t op, std::span<const KernelAccess> accesses, Mem& mem, uint64_t* slots) {
  uint64_t digest = op_seed(op);
  for (const KernelAccess& a : accesses) {
    if (a.role != Role::kInput && a.role != Role::kUpdate) continue;
    const int64_t n = num_samples(a.bytes);
    for (int64_t i = 0; i < n; ++i)
      digest += read_term(mem.load(a, i), a.index, i);
  }
  for (const KernelAccess& a : accesses) {
    if (a.role == Role::kInput) continue;
    const int64_t n = num_samples(a.bytes);
    uint64_t sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      int len = 0;
      sample_offset(a.bytes, i, &len);
      uint64_t v = 0;
      switch (a.role) {
        case Role::kOutput:
          v = output_word(digest, a.index, i);
          break;
        case Role::kUpdate:
          v = update_word(mem.load(a, i), digest, a.update_index, i);
          break;
        case Role::kWorkspace:
          v = workspace_word(digest, i);
          break;
        case Role::kInput:
          break;
      }
      mem.store(a, i, mask_word(v, len));
    }
    if (a.slot < 0) continue;
    for (int64_t i = 0; i < n; ++i)
      sum += checksum_term(mem.load(a, i), i);
    slots[a.slot] = sum;
  }
}

// Words at the samples' byte offsets of real buffers: `base + a.offset`.
struct BufferMem {
  std::byte* base;
  uint64_t load(const KernelAccess& a, int64_t i) const {
    int len = 0;
    const int64_t off = sample_offset(a.bytes, i, &len);
    uint64_t v = 0;
    std::memcpy(&v, base + a.offset + off, static_cast<size_t>(len));
    return v;
  }
  void store(const KernelAccess& a, int64_t i, uint64_t v) const {
    int len = 0;
    const int64_t off = sample_offset(a.bytes, i, &len);
    std::memcpy(base + a.offset + off, &v, static_cast<size_t>(len));
  }
};

// The checksum of the samples of a tensor of `bytes` bytes at p.
inline uint64_t checksum_buffer(const std::byte* p, int64_t bytes) {
  const int64_t n = num_samples(bytes);
  uint64_t sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    int len = 0;
    const int64_t off = sample_offset(bytes, i, &len);
    uint64_t v = 0;
    std::memcpy(&v, p + off, static_cast<size_t>(len));
    sum += checksum_term(v, i);
  }
  return sum;
}

// Writes the initial value of tensor t (init_word) into the samples of a
// buffer of `bytes` bytes at p.
inline void init_buffer(std::byte* p, int64_t bytes, int32_t t) {
  const int64_t n = num_samples(bytes);
  for (int64_t i = 0; i < n; ++i) {
    int len = 0;
    const int64_t off = sample_offset(bytes, i, &len);
    const uint64_t v = mask_word(init_word(t, i), len);
    std::memcpy(p + off, &v, static_cast<size_t>(len));
  }
}

}  // namespace sa::synthetic
