#include "runtime/mpi/ranks.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
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

// Where this process is (Note [Rank failures]).
enum class Phase { kBefore, kCollectives, kAfter };
Phase g_phase = Phase::kBefore;

#if SA_HAVE_MPI
// One rank's record at a checkpoint: fixed size, plain bytes.
struct Checkpoint {
  int32_t failed = 0;
  int32_t internal = 0;         // the failure is a bug
  int32_t has_fingerprint = 0;  // the fields below it are set
  int32_t unused = 0;
  uint64_t graph = 0;
  uint64_t plan = 0;
  char graph_text[160] = {};
  char plan_text[160] = {};
  char options[512] = {};
  char message[2048] = {};
};

// s into a fixed field, cut with "..." when it does not fit.
template <size_t N>
void put(char (&field)[N], const std::string& s) {
  if (s.size() < N) {
    std::memcpy(field, s.data(), s.size());
    field[s.size()] = '\0';
    return;
  }
  std::memcpy(field, s.data(), N - 4);
  std::memcpy(field + N - 4, "...", 4);
}

template <size_t N>
std::string get(const char (&field)[N]) {
  return std::string(field, strnlen(field, N));
}

#endif

struct Failure {
  std::string message;
  bool internal = false;
};

// What main() would print for this error (cli/main.cpp), without its prefix.
Failure failure_of(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return {e.what(), false};
  } catch (const std::bad_alloc&) {
    return {"out of memory: the input needs more memory than this machine let swapadvisor have",
            false};
  } catch (const InternalError& e) {
    return {e.what(), true};
  } catch (const std::exception& e) {
    return {fmt::format("internal error (a bug in swapadvisor): {}", e.what()), true};
  } catch (...) {
    return {"internal error (a bug in swapadvisor): an exception of unknown type", true};
  }
}

std::string rank_label(int rank) {
  return fmt::format("rank {} of {}", rank, g_ranks.size);
}

#if SA_HAVE_MPI
// The failures at a checkpoint, one line per distinct message: "rank 1 of
// 2: ..." or "ranks 0, 1 of 2: ...".
std::string failures_message(const std::vector<Checkpoint>& all, bool* internal) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    if (!all[r].failed) continue;
    *internal = *internal || all[r].internal;
    const std::string m = get(all[r].message);
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == m; });
    if (it == groups.end())
      groups.push_back({m, {r}});
    else
      it->second.push_back(r);
  }
  std::vector<std::string> lines;
  for (const auto& [m, ranks] : groups)
    lines.push_back(fmt::format("{} {} of {}: {}", ranks.size() == 1 ? "rank" : "ranks",
                                fmt::join(ranks, ", "), g_ranks.size, m));
  return fmt::format("{}", fmt::join(lines, "\n"));
}

// "key: value" items of RunFingerprint::options, by key.
std::map<std::string, std::string> option_items(const std::string& options) {
  std::map<std::string, std::string> items;
  size_t at = 0;
  while (at <= options.size()) {
    size_t end = options.find("; ", at);
    if (end == std::string::npos) end = options.size();
    const std::string item = options.substr(at, end - at);
    const size_t colon = item.find(": ");
    if (!item.empty())
      items[colon == std::string::npos ? item : item.substr(0, colon)] =
          colon == std::string::npos ? "" : item.substr(colon + 2);
    at = end + 2;
  }
  return items;
}

// What rank r runs that rank 0 does not, or "" when they agree.
std::string differences(const Checkpoint& mine, const Checkpoint& zero) {
  std::vector<std::string> d;
  if (mine.graph != zero.graph)
    d.push_back(fmt::format("graph {} (fingerprint {:016x}) where rank 0 has {} ({:016x})",
                            get(mine.graph_text), mine.graph, get(zero.graph_text), zero.graph));
  else if (mine.plan != zero.plan)
    d.push_back(fmt::format("plan {} (fingerprint {:016x}) where rank 0 has {} ({:016x})",
                            get(mine.plan_text), mine.plan, get(zero.plan_text), zero.plan));
  const auto a = option_items(get(mine.options)), b = option_items(get(zero.options));
  for (const auto& [key, value] : a) {
    const auto it = b.find(key);
    if (it == b.end())
      d.push_back(fmt::format("{}: {} where rank 0 has no {}", key, value, key));
    else if (it->second != value)
      d.push_back(fmt::format("{}: {} where rank 0 has {}", key, value, it->second));
  }
  for (const auto& [key, value] : b)
    if (!a.count(key)) d.push_back(fmt::format("no {} where rank 0 has {}: {}", key, key, value));
  return fmt::format("{}", fmt::join(d, "; "));
}

#endif

