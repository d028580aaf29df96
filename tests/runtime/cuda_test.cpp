// The CUDA backend. Every test skips cleanly on a machine without a GPU (or
// in a build without the CUDA toolkit).

#include <gtest/gtest.h>

#include <cstring>

#include "baselines/baselines.h"
#include "graph/stats.h"
#include "plan/problem.h"
#include "random_graph.h"
#include "runtime/bandwidth.h"
#include "runtime/cuda/cuda_backend.h"
#if SA_TEST_CUDA_RUNTIME
#include <cuda_runtime_api.h>

#include "runtime/cuda/cuda_kernels.h"
#endif
#include "runtime/executor.h"
#include "runtime/host/host_backend.h"
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
  b->load_kernels(KernelTable{{}, {0}, {}, 0, {}}, dev.data(), 1);
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
    for (const char* method : {"odswap", "swap-all"})
      for (Allocator alloc : {Allocator::kSizeClass, Allocator::kArena}) {
        const BaselinePlan m = plan_baseline(method, pb, alloc);
        if (!m.feasible) continue;
        RunOptions o;
        o.iterations = 2;
        const RunResult r = run_plan(*b, g, m.plan, pb.op_us, o);
        EXPECT_EQ(r.integrity, "ok") << "seed " << seed << " " << method << " " << to_string(alloc);
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

#if SA_TEST_CUDA_RUNTIME
// An op kernel hook (the ATen kernels' way in) gets the compute stream and
// queues its work there: the checksum launched after it on the compute
// stream sees what the hook wrote, and the copy ordered after that by an
// event reads it back.
TEST(RuntimeCuda, AKernelHookQueuesItsWorkOnTheComputeStream) {
  SA_REQUIRE_GPU();
  const int64_t bytes = 1 << 22;
  std::vector<int32_t> calls;
  CudaBackendOptions o;
  o.kernel = [&](int32_t op, bool, std::span<const synthetic::KernelAccess> accesses,
                 std::byte* arena, void* stream) {
    calls.push_back(op);
    ASSERT_NE(stream, nullptr);
    ASSERT_EQ(accesses.size(), 1u);
    // Slow enough that a hook on another stream would lose the race.
    cuda::launch_delay(static_cast<cudaStream_t>(stream), 2'000'000);
    ASSERT_EQ(cudaMemsetAsync(arena + accesses[0].offset, 0x5a, accesses[0].bytes,
                              static_cast<cudaStream_t>(stream)),
              cudaSuccess);
  };
  auto b = make_cuda_backend(o);
  Buffer dev = b->alloc_device(bytes);
  Buffer back = b->alloc_host(bytes);
  KernelTable table;
  table.accesses.push_back(synthetic::KernelAccess{});
  table.accesses[0].offset = 0;
  table.accesses[0].bytes = bytes;
  table.op_begin = {0, 1};
  b->load_kernels(table, dev.data(), 1);
  b->clear_slots();
  b->launch_op(0, 0);
  b->launch_checksum(dev.data(), bytes, 0);
  auto done = b->create_event();
  b->record(Stream::kCompute, *done);
  b->wait(Stream::kD2H, *done);
  b->copy_d2h(back.data(), dev.data(), bytes);
  b->synchronize();
  EXPECT_EQ(calls, std::vector<int32_t>{0});
  std::vector<std::byte> expect(bytes, std::byte{0x5a});
  EXPECT_EQ(b->read_slots()[0], synthetic::checksum_buffer(expect.data(), bytes));
  EXPECT_EQ(std::memcmp(back.data(), expect.data(), bytes), 0);
}
#endif

TEST(RuntimeCuda, WithoutAGpuTheBackendSaysWhy) {
  std::string why;
  if (cuda_device_count(&why) > 0) GTEST_SKIP() << "a GPU is present";
  EXPECT_FALSE(why.empty());
  EXPECT_THROW(make_cuda_backend(), Error);
}

}  // namespace
}  // namespace sa::runtime
