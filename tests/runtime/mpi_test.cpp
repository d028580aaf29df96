// The data-parallel runtime on MPI (Note [Ranks] in runtime/mpi/ranks.h). Run
// by CTest under `mpirun -np 2` (tests/runtime/CMakeLists.txt): every rank
// runs these tests, and they talk to each other.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "methods/methods.h"
#include "plan/data_parallel.h"
#include "plan/problem.h"
#include "plan/verify.h"
#include "runtime/executor.h"
#include "runtime/host/host_backend.h"
#include "runtime/mpi/ranks.h"
#include "runtime/synthetic_collective.h"
#include "runtime/synthetic_op.h"
#include "zoo/zoo.h"

namespace sa::runtime {
namespace {

using synthetic::KernelAccess;

// What rank r holds in sample i before the all-reduce.
uint64_t contribution(int r, int64_t i) {
  return synthetic::mix(1000003ULL * static_cast<uint64_t>(r + 1) + static_cast<uint64_t>(i));
}

TEST(Mpi, RunsOnSeveralRanks) {
  const RankInfo r = init_ranks();
  EXPECT_TRUE(have_mpi());
  EXPECT_GE(r.size, 2) << "run me with mpirun -np 2";
}

// The reduced gradient is the sum of the ranks' contributions, sample by
// sample (mod 2^64), and its checksum slot says what it holds.
TEST(Mpi, AllReduceSumsTheRanksContributions) {
  const RankInfo r = init_ranks();
  // 20 KiB and a partial 5-byte tensor: page samples and a masked word.
  std::vector<KernelAccess> acc(2);
  acc[0] = {.offset = 0, .bytes = 20480, .role = synthetic::Role::kUpdate, .slot = 0};
  acc[1] = {.offset = 20480, .bytes = 5, .role = synthetic::Role::kUpdate, .slot = 1};
  std::vector<std::byte> buf(20480 + 8);
  synthetic::BufferMem mem{buf.data()};
  for (const KernelAccess& a : acc)
    for (int64_t i = 0; i < synthetic::num_samples(a.bytes); ++i) {
      int len = 0;
      synthetic::sample_offset(a.bytes, i, &len);
      mem.store(a, i, synthetic::mask_word(contribution(r.rank, i), len));
    }
  uint64_t slots[2] = {0, 0};
  synthetic::run_collective(synthetic::Collective::kSum, acc, mem, slots, exchange_words);
  for (int k = 0; k < 2; ++k) {
    const KernelAccess& a = acc[k];
    uint64_t checksum = 0;
    for (int64_t i = 0; i < synthetic::num_samples(a.bytes); ++i) {
      int len = 0;
      synthetic::sample_offset(a.bytes, i, &len);
      uint64_t sum = 0;
      for (int q = 0; q < r.size; ++q)
        sum += synthetic::mask_word(contribution(q, i), len);
      ASSERT_EQ(mem.load(a, i), synthetic::mask_word(sum, len))
          << "access " << k << " sample " << i;
      checksum += synthetic::checksum_term(mem.load(a, i), i);
    }
    EXPECT_EQ(slots[k], checksum);
  }
}

// A reduce-scatter sums this rank's block over the ranks and leaves the
// other blocks as this rank had them.
TEST(Mpi, ReduceScatterSumsOnlyMyBlock) {
  const RankInfo r = init_ranks();
  std::vector<uint64_t> words(11);
  for (size_t i = 0; i < words.size(); ++i)
    words[i] = contribution(r.rank, static_cast<int64_t>(i));
  reduce_scatter_blocks(words);
  const int64_t begin = 11 * r.rank / r.size, end = 11 * (r.rank + 1) / r.size;
  for (int64_t i = 0; i < 11; ++i) {
    uint64_t want = contribution(r.rank, i);
    if (i >= begin && i < end) {
      want = 0;
      for (int q = 0; q < r.size; ++q)
        want += contribution(q, i);
    }
    EXPECT_EQ(words[i], want) << "word " << i;
  }
}

// An all-gather gives every rank each rank's block.
TEST(Mpi, AllGatherGivesEveryRankEachBlock) {
  const RankInfo r = init_ranks();
  std::vector<uint64_t> words(10);
  for (size_t i = 0; i < words.size(); ++i)
    words[i] = 100 * static_cast<uint64_t>(r.rank) + i;  // only my block matters
  all_gather_blocks(words);
  for (int q = 0; q < r.size; ++q)
    for (int64_t i = 10 * q / r.size; i < 10 * (q + 1) / r.size; ++i)
      EXPECT_EQ(words[i], 100 * static_cast<uint64_t>(q) + static_cast<uint64_t>(i));
}

// Every rank runs a data-parallel plan (swaps, a tight budget) of a model
// whose inputs differ by rank: every rank's integrity check passes, and the
// parameters end equal on every rank, which they can only be if the
// gradients were reduced.
class MpiPlan : public ::testing::TestWithParam<bool> {};

TEST_P(MpiPlan, EveryRankRunsThePlanAndTheParamsAgree) {
  const RankInfo r = init_ranks();
  const bool shard = GetParam();
  const Graph base = build_zoo_model({.model = "mlp-6", .batch = 4});
  const DeviceProfile d = rank_device(load_device("v100-16gb"), r.size);
  const Graph g = data_parallel_graph(
      base, {.ranks = r.size, .shard_optimizer = shard, .bucket_bytes = 20000}, d);
  int collectives = 0;
  for (const Op& op : g.ops)
    collectives += is_collective(op);
  EXPECT_GE(collectives, shard ? 4 : 2);
  int64_t peak = 0;
  for (const Tensor& t : g.tensors)
    peak += t.bytes;
  const Problem pb(g, d, peak / 3);
  MethodOptions mo;
  mo.search.max_evaluations = 50;
  mo.search.threads = 1;
  const MethodResult m = run_method("swapadvisor", pb, mo);
  ASSERT_TRUE(m.feasible) << m.why;
  ASSERT_TRUE(verify_plan(g, m.plan).ok) << verify_plan(g, m.plan).violation;
  EXPECT_GT(plan_traffic(g, m.plan).swap_in_bytes, 0);

  auto b = make_host_backend({});
  RunOptions o;
  o.ranks = init_ranks();  // passed in (Note [Ranks])
  o.iterations = 2;
  o.time_scale = 0;
  std::vector<uint64_t> params;  // checksums of the final params, by tensor
  o.final_value = [&](TensorId t, const std::byte* data, int64_t bytes) {
    if (g.tensors[t].kind == TensorKind::kParam)
      params.push_back(synthetic::checksum_buffer(data, bytes));
  };
  const RunResult res = run_plan(*b, g, m.plan, pb.op_us, o);
  EXPECT_EQ(res.integrity, "ok") << "rank " << r.rank;
  ASSERT_FALSE(params.empty());
  // Equal everywhere: the sum over the ranks is size x mine.
  std::vector<uint64_t> sum = params;
  all_reduce_sum(sum);
  for (size_t k = 0; k < params.size(); ++k)
    EXPECT_EQ(sum[k], static_cast<uint64_t>(r.size) * params[k]) << "param " << k;
  // The inputs differ by rank, so the gradients did before the all-reduce.
  EXPECT_NE(rank_salt(1), rank_salt(0));
}

INSTANTIATE_TEST_SUITE_P(Sharding, MpiPlan, ::testing::Values(false, true));

// Note [Rank failures]: what a checkpoint throws on every rank. Every rank
// calls it as often as the others (no ASSERT before it: a rank that left a
// test early would leave the other in the collective).
struct CheckpointOutcome {
  std::string message = "(no error)";
  bool internal = false;
};

CheckpointOutcome at_checkpoint(const RunFingerprint* fp, std::exception_ptr error) {
  CheckpointOutcome o;
  try {
    checkpoint(fp, error);
  } catch (const RanksFailed& e) {
    o.message = e.what();
    o.internal = e.internal();
  }
  return o;
}

RunFingerprint fingerprint(const std::string& options) {
  RunFingerprint fp;
  fp.graph = 0x1234;
  fp.plan = 0x5678;
  fp.graph_text = "'g' (3 ops, 4 tensors)";
  fp.plan_text = "'swapadvisor' (budget 1000 B, 9 steps)";
  fp.options = options;
  return fp;
}

TEST(MpiCheckpoint, PassesWhenTheRanksAgree) {
  init_ranks();
  const RunFingerprint fp = fingerprint("iterations: 3; kernels: synthetic");
  EXPECT_EQ(at_checkpoint(&fp, nullptr).message, "(no error)");
  EXPECT_EQ(at_checkpoint(nullptr, nullptr).message, "(no error)");
}

TEST(MpiCheckpoint, NamesTheRankThatFailedOnEveryRank) {
  const RankInfo r = init_ranks();
  const auto error = r.rank == 1 ? std::make_exception_ptr(Error("cannot open 'v1.bin'")) : nullptr;
  const RunFingerprint fp = fingerprint("iterations: 3");
  // The failing rank has no fingerprint to give: it does not matter.
  const CheckpointOutcome o = at_checkpoint(r.rank == 1 ? nullptr : &fp, error);
  EXPECT_EQ(o.message, fmt::format("rank 1 of {}: cannot open 'v1.bin'", r.size));
  EXPECT_FALSE(o.internal);
}

TEST(MpiCheckpoint, GroupsRanksWithTheSameError) {
  const RankInfo r = init_ranks();
  std::vector<std::string> everyone;
  for (int q = 0; q < r.size; ++q)
    everyone.push_back(std::to_string(q));
  const CheckpointOutcome o =
      at_checkpoint(nullptr, std::make_exception_ptr(Error("no such file 'values.bin'")));
  EXPECT_EQ(o.message, fmt::format("ranks {} of {}: no such file 'values.bin'",
                                   fmt::join(everyone, ", "), r.size));
}

TEST(MpiCheckpoint, ABugStaysABug) {
  const RankInfo r = init_ranks();
  const auto error =
      r.rank == 1 ? std::make_exception_ptr(InternalError("internal error: x")) : nullptr;
  const CheckpointOutcome o = at_checkpoint(nullptr, error);
  EXPECT_EQ(o.message, fmt::format("rank 1 of {}: internal error: x", r.size));
  EXPECT_TRUE(o.internal);
}

TEST(MpiCheckpoint, NamesWhatDiffersFromRankZero) {
  const RankInfo r = init_ranks();
  const RunFingerprint fp = fingerprint(r.rank == 1 ? "iterations: 5; kernels: synthetic"
                                                    : "iterations: 3; kernels: synthetic");
  EXPECT_EQ(at_checkpoint(&fp, nullptr).message,
            "rank 1 of " + std::to_string(r.size) +
                " does not run what rank 0 runs: iterations: 5 where rank 0 has 3. Every rank "
                "must run the same graph and plan with the same options");
}

// Another graph, described at length: the records are of fixed size, so the
// exchange works (no MPI_ERR_TRUNCATE) and the description is cut.
TEST(MpiCheckpoint, AnotherGraphIsNamed) {
  const RankInfo r = init_ranks();
  RunFingerprint fp = fingerprint("iterations: 3");
  if (r.rank == 1) {
    fp.graph = 0xabcd;
    fp.graph_text = "'" + std::string(10000, 'x') + "'";
  }
  const std::string m = at_checkpoint(&fp, nullptr).message;
  EXPECT_EQ(
      m.rfind(fmt::format("rank 1 of {} does not run what rank 0 runs: graph 'xxx", r.size), 0), 0u)
      << m;
  EXPECT_NE(m.find("xxx... (fingerprint 000000000000abcd) where rank 0 has 'g' (3 ops, 4 "
                   "tensors) (0000000000001234)"),
            std::string::npos)
      << m;
  EXPECT_LT(m.size(), 1000u);
}

// run_plan's checkpoints, with the data-parallel mlp-6 of MpiPlan.
struct DpRun {
  Graph g;
  Plan plan;
  std::vector<double> op_us;
};

const DpRun& dp_run() {
  static const DpRun run = [] {
    const RankInfo r = init_ranks();
    const Graph base = build_zoo_model({.model = "mlp-6", .batch = 4});
    const DeviceProfile d = rank_device(load_device("v100-16gb"), r.size);
    DpRun x;
    x.g = data_parallel_graph(base, {.ranks = r.size, .bucket_bytes = 20000}, d);
    int64_t peak = 0;
    for (const Tensor& t : x.g.tensors)
      peak += t.bytes;
    const Problem pb(x.g, d, peak / 2);
    MethodOptions mo;
    mo.search.max_evaluations = 20;
    mo.search.threads = 1;
    mo.search.seed = 1;  // the same plan on every rank
    const MethodResult m = run_method("swapadvisor", pb, mo);
    EXPECT_TRUE(m.feasible) << m.why;
    x.plan = m.plan;
    x.op_us = pb.op_us;
    return x;
  }();
  return run;
}

std::string run_failure(const Plan& p, const RunOptions& o) {
  const DpRun& x = dp_run();
  auto b = make_host_backend({});
  try {
    run_plan(*b, x.g, p, x.op_us, o);
  } catch (const RanksFailed& e) {
    return e.what();
  }
  return "(no error)";
}

// The host backend cannot allocate rank 1's arena (a test hook stands for a
// machine with less memory): every rank fails at the checkpoint after the
// setup, with rank 1's message, instead of waiting in the first collective.
TEST(MpiRunPlan, AnArenaOneRankCannotAllocateFailsEveryRank) {
  const RankInfo r = init_ranks();
  const DpRun& x = dp_run();
  RunOptions o;
  o.ranks = init_ranks();  // passed in (Note [Ranks])
  o.time_scale = 0;
  if (r.rank == 1) setenv("SA_TEST_HOST_ALLOC_LIMIT", "1000", 1);
  const std::string m = run_failure(x.plan, o);
  if (r.rank == 1) unsetenv("SA_TEST_HOST_ALLOC_LIMIT");
  EXPECT_EQ(m, fmt::format("rank 1 of {}: cannot allocate the device arena of {} bytes in host "
                           "memory",
                           r.size, x.plan.memory_budget));
}

TEST(MpiRunPlan, OtherIterationsFailEveryRankBeforeTheSetup) {
  const RankInfo r = init_ranks();
  RunOptions o;
  o.ranks = init_ranks();  // passed in (Note [Ranks])
  o.time_scale = 0;
  o.iterations = r.rank == 1 ? 3 : 2;
  // Rank 1 cannot allocate anything either: it fails at the first checkpoint,
  // before its setup.
  if (r.rank == 1) setenv("SA_TEST_HOST_ALLOC_LIMIT", "1000", 1);
  const std::string m = run_failure(dp_run().plan, o);
  if (r.rank == 1) unsetenv("SA_TEST_HOST_ALLOC_LIMIT");
  EXPECT_EQ(m, fmt::format("rank 1 of {} does not run what rank 0 runs: iterations: 3 where rank 0 "
                           "has 2. Every rank must run the same graph and plan with the same "
                           "options",
                           r.size));
}

TEST(MpiRunPlan, AnotherPlanFailsEveryRank) {
  const RankInfo r = init_ranks();
  Plan p = dp_run().plan;
  if (r.rank == 1) p.memory_budget += 4096;  // made for another budget
  RunOptions o;
  o.ranks = init_ranks();  // passed in (Note [Ranks])
  o.time_scale = 0;
  const std::string m = run_failure(p, o);
  EXPECT_EQ(m.rfind(fmt::format("rank 1 of {} does not run what rank 0 runs: plan 'swapadvisor' "
                                "(budget {} B, ",
                                r.size, dp_run().plan.memory_budget + 4096),
                    0),
            0u)
      << m;
}

// The ranks agree on the largest time scale any of them needs.
TEST(MpiRunPlan, RanksRunAtTheLargestTimeScale) {
  const RankInfo r = init_ranks();
  EXPECT_EQ(max_over_ranks(1.5 + r.rank), 1.5 + (r.size - 1));
}

}  // namespace
}  // namespace sa::runtime
