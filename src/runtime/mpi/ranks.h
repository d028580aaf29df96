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
// collective op's synthetic kernel (runtime/synthetic_collective.h) sums the
// samples of the gradients it reduces over the ranks with MPI_Allreduce (64-bit
// words, mod 2^64) on host memory, and an all-gather gives every rank the
// samples each rank owns (its 1/N block) with MPI_Allgatherv; a
// reduce-scatter sums only the block the rank owns (MPI_Reduce_scatter). Every rank
// issues the same collectives in the same order (the same plan, its
// reference run first), from one thread at a time: the compute stream's
// thread, where collective ops run on the host backend (MPI is initialised
// with MPI_THREAD_SERIALIZED). Without MPI in the build, or when the process
// was not started by mpirun, there is one rank and collectives are the
// identity.
//
// Note [Rank failures]
// --------------------
// One rank's error must end every rank, with that rank's message, instead of
// leaving the others in a collective forever. (Before this, `mpirun` never
// exited: the failing rank called MPI_Finalize on its way out, which in
// OpenMPI waits for every rank, while the others waited in a collective for
// it.) Two mechanisms, one for each side of the first collective:
//
// Checkpoints, before the collectives. The ranks meet at checkpoints, each
// one MPI_Allgather of a fixed-size Checkpoint record per rank: whether the
// rank failed and why, and what it is about to run (the fingerprints of the
// graph and the plan, and the options that must agree, as text). Fixed size,
// so that a rank with another graph can never make a message of another
// length (MPI_ERR_TRUNCATE) and the exchange itself cannot fail that way. A
// rank that fails before the collectives start does not leave: it takes its
// error to the next checkpoint, where the others are going. run_rank() does
// that for an error anywhere in the command (a values file missing), and
// run_plan for one in its setup (an arena it cannot allocate). run_plan has
// two checkpoints: one before its setup, where the ranks check that they run
// the same graph, plan and options before anything is allocated, and one
// after it, the last: after it the collectives run. At a checkpoint where a
// rank failed or a rank disagrees with rank 0, every rank throws
// RanksFailed, whose message names the failing ranks and their errors (or
// the rank that differs from rank 0, and in what); rank 0 prints it, the
// others leave quietly, every rank calls MPI_Finalize and exits with status
// 1 (2 when the error was a bug).
//
// During the collectives, an error on one rank (an MPI error, a kernel that
// throws) cannot wait for the others: they may be in a collective that this
// rank will never join. run_rank() prints it, prefixed with the rank
// ("swapadvisor: error: rank 1 of 2: ..."), and calls MPI_Abort with status
// 1 (2 for a bug), which OpenMPI turns into killing every rank of the job.
// When run_plan returns, its collectives are over: a later error (a failed
// integrity check) leaves normally, and MPI_Finalize waits at most for the
// others to finish their last collective.

#include <cstdint>
#include <exception>
#include <functional>
#include <span>
#include <string>

#include "graph/graph.h"
#include "runtime/synthetic.h"
#include "util/error.h"

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
// The salt of rank r's initial value of a tensor of this kind: the inputs
// differ by rank (its share of the batch), nothing else does. What the
// executor and the reference both start from.
inline uint64_t init_salt(TensorKind kind, int rank) {
  return kind == TensorKind::kInput ? rank_salt(rank) : 0;
}

// Sums words over the ranks in place (MPI_Allreduce, MPI_SUM of
// MPI_UINT64_T: mod 2^64). Nothing with one rank.
void all_reduce_sum(std::span<uint64_t> words);

// The mean over the ranks, element by element, in place: MPI_Allreduce
// (MPI_SUM) and a division by the number of ranks, as DDP averages
// gradients (the ATen kernels' all-reduce, Note [ATen data parallelism] in
// runtime/aten/aten_kernels.h). With two ranks the sum is the same in either
// order, so the mean is what eager PyTorch gets by accumulating the two
// halves' gradients and halving them. Nothing with one rank.
void all_reduce_mean(std::span<float> values);
void all_reduce_mean(std::span<double> values);
// The same on `count` values of `elem_bytes` (4: float, 8: double): what
// the ATen kernels' all-reduce ops call (AtenOptions::all_reduce_mean).
void all_reduce_mean_buffer(void* data, int64_t count, int elem_bytes);

