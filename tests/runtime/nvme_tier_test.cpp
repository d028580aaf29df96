// Plans with tensors on NVMe (Note [Host tier], plan/host_tier.h) run on the
// host backend with the NvmeStore: on random graphs whose host budget is
// 60% of what their slots take, every run keeps its data across all three
// tiers (integrity ok, and every persistent tensor ends with the value it
// ends with when the same plan keeps everything in host memory).
//
//   SA_TEST_SEED=N   another seed (the seed is printed)

#include <gtest/gtest.h>

#include <sys/vfs.h>

#include <map>
#include <string>

#include "graph/stats.h"
#include "host_budget_case.h"
#include "plan/allocation.h"
#include "plan/host_tier.h"
#include "plan/planner.h"
#include "plan/problem.h"
#include "plan/verify.h"
#include "random_graph.h"
#include "runtime/executor.h"
#include "runtime/host/host_backend.h"
#include "runtime/synthetic.h"
#include "runtime/synthetic_op.h"
#include "test_util.h"

namespace sa::runtime {
namespace {

// A directory for the NVMe file on a file system that takes O_DIRECT:
// /tmp, unless it is tmpfs (then the build tree).
std::string nvme_dir() {
  struct statfs fs {};
  const bool tmpfs = statfs("/tmp", &fs) == 0 && fs.f_type == 0x01021994;  // TMPFS_MAGIC
  return tmpfs ? SA_NVME_TEST_ROOT : "/tmp";
}

DeviceProfile link_with_nvme() {
  DeviceProfile d = testing::unit_link();
  d.h2d_gbps = d.d2h_gbps = 1;  // fast: the test is about data, not time
  d.duplex_gbps = 2;
  d.nvme_read_gbps = 0.5;
  d.nvme_write_gbps = 0.25;
  d.nvme_latency_us = 10;
  d.nvme_queue_depth = 4;
  return d;
}

// Every persistent tensor's final value, hashed.
std::map<TensorId, uint64_t> run_and_hash(const Graph& g, const Plan& p,
                                          std::span<const double> op_us, const DeviceProfile& d,
                                          const std::string& nvme_path, RunResult* out,
                                          int64_t chunk = 0) {
  HostBackendOptions ho;
  ho.link = d;
  ho.pace = false;
  auto backend = make_host_backend(ho);
  RunOptions ro;
  ro.iterations = 2;
  ro.time_scale = 0;
  ro.nvme_path = nvme_path;
  ro.nvme_chunk_bytes = chunk;
  std::map<TensorId, uint64_t> sums;
  ro.final_value = [&](TensorId t, const std::byte* data, int64_t bytes) {
    sums[t] = synthetic::checksum_buffer(data, bytes);
  };
  *out = run_plan(*backend, g, p, op_us, ro);
  return sums;
}

TEST(RuntimeNvmeTier, PlansKeepTheirDataAcrossThreeTiers) {
  const uint64_t seed = testing::seed_from_env(30);
  std::printf("seed %llu (SA_TEST_SEED)\n", static_cast<unsigned long long>(seed));
  const DeviceProfile d = link_with_nvme();
  const testing::TempDir dir(nvme_dir());
  int ran = 0;
  for (uint64_t k = 0; k < 6; ++k) {
    SCOPED_TRACE(::testing::Message() << "graph seed " << seed + k);
    Graph g = testing::random_graph(24, seed + k);
    for (Tensor& t : g.tensors)  // over a staging chunk now and then: several chunks
      if (t.bytes > 900) t.bytes = 9 * 1024 * 1024 + 123;
    const auto c = testing::host_budget_case(g, d);
    if (!c) continue;
    const Problem pb(g, d, c->budget, 1.0, {}, c->host_budget);
    Planner planner(pb);
    Plan p;
    if (!planner.plan(c->order, nullptr, {}, &p).ok) continue;  // the staging did not fit
    ASSERT_FALSE(p.nvme_tensors.empty());
    ASSERT_TRUE(verify_plan(g, p).ok) << verify_plan(g, p).violation;
    // The same plan with everything in host memory: the values to match.
    Plan same = p;
    same.host_budget = 0;
    same.nvme_tensors.clear();
    RunResult ref_run, run;
    const auto want = run_and_hash(g, same, pb.op_us, d, "", &ref_run);
    ASSERT_TRUE(ref_run.integrity_ok) << ref_run.integrity;
    const std::string path = dir / fmt::format("tier{}.bin", k);
    const auto got = run_and_hash(g, p, pb.op_us, d, path, &run);
    EXPECT_TRUE(run.integrity_ok) << run.integrity;
    EXPECT_EQ(got, want);
    // In chunks of 64 KiB: each 9 MiB tensor in 145, the last one short.
    RunResult chunked;
    EXPECT_EQ(run_and_hash(g, p, pb.op_us, d, path, &chunked, 64 << 10), want);
    EXPECT_TRUE(chunked.integrity_ok) << chunked.integrity;
    EXPECT_GT(run.nvme_bytes, 0);
    EXPECT_FALSE(run.nvme_backend.empty());
    // One host arena of what the plan needs, within its budget (Note [Host arena]).
    EXPECT_EQ(run.host_bytes, host_use(g, p).total());
    EXPECT_LE(run.host_bytes, p.host_budget);
    EXPECT_EQ(ref_run.host_bytes, host_use(g, same).total());
    EXPECT_FALSE(std::filesystem::exists(path)) << "the run removes the file it made";
    ++ran;
  }
  EXPECT_GE(ran, 3) << "too few graphs planned with NVMe to test much";
}

TEST(RuntimeNvmeTier, APlanWithNvmeTensorsNeedsAFile) {
  const DeviceProfile d = link_with_nvme();
  Graph g;
  Plan p;
  std::vector<double> op_us;
  for (uint64_t seed = 30; seed < 60 && p.nvme_tensors.empty(); ++seed) {
    g = testing::random_graph(24, seed);
    for (Tensor& t : g.tensors)  // as above: tensors large enough to be worth NVMe
      if (t.bytes > 900) t.bytes = 9 * 1024 * 1024 + 123;
    const auto c = testing::host_budget_case(g, d);
    if (!c) continue;
    const Problem pb(g, d, c->budget, 1.0, {}, c->host_budget);
    Planner planner(pb);
    if (!planner.plan(c->order, nullptr, {}, &p).ok) p.nvme_tensors.clear();
    op_us = pb.op_us;
  }
  ASSERT_FALSE(p.nvme_tensors.empty()) << "no graph of seeds 30-59 planned with NVMe tensors";
  RunResult r;
  const std::string why = testing::error_of([&] { run_and_hash(g, p, op_us, d, "", &r); });
  EXPECT_NE(why.find("--nvme-file"), std::string::npos) << why;
  const std::string bad =
      testing::error_of([&] { run_and_hash(g, p, op_us, d, "/nonexistent-dir/x.bin", &r); });
  EXPECT_NE(bad.find("/nonexistent-dir"), std::string::npos) << bad;
}

}  // namespace
}  // namespace sa::runtime
