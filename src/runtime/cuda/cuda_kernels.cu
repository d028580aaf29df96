#include "runtime/cuda/cuda_kernels.h"

#include <algorithm>

#include "runtime/cuda/cuda_check.h"

namespace sa::runtime::cuda {
namespace {

using synthetic::KernelAccess;
using synthetic::Role;

constexpr int kThreads = 256;

__device__ __forceinline__ uint64_t globaltimer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ uint64_t load_word(const std::byte* p, int len) {
  if (len == 8 && (reinterpret_cast<uintptr_t>(p) & 7) == 0)
    return *reinterpret_cast<const uint64_t*>(p);
  uint64_t v = 0;
  for (int b = 0; b < len; ++b)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(p[b])) << (8 * b);
  return v;
}

__device__ __forceinline__ void store_word(std::byte* p, int len, uint64_t v) {
  if (len == 8 && (reinterpret_cast<uintptr_t>(p) & 7) == 0) {
    *reinterpret_cast<uint64_t*>(p) = v;
    return;
  }
  for (int b = 0; b < len; ++b)
    p[b] = static_cast<std::byte>((v >> (8 * b)) & 0xff);
}

// Adds the block's values to *out. Every thread of the block must call it.
__device__ void block_add(uint64_t v, unsigned long long* out) {
  __shared__ uint64_t warp_sums[kThreads / 32];
  for (int d = 16; d > 0; d /= 2)
    v += __shfl_down_sync(0xffffffffu, v, d);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint64_t sum = 0;
    for (int w = 0; w < kThreads / 32; ++w)
      sum += warp_sums[w];
    atomicAdd(out, static_cast<unsigned long long>(sum));
  }
  __syncthreads();  // warp_sums is reused by the next call
}

__global__ void digest_kernel(const std::byte* arena, const KernelAccess* accesses, int n,
                              OpScratch* scratch) {
  if (blockIdx.x == 0 && threadIdx.x == 0) scratch->start_ns = globaltimer_ns();
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  uint64_t sum = 0;
  for (int k = 0; k < n; ++k) {
    const KernelAccess a = accesses[k];
    if (a.role != Role::kInput && a.role != Role::kUpdate) continue;
    const int64_t samples = synthetic::num_samples(a.bytes);
    for (int64_t i = first; i < samples; i += stride) {
      int len = 0;
      const int64_t off = synthetic::sample_offset(a.bytes, i, &len);
      sum += synthetic::read_term(load_word(arena + a.offset + off, len), a.index, i);
    }
  }
  block_add(sum, &scratch->digest);
}

__global__ void write_kernel(std::byte* arena, const KernelAccess* accesses, int n, int32_t op,
                             const OpScratch* scratch, unsigned long long* slots,
                             uint64_t duration_ns) {
  const uint64_t digest = synthetic::op_seed(op) + scratch->digest;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int k = 0; k < n; ++k) {
    const KernelAccess a = accesses[k];
    if (a.role == Role::kInput) continue;
    const int64_t samples = synthetic::num_samples(a.bytes);
    uint64_t sum = 0;
    for (int64_t i = first; i < samples; i += stride) {
      int len = 0;
      const int64_t off = synthetic::sample_offset(a.bytes, i, &len);
      std::byte* p = arena + a.offset + off;
      uint64_t v = 0;
      if (a.role == Role::kOutput)
        v = synthetic::output_word(digest, a.index, i);
      else if (a.role == Role::kUpdate || a.role == Role::kStateUpdate)
        v = synthetic::update_word(load_word(p, len), digest, a.update_index, i);
      else
        v = synthetic::workspace_word(digest, i);
      store_word(p, len, synthetic::mask_word(v, len));
      if (a.slot >= 0) sum += synthetic::checksum_term(load_word(p, len), i);
    }
    if (a.slot >= 0) block_add(sum, slots + a.slot);  // a.slot is the same in every thread
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const uint64_t until = scratch->start_ns + duration_ns;
    while (globaltimer_ns() < until) {
    }
  }
}

__global__ void checksum_kernel(const std::byte* p, int64_t bytes, unsigned long long* slot) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t samples = synthetic::num_samples(bytes);
  uint64_t sum = 0;
  for (int64_t i = first; i < samples; i += stride) {
    int len = 0;
    const int64_t off = synthetic::sample_offset(bytes, i, &len);
    sum += synthetic::checksum_term(load_word(p + off, len), i);
  }
  block_add(sum, slot);
}

__global__ void delay_kernel(uint64_t duration_ns) {
  const uint64_t until = globaltimer_ns() + duration_ns;
  while (globaltimer_ns() < until) {
  }
}

}  // namespace

int blocks_for(int64_t n, int num_sms) {
  const int64_t want = (n + 4 * kThreads - 1) / (4 * kThreads);  // ~4 samples per thread
  return static_cast<int>(std::clamp<int64_t>(want, 1, 8 * std::max(num_sms, 1)));
}

void launch_op(cudaStream_t s, int blocks, std::byte* arena, const KernelAccess* accesses,
               int num_accesses, int32_t op, OpScratch* scratch, unsigned long long* slots,
               uint64_t duration_ns) {
  digest_kernel<<<blocks, kThreads, 0, s>>>(arena, accesses, num_accesses, scratch);
  SA_CUDA_CHECK(cudaGetLastError());
  write_kernel<<<blocks, kThreads, 0, s>>>(arena, accesses, num_accesses, op, scratch, slots,
                                           duration_ns);
  SA_CUDA_CHECK(cudaGetLastError());
}

void launch_checksum(cudaStream_t s, int blocks, const std::byte* p, int64_t bytes,
                     unsigned long long* slot) {
  checksum_kernel<<<blocks, kThreads, 0, s>>>(p, bytes, slot);
  SA_CUDA_CHECK(cudaGetLastError());
}

void launch_delay(cudaStream_t s, uint64_t duration_ns) {
  delay_kernel<<<1, 1, 0, s>>>(duration_ns);
  SA_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sa::runtime::cuda
