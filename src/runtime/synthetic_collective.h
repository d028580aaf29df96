#pragma once
// A collective op's synthetic kernel (Note [Ranks] in runtime/mpi/ranks.h), on
// the host: the samples of its updates, gathered into one buffer, go through
// one collective (exchange(kind, words): runtime::exchange_words, one MPI
// call) and come back; each update's checksum slot gets the
// checksum of what it now holds, as run_op's would. The memory is the same
// template parameter as run_op's (runtime/synthetic_op.h), so that the host
// backend and the reference run the same code.

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/synthetic.h"

namespace sa::synthetic {

template <class Mem, class Exchange>
void run_collective(Collective kind, std::span<const KernelAccess> accesses, Mem& mem,
                    uint64_t* slots, Exchange&& exchange) {
  std::vector<uint64_t> words;
  for (const KernelAccess& a : accesses) {
    if (a.role != Role::kUpdate) continue;
    const int64_t n = num_samples(a.bytes);
    for (int64_t i = 0; i < n; ++i)
      words.push_back(mem.load(a, i));
  }
  exchange(kind, std::span<uint64_t>(words));
  size_t k = 0;
  for (const KernelAccess& a : accesses) {
    if (a.role != Role::kUpdate) continue;
    const int64_t n = num_samples(a.bytes);
    uint64_t sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      int len = 0;
      sample_offset(a.bytes, i, &len);
      const uint64_t v = mask_word(words[k++], len);
      mem.store(a, i, v);
      sum += checksum_term(v, i);
    }
    if (a.slot >= 0) slots[a.slot] = sum;
  }
}

}  // namespace sa::synthetic
