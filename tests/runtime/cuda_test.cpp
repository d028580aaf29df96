// The CUDA backend. Every test skips cleanly on a machine without a GPU (or
// in a build without the CUDA toolkit).

#include <gtest/gtest.h>

#include <cstring>

#include "baselines/baselines.h"
#include "graph/stats.h"
#include "plan/problem.h"
#include "random_graph.h"
#include "runtime/bandwidth.h"
#include "runtime/cuda_backend.h"
#include "runtime/executor.h"
#include "runtime/host_backend.h"
#include "runtime/synthetic_op.h"
#include "util/error.h"

namespace sa::runtime {
namespace {

#define SA_REQUIRE_GPU()                                   \
  do {                                                     \
    std::string why;                                       \
    if (cuda_device_count(&why) == 0) GTEST_SKIP() << why; \
  } while (0)

TEST(RuntimeCuda, CopiesAndChecksumsMatchTheHost) {
  SA_REQUIRE_GPU();
  auto b = make_cuda_backend();
  const int64_t bytes = (1 << 20) + 3;
  Buffer dev = b->alloc_device(bytes + 8);
  Buffer host = b->alloc_host(bytes);
  Buffer back = b->alloc_host(bytes);
  synthetic::init_buffer(host.data(), bytes, 11);
  b->load_kernels(KernelTable{{}, {0}, 0}, dev.data(), 1);
  auto copied = b->create_event();
  b->copy_h2d(dev.data() + 1, host.data(), bytes);  // an unaligned object
  b->record(Stream::kH2D, *copied);
  b->wait(Stream::kCompute, *copied);
  b->clear_slots();
  b->launch_checksum(dev.data() + 1, bytes, 0);
  b->wait(Stream::kD2H, *copied);
  b->copy_d2h(back.data(), dev.data() + 1, bytes);
  b->synchronize();
  EXPECT_EQ(b->read_slots()[0], synthetic::checksum_buffer(host.data(), bytes));
  EXPECT_EQ(std::memcmp(back.data(), host.data(), bytes), 0);
}

// Random graphs planned by odswap, run on the GPU: the CUDA kernels compute
// what the host reference computes.
TEST(RuntimeCuda, PlansKeepTheirData) {
  SA_REQUIRE_GPU();
  auto b = make_cuda_backend();
  const DeviceProfile device = load_device("h100-80gb");
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    Graph g = testing::random_graph(8, seed);
    for (Tensor& t : g.tensors)
      t.bytes = t.bytes * 301 + (seed % 2 ? 3 : 0);
    const Problem pb(g, device, peak_live_bytes(g) * 6 / 10);
    for (const char* method : {"odswap", "swap-all"}) {
      const MethodResult m = run_baseline(method, pb);
      if (!m.feasible) continue;
      RunOptions o;
      o.iterations = 2;
      const RunResult r = run_plan(*b, g, m.plan, pb.op_us, o);
      EXPECT_EQ(r.integrity, "ok") << "seed " << seed << " " << method;
      EXPECT_LE(r.peak_device_bytes, pb.budget);
    }
  }
}

TEST(RuntimeCuda, LinkBandwidthIsMeasured) {
  SA_REQUIRE_GPU();
  auto b = make_cuda_backend();
  const LinkMeasurement m = measure_link(*b, 64 << 20, 4);
  EXPECT_GT(m.h2d_gbps, 1);
  EXPECT_GT(m.d2h_gbps, 1);
  EXPECT_GT(m.duplex_gbps, 1);
}

TEST(RuntimeCuda, WithoutAGpuTheBackendSaysWhy) {
  std::string why;
  if (cuda_device_count(&why) > 0) GTEST_SKIP() << "a GPU is present";
  EXPECT_FALSE(why.empty());
  EXPECT_THROW(make_cuda_backend(), Error);
}

}  // namespace
}  // namespace sa::runtime
