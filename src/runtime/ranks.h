#pragma once
// The ranks of a data-parallel run, and the collectives the runtime needs
// between them.
//
// Note [Ranks]
// ------------
// `mpirun -np N swapadvisor run GRAPH PLAN` starts N processes; each runs
// the plan (one rank of a data-parallel plan, plan/data_parallel.h) on its
// own backend. Every rank trains on its own share of the batch: with the
// synthetic kernels, rank r's input tensors start from init_word salted with
// r (rank 0's are those of a one-rank run), so their gradients differ. A
// collective op's synthetic kernel (synthetic_collective.h) sums the samples
// of the gradients it reduces over the ranks with MPI_Allreduce (64-bit
// words, mod 2^64) on host memory, and an all-gather gives every rank the
// samples each rank owns (its 1/N block) with MPI_Allgatherv; a
// reduce-scatter sums only the block the rank owns (MPI_Reduce_scatter). Every rank
// issues the same collectives in the same order (the same plan, its
// reference run first), from one thread at a time: the compute stream's
// thread, where collective ops run on the host backend (MPI is initialised
// with MPI_THREAD_SERIALIZED). Without MPI in the build, or when the process
// was not started by mpirun, there is one rank and collectives are the
// identity.

#include <cstdint>
#include <span>

#include "runtime/synthetic.h"

namespace sa::runtime {

struct RankInfo {
  int rank = 0;
  int size = 1;
};

// Starts MPI once when this build has it and mpirun started the process;
// MPI_Finalize then runs at exit. Returns this process's rank.
RankInfo init_ranks();
// After init_ranks(): this process's rank (rank 0 of 1 before).
RankInfo ranks();
// Whether this build can run several ranks.
bool have_mpi();

// The salt of rank r's input values: 0 for rank 0.
inline uint64_t rank_salt(int rank) {
  return 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(rank);
}

// Sums words over the ranks in place (MPI_Allreduce, MPI_SUM of
// MPI_UINT64_T: mod 2^64). Nothing with one rank.
void all_reduce_sum(std::span<uint64_t> words);

// The mean over the ranks, element by element, in place: MPI_Allreduce
// (MPI_SUM) and a division by the number of ranks, as DDP averages
// gradients (the ATen kernels' all-reduce, Note [ATen data parallelism] in
// runtime/aten_kernels.h). With two ranks the sum is the same in either
// order, so the mean is what eager PyTorch gets by accumulating the two
// halves' gradients and halving them. Nothing with one rank.
void all_reduce_mean(std::span<float> values);
void all_reduce_mean(std::span<double> values);

// Rank r's block of words (the r-th of `size` blocks as even as can be) goes
// to every rank (MPI_Allgatherv, in place). Nothing with one rank.
void all_gather_blocks(std::span<uint64_t> words);

// Rank r's block of words (as all_gather_blocks splits them) becomes the
// sum of every rank's words there (MPI_Reduce_scatter, MPI_SUM mod 2^64);
// the other blocks keep this rank's words. Nothing with one rank.
void reduce_scatter_blocks(std::span<uint64_t> words);

// What a collective op's kernel does with its words: all_reduce_sum,
// reduce_scatter_blocks for a reduce-scatter, or all_gather_blocks for an
// all-gather.
void exchange_words(synthetic::Collective kind, std::span<uint64_t> words);

}  // namespace sa::runtime
