#include "runtime/ranks.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "util/error.h"

#if SA_HAVE_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only: no deprecated C++ bindings
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace sa::runtime {
namespace {

RankInfo g_ranks;

#if SA_HAVE_MPI
void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(fmt::format("MPI: {} failed: {}", what, std::string(msg, len)));
}

void finalize() {
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
}
#endif

}  // namespace

bool have_mpi() {
#if SA_HAVE_MPI
  return true;
#else
  return false;
#endif
}

RankInfo init_ranks() {
#if SA_HAVE_MPI
  int started = 0;
  MPI_Initialized(&started);
  // Only under mpirun (OpenMPI sets OMPI_COMM_WORLD_SIZE; PMIx launchers
  // PMIX_RANK): a plain run stays one rank without touching MPI.
  if (!started && (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK"))) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_SERIALIZED)
      throw Error(
          "MPI: this MPI library does not allow calls from the compute stream's thread "
          "(MPI_THREAD_SERIALIZED)");
    std::atexit(finalize);
    started = 1;
  }
  if (started) {
    MPI_Comm_rank(MPI_COMM_WORLD, &g_ranks.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_ranks.size);
  }
#endif
  return g_ranks;
}

RankInfo ranks() {
  return g_ranks;
}

void all_reduce_sum(std::span<uint64_t> words) {
  if (g_ranks.size <= 1 || words.empty()) return;
#if SA_HAVE_MPI
  SA_CHECK(words.size() <= static_cast<size_t>(INT32_MAX), "all-reduce of {} words", words.size());
  check(MPI_Allreduce(MPI_IN_PLACE, words.data(), static_cast<int>(words.size()), MPI_UINT64_T,
                      MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce");
#endif
}

namespace {

template <class T>
void all_reduce_mean_of(std::span<T> values) {
  if (g_ranks.size <= 1 || values.empty()) return;
#if SA_HAVE_MPI
  SA_CHECK(values.size() <= static_cast<size_t>(INT32_MAX), "all-reduce of {} values",
           values.size());
  check(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()),
                      sizeof(T) == 8 ? MPI_DOUBLE : MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce");
  const T n = static_cast<T>(g_ranks.size);
  for (T& v : values)
    v /= n;
#endif
}

}  // namespace

void all_reduce_mean(std::span<float> values) {
  all_reduce_mean_of(values);
}
void all_reduce_mean(std::span<double> values) {
  all_reduce_mean_of(values);
}

#if SA_HAVE_MPI
namespace {

// The blocks of n words over the ranks, as even as can be: rank r's starts
// at displs[r] and holds counts[r].
void blocks(int n, std::vector<int>* counts, std::vector<int>* displs) {
  const int size = g_ranks.size;
  counts->resize(size);
  displs->resize(size);
  for (int r = 0; r < size; ++r) {
    (*displs)[r] = static_cast<int>(int64_t{n} * r / size);
    (*counts)[r] = static_cast<int>(int64_t{n} * (r + 1) / size) - (*displs)[r];
  }
}

}  // namespace
#endif

void reduce_scatter_blocks(std::span<uint64_t> words) {
  if (g_ranks.size <= 1 || words.empty()) return;
#if SA_HAVE_MPI
  SA_CHECK(words.size() <= static_cast<size_t>(INT32_MAX), "reduce-scatter of {} words",
           words.size());
  std::vector<int> counts, displs;
  blocks(static_cast<int>(words.size()), &counts, &displs);
  // In place, MPI_Reduce_scatter leaves this rank's block of the sums at the
  // start of the buffer: keep a copy of the words it overwrites.
  const int me = g_ranks.rank;
  std::vector<uint64_t> mine(words.begin(), words.end());
  check(MPI_Reduce_scatter(MPI_IN_PLACE, words.data(), counts.data(), MPI_UINT64_T, MPI_SUM,
                           MPI_COMM_WORLD),
        "MPI_Reduce_scatter");
  std::vector<uint64_t> block(words.begin(), words.begin() + counts[me]);
  std::copy(mine.begin(), mine.end(), words.begin());
  std::copy(block.begin(), block.end(), words.begin() + displs[me]);
#endif
}

void all_gather_blocks(std::span<uint64_t> words) {
  if (g_ranks.size <= 1 || words.empty()) return;
#if SA_HAVE_MPI
  SA_CHECK(words.size() <= static_cast<size_t>(INT32_MAX), "all-gather of {} words", words.size());
  std::vector<int> counts, displs;
  blocks(static_cast<int>(words.size()), &counts, &displs);
  check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, words.data(), counts.data(),
                       displs.data(), MPI_UINT64_T, MPI_COMM_WORLD),
        "MPI_Allgatherv");
#endif
}

void exchange_words(synthetic::Collective kind, std::span<uint64_t> words) {
  if (kind == synthetic::Collective::kGather)
    all_gather_blocks(words);
  else if (kind == synthetic::Collective::kScatter)
    reduce_scatter_blocks(words);
  else
    all_reduce_sum(words);
}

}  // namespace sa::runtime
