#pragma once
// Synthetic kernels: what every op computes when a Plan is run, on every
// backend. Compiled by the host compiler and by nvcc (SA_HD), so that the host
// backend, the CUDA backend and the reference run compute bit-identical words.
//
// Note [Synthetic kernels]
// ------------------------
// A tensor of B bytes is checked through a fixed sample of 64-bit words (its
// "samples"), enough to catch a stale, misplaced or half-copied buffer:
//   - B < 8:          one partial word of B bytes at offset 0;
//   - B/8 <= 64:      every whole word;
//   - larger:         two words of every whole 4 KiB page of the tensor, one in
//                     each half (at a position hashed from the page number,
//                     never the page's first word), then the first word and
//                     the last whole word.
// Samples never overlap, so a thread (or a CUDA thread) owns each one.
//
// An op o reads every sample of its inputs and updates (read index r counts
// them in that order) into one digest,
//     digest = op_seed(o) + sum over (r, i) of read_term(word, r, i)   (mod 2^64)
// a sum, so that parallel partial sums give the same digest as a loop. Then it
//   - writes output j's sample i:     output_word(digest, j, i)
//   - rewrites update j's sample i:   update_word(old, digest, j, i)
//   - writes its workspace sample i:  workspace_word(digest, i)
// and records, for each output and update, the checksum of the samples it
// just wrote, checksum = sum over i of checksum_term(word, i). A buffer that
// holds the wrong bytes changes the digest of every op that reads it, hence
// the outputs and checksums of those ops and of everything downstream.
// Persistent tensors and inputs start with init_word(tensor, i).
//
// Values are masked to the bytes a partial sample holds (mask_word), so that
// a compact reference (one word per sample, runtime/reference.h) agrees with
// a run on real buffers.

#include <cstdint>

#if defined(__CUDACC__)
#define SA_HD __host__ __device__ __forceinline__
#else
#define SA_HD inline
#endif

namespace sa::synthetic {

inline constexpr int64_t kPageBytes = 4096;  // 4 KiB
inline constexpr int64_t kPageWords = kPageBytes / 8;
inline constexpr int64_t kHalfPageWords = kPageWords / 2;
inline constexpr int64_t kDenseWords = 64;  // tensors up to 512 B: every word

// splitmix64's finalizer: a bijective 64-bit mixer.
SA_HD uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Number of samples of a tensor of `bytes` bytes.
SA_HD int64_t num_samples(int64_t bytes) {
  if (bytes <= 0) return 0;
  const int64_t words = bytes / 8;
  if (words == 0) return 1;
  if (words <= kDenseWords) return words;
  return 2 * (words / kPageWords) + 2;
}

// Byte offset of sample i of a tensor of `bytes` bytes; *len is 8, or the
// partial word's length.
SA_HD int64_t sample_offset(int64_t bytes, int64_t i, int* len) {
  const int64_t words = bytes / 8;
  if (words == 0) {
    *len = static_cast<int>(bytes);
    return 0;
  }
  *len = 8;
  if (words <= kDenseWords) return 8 * i;
  const int64_t pages = words / kPageWords;
  if (i == 2 * pages) return 0;
  if (i == 2 * pages + 1) return 8 * (words - 1);
  const int64_t page = i >> 1, half = i & 1;
  // In [1, kHalfPageWords): never word 0 of the page, so never the first
  // word, and at most page*512 + 510 < words - 1, so never the last.
  const int64_t in_half =
      1 + static_cast<int64_t>(mix(0x9e3779b97f4a7c15ULL * (2 * page + half + 1)) %
                               (kHalfPageWords - 1));
  return 8 * (page * kPageWords + half * kHalfPageWords + in_half);
}

SA_HD uint64_t mask_word(uint64_t v, int len) {
  return len >= 8 ? v : (v & ((uint64_t{1} << (8 * len)) - 1));
}

SA_HD uint64_t op_seed(int32_t op) {
  return mix(0x6a09e667f3bcc908ULL ^ static_cast<uint64_t>(op));
}

SA_HD uint64_t read_term(uint64_t word, int32_t r, int64_t i) {
  return mix(word + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(i + 1) +
             0xc2b2ae3d27d4eb4fULL * static_cast<uint64_t>(r + 1));
}

SA_HD uint64_t output_word(uint64_t digest, int32_t j, int64_t i) {
  return mix(digest ^ mix((static_cast<uint64_t>(j) << 48) ^ static_cast<uint64_t>(i) ^
                          0x3c6ef372fe94f82bULL));
}

SA_HD uint64_t update_word(uint64_t old, uint64_t digest, int32_t j, int64_t i) {
  return mix(old + digest + 0xa54ff53a5f1d36f1ULL * static_cast<uint64_t>(j + 1) +
             0x510e527fade682d1ULL * static_cast<uint64_t>(i + 1));
}

SA_HD uint64_t workspace_word(uint64_t digest, int64_t i) {
  return mix(digest ^ (0x9b05688c2b3e6c1fULL + static_cast<uint64_t>(i)));
}

SA_HD uint64_t checksum_term(uint64_t word, int64_t i) {
  return mix(word ^ (0x1f83d9abfb41bd6bULL * static_cast<uint64_t>(i + 1)));
}

SA_HD uint64_t init_word(int32_t tensor, int64_t i) {
  return mix(0x5be0cd19137e2179ULL + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(tensor) +
             static_cast<uint64_t>(i) * 0xd1b54a32d192ed03ULL);
}

// What a collective op's kernel does with its updates (runtime/mpi/ranks.h):
// sum them over the ranks (all-reduce), sum only this rank's block of them
// (reduce-scatter: the other blocks keep this rank's own words, as the
// shard it does not own is not read by its optimizer), or give every rank
// each rank's block (all-gather).
enum class Collective : uint8_t { kNone, kSum, kScatter, kGather };

// The role of one access of an op in its kernel. kStateUpdate: an update of
// an op whose recompute skips its updates (Note [Recompute without updates]
// in graph/graph.h): updated as kUpdate, but its old value does not enter
// the digest, so the outputs do not depend on it and a recompute without it
// makes them again.
enum class Role : uint8_t { kOutput, kInput, kUpdate, kWorkspace, kStateUpdate };

// One access of one op, as a kernel sees it: where the bytes are (an offset
// in the device arena) and which role and index it has.
struct KernelAccess {
  int64_t offset = 0;  // in the arena
  int64_t bytes = 0;
  Role role = Role::kInput;
  int32_t index = 0;         // outputs: j; inputs and updates: r (read index); workspace: 0
  int32_t slot = -1;         // outputs and updates: the checksum slot; else -1
  int32_t update_index = 0;  // updates: j among the updates
  int32_t tensor = -1;       // the tensor; -1 for a workspace
};

}  // namespace sa::synthetic
