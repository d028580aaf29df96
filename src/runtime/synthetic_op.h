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
// (runtime/cuda/cuda_kernels.cu); the digest and checksums are sums mod 2^64, so
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
    // The checksum of the words as written: samples never overlap, so they
    // are what reading them back would give (the CUDA kernel reads them back;
    // here that would be a second cache miss per sample).
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
        case Role::kStateUpdate:
          v = update_word(mem.load(a, i), digest, a.update_index, i);
          break;
        case Role::kWorkspace:
          v = workspace_word(digest, i);
          break;
        case Role::kInput:
          break;
      }
      v = mask_word(v, len);
      mem.store(a, i, v);
      sum += checksum_term(v, i);
    }
    if (a.slot >= 0) slots[a.slot] = sum;
  }
}

// A sample's word at p: whole words take a fixed-size memcpy (one move), only
// a partial word pays for a library call.
inline uint64_t read_word(const std::byte* p, int len) {
  uint64_t v = 0;
  if (len == 8)
    std::memcpy(&v, p, 8);
  else
    std::memcpy(&v, p, static_cast<size_t>(len));
  return v;
}
inline void write_word(std::byte* p, uint64_t v, int len) {
  if (len == 8)
    std::memcpy(p, &v, 8);
  else
    std::memcpy(p, &v, static_cast<size_t>(len));
}

// Words at the samples' byte offsets of real buffers: `base + a.offset`.
struct BufferMem {
  std::byte* base;
  uint64_t load(const KernelAccess& a, int64_t i) const {
    int len = 0;
    const int64_t off = sample_offset(a.bytes, i, &len);
    return read_word(base + a.offset + off, len);
  }
  void store(const KernelAccess& a, int64_t i, uint64_t v) const {
    int len = 0;
    const int64_t off = sample_offset(a.bytes, i, &len);
    write_word(base + a.offset + off, v, len);
  }
};

// The checksum of the samples of a tensor of `bytes` bytes at p.
inline uint64_t checksum_buffer(const std::byte* p, int64_t bytes) {
  const int64_t n = num_samples(bytes);
  uint64_t sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    int len = 0;
    const int64_t off = sample_offset(bytes, i, &len);
    sum += checksum_term(read_word(p + off, len), i);
  }
  return sum;
}

// Writes the initial value of tensor t (init_word, plus salt: a rank's
// inputs, runtime/mpi/ranks.h) into the samples of a buffer of `bytes` bytes at p.
inline void init_buffer(std::byte* p, int64_t bytes, int32_t t, uint64_t salt = 0) {
  const int64_t n = num_samples(bytes);
  for (int64_t i = 0; i < n; ++i) {
    int len = 0;
    const int64_t off = sample_offset(bytes, i, &len);
    write_word(p + off, mask_word(init_word(t, i) + salt, len), len);
  }
}

}  // namespace sa::synthetic
