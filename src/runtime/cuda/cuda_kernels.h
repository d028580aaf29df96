#pragma once
// The synthetic kernels on CUDA (Note [Synthetic kernels], runtime/synthetic.h),
// for the CUDA backend. Each op is two kernels on the compute stream:
//   1. digest: every block sums the read terms of its share of the samples of
//      the op's inputs and updates and adds the sum to the op's digest word
//      (addition mod 2^64 commutes, so the digest equals the host's);
//      block 0 notes the start time;
//   2. write: every block writes its share of the output, update and
//      workspace samples, re-reads them into the checksums of the outputs
//      and updates (added to their slots), and block 0 then spins on the
//      GPU's global timer (%globaltimer, nanoseconds, unaffected by clock
//      changes, unlike clock64) until the op's duration since the start has
//      passed.
// Unaligned or partial sample words (objects of odd sizes) are read and
// written byte by byte, little-endian, as the host's memcpy does.

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/synthetic.h"

namespace sa::runtime::cuda {

// Per op: [0] the digest's partial sums, [1] the start time (ns).
struct OpScratch {
  unsigned long long digest;
  unsigned long long start_ns;
};

void launch_op(cudaStream_t s, int blocks, std::byte* arena,
               const synthetic::KernelAccess* accesses, int num_accesses, int32_t op,
               OpScratch* scratch, unsigned long long* slots, uint64_t duration_ns);

void launch_checksum(cudaStream_t s, int blocks, const std::byte* p, int64_t bytes,
                     unsigned long long* slot);

void launch_delay(cudaStream_t s, uint64_t duration_ns);

// Blocks for a kernel whose largest access has n samples.
int blocks_for(int64_t n, int num_sms);

}  // namespace sa::runtime::cuda
