#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <span>
#include <thread>
#include <vector>

#include "runtime/bandwidth.h"
#include "runtime/host/host_backend.h"
#include "runtime/synthetic_op.h"
#include "runtime_test_util.h"

namespace sa::runtime {
namespace {

DeviceProfile link(double h2d, double d2h, double duplex) {
  DeviceProfile d;
  d.name = "test-link";
  d.h2d_gbps = h2d;
  d.d2h_gbps = d2h;
  d.duplex_gbps = duplex;
  return d;
}

// A slow copy (about 20 ms) and a checksum of its destination on the compute
// stream: with the event between them the checksum sees the copied bytes.
TEST(RuntimeHostBackend, EventsOrderStreams) {
  HostBackendOptions o;
  o.link = link(0.05, 0.05, 0.1);  // 50 kB per ms
  o.pace = true;
  auto b = make_host_backend(o);
  const int64_t bytes = 1 << 20;
  Buffer dev = b->alloc_device(bytes);
  Buffer host = b->alloc_host(bytes);
  synthetic::init_buffer(host.data(), bytes, 42);
  b->load_kernels(KernelTable{{}, {0}, {}, 0, {}}, dev.data(), 1);
  auto copied = b->create_event();
  b->copy_h2d(dev.data(), host.data(), bytes);
  b->record(Stream::kH2D, *copied);
  b->wait(Stream::kCompute, *copied);
  b->launch_checksum(dev.data(), bytes, 0);
  b->synchronize();
  EXPECT_EQ(b->read_slots()[0], synthetic::checksum_buffer(host.data(), bytes));
  EXPECT_EQ(std::memcmp(dev.data(), host.data(), bytes), 0);
}

TEST(RuntimeHostBackend, WaitingForAnUnrecordedEventDoesNotBlock) {
  auto b = make_host_backend({});
  auto never = b->create_event();
  auto done = b->create_event();
  b->wait(Stream::kCompute, *never);
  b->record(Stream::kCompute, *done);
  b->synchronize();
}

TEST(RuntimeHostBackend, AllocatesExactlyWhatIsAsked) {
  auto b = make_host_backend({});
  Buffer a = b->alloc_device(12345);
  EXPECT_EQ(a.bytes(), 12345);
  EXPECT_NE(a.data(), nullptr);
}

// A kernel slower than its op's duration is counted as late (Note [Time
// scale]): an output of 64 MiB (32,770 samples, each a cache miss) cannot be
// written in 1 us; one of 64 bytes easily fits in 20 ms.
TEST(RuntimeHostBackend, LateKernelsAreCounted) {
  auto b = make_host_backend({});
  const int64_t big = 64 << 20, small = 64;
  Buffer dev = b->alloc_device(big + small);
  using synthetic::KernelAccess;
  using synthetic::Role;
  KernelTable table;
  table.accesses = {KernelAccess{0, big, Role::kOutput, 0, 0, 0, 0},
                    KernelAccess{big, small, Role::kOutput, 0, 1, 0, 1}};
  table.op_begin = {0, 1, 2};
  table.num_slots = 2;
  b->load_kernels(table, dev.data(), 2);
  b->launch_op(0, 1);
  b->synchronize();
  const Backend::KernelOverrun late = b->take_kernel_overrun();
  EXPECT_EQ(late.kernels, 1);
  EXPECT_GT(late.wall_us, 0);
  const Backend::KernelOverrun again = b->take_kernel_overrun();
  EXPECT_EQ(again.kernels, 0);  // counting starts again
  EXPECT_EQ(again.wall_us, 0);
  b->launch_op(1, 20000);
  b->launch_op(1, 0);  // no duration: never late
  b->synchronize();
  EXPECT_EQ(b->take_kernel_overrun().kernels, 0);
}

// Note [Stream clocks]: op 0's kernel takes 10 ms for an op of 1 ms;
// op 1 (20 ms) makes the lost time up, so both end about 21 ms after the
// first began, not 30. (Under 27 ms: a loaded machine may add some.)
TEST(RuntimeHostBackend, ALateOpIsMadeUpByTheNext) {
  if (sa::testing::kSanitizedBuild) GTEST_SKIP() << "timings of a sanitizer build mean nothing";
  HostBackendOptions o;
  o.kernel = [](int32_t op, bool, std::span<const synthetic::KernelAccess>, std::byte*, void*) {
    if (op == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  };
  auto b = make_host_backend(o);
  Buffer dev = b->alloc_device(64);
  b->load_kernels(KernelTable{{}, {0, 0, 0}, {}, 0, {}}, dev.data(), 1);
  auto begin = b->create_event();
  auto end = b->create_event();
  b->record(Stream::kCompute, *begin);
  b->launch_op(0, 1000);
  b->launch_op(1, 20000);
  b->record(Stream::kCompute, *end);
  b->synchronize();
  EXPECT_GE(b->elapsed_us(*begin, *end), 21000);
  EXPECT_LT(b->elapsed_us(*begin, *end), 27000);
  EXPECT_EQ(b->take_kernel_overrun().kernels, 1);
}

// The clock never runs ahead of the issuing thread: an op issued after the
// stream sat idle still takes its whole duration.
TEST(RuntimeHostBackend, AnOpIssuedLateTakesItsWholeDuration) {
  auto b = make_host_backend({});
  Buffer dev = b->alloc_device(64);
  b->load_kernels(KernelTable{{}, {0, 0}, {}, 0, {}}, dev.data(), 1);
  b->launch_op(0, 1000);
  b->synchronize();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const auto t0 = std::chrono::steady_clock::now();
  b->launch_op(0, 20000);
  b->synchronize();
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(20));
}

// The best of three measurements: a loaded machine can only make copies
// slower than the pacer wants, never faster.
LinkMeasurement best_of_three(Backend& b, int64_t bytes, int repeats) {
  LinkMeasurement best;
  for (int i = 0; i < 3; ++i) {
    const LinkMeasurement m = measure_link(b, bytes, repeats);
    best.h2d_gbps = std::max(best.h2d_gbps, m.h2d_gbps);
    best.d2h_gbps = std::max(best.d2h_gbps, m.d2h_gbps);
    best.duplex_gbps = std::max(best.duplex_gbps, m.duplex_gbps);
  }
  return best;
}

// The paced link reproduces the profile's bandwidths, alone and both ways at
// once (Note [Paced copies]): 0.4 GB/s up, 0.2 GB/s down, 0.48 GB/s
// together (slow enough for a sanitizer build's memcpy).
TEST(RuntimeHostBackend, PacedLinkMatchesTheProfile) {
  HostBackendOptions o;
  o.link = link(0.4, 0.2, 0.48);
  o.pace = true;
  auto b = make_host_backend(o);
  const LinkMeasurement m = best_of_three(*b, 1 << 20, 4);
  EXPECT_NEAR(m.h2d_gbps, 0.4, 0.06);
  EXPECT_NEAR(m.d2h_gbps, 0.2, 0.03);
  EXPECT_NEAR(m.duplex_gbps, 0.48, 0.072);
}

// Time scale 4 makes the same copies four times slower.
TEST(RuntimeHostBackend, TimeScaleStretchesCopies) {
  HostBackendOptions o;
  o.link = link(1.6, 1.6, 3.2);
  o.pace = true;
  o.time_scale = 4;
  auto b = make_host_backend(o);
  const LinkMeasurement m = best_of_three(*b, 1 << 20, 3);
  EXPECT_NEAR(m.h2d_gbps, 0.4, 0.06);
  EXPECT_NEAR(m.d2h_gbps, 0.4, 0.06);
}

}  // namespace
}  // namespace sa::runtime