// Rank r's block of words (the r-th of `size` blocks as even as can be) goes
// to every rank (MPI_Allgatherv, in place). Nothing with one rank.
void all_gather_blocks(std::span<uint64_t> words);

// Rank r's block of words (as all_gather_blocks splits them) becomes the
// sum of every rank's words there (MPI_Reduce_scatter, MPI_SUM mod 2^64);
// the other blocks keep this rank's words. Nothing with one rank.
void reduce_scatter_blocks(std::span<uint64_t> words);

// The largest of every rank's v (MPI_Allreduce, MPI_MAX): the time scale
// the ranks run at, when each measured its own. v with one rank.
double max_over_ranks(double v);

// What a rank is about to run, compared at a checkpoint (Note [Rank
// failures]). The fingerprints must be equal on every rank, and so must
// `options`; the descriptions only make the message readable.
struct RunFingerprint {
  uint64_t graph = 0;      // graph_fingerprint
  uint64_t plan = 0;       // a hash of the whole plan
  std::string graph_text;  // e.g. "'mlp-6' (30 ops, 60 tensors)"
  std::string plan_text;   // e.g. "swapadvisor, budget 1.2 MiB, 140 steps"
  std::string options;     // "iterations 3, integrity checked, ...": what else must agree
};

// Thrown on every rank by a checkpoint where a rank failed or the ranks
// disagree: the failing ranks' messages, or what differs.
class RanksFailed : public Error {
 public:
  RanksFailed(const std::string& what, bool internal) : Error(what), internal_(internal) {}
  // The failing rank's error was a bug (exit status 2).
  bool internal() const { return internal_; }

 private:
  bool internal_;
};

// A checkpoint (Note [Rank failures]): collective, every rank must call it
// as often as the others. error: this rank's failure since the last one, or
// null; fingerprint: what this rank runs (null: nothing to compare). Throws
// RanksFailed when a rank failed or a fingerprint differs from rank 0's.
// With one rank: rethrows error, and compares nothing.
void checkpoint(const RunFingerprint* fingerprint, std::exception_ptr error);

// Marks the collectives of a run as started (after its last checkpoint) or
// over (Note [Rank failures]): errors during them end every rank.
void collectives_begin();
void collectives_end();

// Runs a command on this rank (init_ranks() first). With several ranks, an
// error it throws goes to the next checkpoint before the collectives, ends
// every rank during them (MPI_Abort, after printing it), and leaves normally
// after them; a RanksFailed leaves rank 0 to be printed by the caller and
// ends the other ranks quietly (std::exit(1), or 2 for a bug, after
// MPI_Finalize). With one rank: command().
void run_rank(const std::function<void()>& command);

// An error a rank cannot take to a checkpoint because the collectives have
// started (a run on a thread of its own, runtime/aten/aten_session.h): prints it
// with the rank and ends every rank (MPI_Abort), as run_rank does. Before
// or after the collectives, or with one rank, returns: the caller goes on.
void end_job_if_in_collectives(std::exception_ptr error);

// A checkpoint between the steps of a running session (collective): every
// rank's `what` must equal rank 0's, and no rank may have failed (error).
// Throws RanksFailed as checkpoint() does; leaves the run's phase as it was.
void agree(const std::string& what, std::exception_ptr error);

// Ends every rank now with this status (MPI_Abort; with one rank, _Exit):
// for a rank that fails outside any checkpoint (an exception in a training
// script), so that the others do not wait for it.
[[noreturn]] void abort_job(int status);

// Rank 0's text on every rank (MPI_Bcast; collective): what rank 0 decided
// for all (swapadvisor.Trainer: the plan). With one rank: text.
std::string broadcast_text(const std::string& text);

// Every rank's text, in rank order, on every rank (MPI_Allgather of the
// lengths, then MPI_Allgatherv; collective): the search's islands exchange
// their best candidates so (Note [Islands]). With one rank: {text}.
std::vector<std::string> all_gather_text(const std::string& text);

// What a collective op's kernel does with its words: all_reduce_sum,
// reduce_scatter_blocks for a reduce-scatter, or all_gather_blocks for an
// all-gather.
void exchange_words(synthetic::Collective kind, std::span<uint64_t> words);

}  // namespace sa::runtime