// Leaves this rank after a RanksFailed (Note [Rank failures]): rank 0
// throws it on for main() to print; the others exit quietly.
[[noreturn]] void leave(const RanksFailed& e) {
  if (g_ranks.rank == 0) {
    if (e.internal()) throw InternalError(e.what());
    throw e;
  }
  std::fflush(stdout);
  std::exit(e.internal() ? 2 : 1);  // runs MPI_Finalize (atexit)
}

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
void all_reduce_mean_buffer(void* data, int64_t count, int elem_bytes) {
  if (elem_bytes == 8)
    all_reduce_mean(std::span<double>(static_cast<double*>(data), static_cast<size_t>(count)));
  else
    all_reduce_mean(std::span<float>(static_cast<float*>(data), static_cast<size_t>(count)));
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

double max_over_ranks(double v) {
  if (g_ranks.size <= 1) return v;
#if SA_HAVE_MPI
  check(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
#endif
  return v;
}

void checkpoint(const RunFingerprint* fingerprint, std::exception_ptr error) {
  if (g_ranks.size <= 1) {
    if (error) std::rethrow_exception(error);
    return;
  }
#if SA_HAVE_MPI
  g_phase = Phase::kBefore;
  Checkpoint mine;
  if (error) {
    const Failure f = failure_of(error);
    mine.failed = 1;
    mine.internal = f.internal;
    put(mine.message, f.message);
  }
  if (fingerprint) {
    mine.has_fingerprint = 1;
    mine.graph = fingerprint->graph;
    mine.plan = fingerprint->plan;
    put(mine.graph_text, fingerprint->graph_text);
    put(mine.plan_text, fingerprint->plan_text);
    put(mine.options, fingerprint->options);
  }
  std::vector<Checkpoint> all(g_ranks.size);
  check(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE,
                      MPI_COMM_WORLD),
        "MPI_Allgather");
  bool internal = false;
  const std::string failed = failures_message(all, &internal);
  if (!failed.empty()) throw RanksFailed(failed, internal);
  for (int r = 1; r < g_ranks.size; ++r) {
    if (all[r].has_fingerprint != all[0].has_fingerprint)
      throw RanksFailed(fmt::format("internal error (a bug in swapadvisor): rank {} is at "
                                    "another checkpoint than rank 0 (Note [Rank failures])",
                                    r),
                        true);
    if (!all[r].has_fingerprint) continue;
    const std::string d = differences(all[r], all[0]);
    if (!d.empty())
      throw RanksFailed(
          fmt::format("{} does not run what rank 0 runs: {}. Every rank must run the same graph "
                      "and plan with the same options",
                      rank_label(r), d),
          false);
  }
#else
  (void)fingerprint;
  if (error) std::rethrow_exception(error);
#endif
}

void collectives_begin() {
  g_phase = Phase::kCollectives;
}

void collectives_end() {
  g_phase = Phase::kAfter;
}

void run_rank(const std::function<void()>& command) {
  init_ranks();
  if (g_ranks.size <= 1) {
    command();
    return;
  }
  try {
    command();
  } catch (const RanksFailed& e) {
    leave(e);
  } catch (...) {
    const std::exception_ptr error = std::current_exception();
    if (g_phase == Phase::kBefore) {
      // The others are on their way to the next checkpoint: meet them there.
      try {
        checkpoint(nullptr, error);
      } catch (const RanksFailed& e) {
        leave(e);
      }
      SA_CHECK(false, "a checkpoint passed with this rank's error");
    }
    if (g_phase == Phase::kAfter) {  // collectives over: leave as one rank would
      const Failure f = failure_of(error);
      if (f.internal) throw;
      throw Error(fmt::format("{}: {}", rank_label(g_ranks.rank), f.message));
    }
    end_job_if_in_collectives(error);
    SA_CHECK(false, "an error during the collectives left the job running");
  }
}

void end_job_if_in_collectives(std::exception_ptr error) {
  if (g_ranks.size <= 1 || g_phase != Phase::kCollectives) return;
  // The others may wait for this rank forever.
  const Failure f = failure_of(error);
  std::fflush(stdout);
  fmt::print(stderr, "swapadvisor: {}{}: {}\n",
             f.internal ? "" : "error: ", rank_label(g_ranks.rank), f.message);
  std::fflush(stderr);
#if SA_HAVE_MPI
  MPI_Abort(MPI_COMM_WORLD, f.internal ? 2 : 1);
#endif
  std::_Exit(f.internal ? 2 : 1);
}

void agree(const std::string& what, std::exception_ptr error) {
  const Phase phase = g_phase;
  RunFingerprint f;
  f.options = what;
  try {
    checkpoint(&f, error);
  } catch (...) {
    g_phase = phase;
    throw;
  }
  g_phase = phase;
}

void abort_job(int status) {
  std::fflush(stdout);
  std::fflush(stderr);
#if SA_HAVE_MPI
  int started = 0;
  MPI_Initialized(&started);
  if (started && g_ranks.size > 1) MPI_Abort(MPI_COMM_WORLD, status);
#endif
  std::_Exit(status);
}

std::string broadcast_text(const std::string& text) {
  if (g_ranks.size <= 1) return text;
#if SA_HAVE_MPI
  SA_CHECK(text.size() <= static_cast<size_t>(INT32_MAX), "a broadcast of {} bytes", text.size());
  int n = static_cast<int>(text.size());
  check(MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  std::string out = g_ranks.rank == 0 ? text : std::string(static_cast<size_t>(n), '\0');
  check(MPI_Bcast(out.data(), n, MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return out;
#else
  return text;
#endif
}

std::vector<std::string> all_gather_text(const std::string& text) {
  if (g_ranks.size <= 1) return {text};
#if SA_HAVE_MPI
  SA_CHECK(text.size() <= static_cast<size_t>(INT32_MAX), "a gather of {} bytes", text.size());
  const int n = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<size_t>(g_ranks.size)), at(lengths.size());
  check(MPI_Allgather(&n, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather");
  int64_t total = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    at[r] = static_cast<int>(total);
    total += lengths[r];
  }
  SA_CHECK(total <= INT32_MAX, "a gather of {} bytes in all", total);
  std::string all(static_cast<size_t>(total), '\0');
  check(MPI_Allgatherv(text.data(), n, MPI_CHAR, all.data(), lengths.data(), at.data(), MPI_CHAR,
                       MPI_COMM_WORLD),
        "MPI_Allgatherv");
  std::vector<std::string> out;
  for (size_t r = 0; r < lengths.size(); ++r)
    out.push_back(all.substr(static_cast<size_t>(at[r]), static_cast<size_t>(lengths[r])));
  return out;
#else
  return {text};
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
