#include <gtest/gtest.h>

#include "graph/dataflow.h"
#include "plan/bounds.h"
#include "test_util.h"

namespace sa {
namespace {

// op0: a = f()   op1: b = g()   op2: c = h(a, b) ... a chain where a waits.
// Budget 200 B, 1 B/us each way, 1 us per op. At op2 (creates c, reads b),
// a is live (read again by op3) but not touched: live transients a, b, c =
// 300, so at least 300 - 200 = 100 B of a are off the device during op2:
// copied out before it (100 us) and back after it (100 us).
//   T >= 100 + 1 + 100 = 201 us, at op2.
TEST(Bounds, TransferBoundByHand) {
  testing::GraphBuilder b;
  auto a = b.tensor(100, TensorKind::kActivation);
  auto bb = b.tensor(100, TensorKind::kActivation);
  auto c = b.tensor(100, TensorKind::kActivation);
  b.op({}, {a});
  b.op({}, {bb});
  b.op({bb}, {c});
  b.op({a, c}, {});
  DeviceProfile d;
  d.h2d_gbps = d.d2h_gbps = 0.001;
  d.duplex_gbps = 0.002;
  const std::vector<double> times(4, 1.0);
  const TimeBound t = time_bound(b.g, program_order(4), times, d, 200);
  EXPECT_EQ(t.compute_us, 4);
  EXPECT_EQ(t.transfer_us, 201);
  EXPECT_EQ(t.at_op, 2);
  EXPECT_EQ(t.off_device_bytes, 100);
  EXPECT_EQ(t.bound_us(), 201);
  // With room for everything the compute bound is all there is.
  EXPECT_EQ(time_bound(b.g, program_order(4), times, d, 300).bound_us(), 4);
}

// Parameters needed after the peak count too. w (100 B) is read by op0 and
// op3; budget 250 B. At op2 the live transients a, b, c (300 B) leave at least
// 50 B of a off the device (copied out before op2: 50 us, but two ops of
// compute come first only if longer: max(2, 50) = 50), and w is needed by op3
// but not touched by op2: at least 300 + 100 - 250 = 150 B come in after op2
// (150 us, more than the 1 us of compute left).
//   T >= max(2, 50) + 1 + max(1, 150) = 201 us, at op2.
// Without w the bound there would be 50 + 1 + 50 = 101 us.
TEST(Bounds, PersistentTensorsNeededLaterCount) {
  testing::GraphBuilder b;
  auto w = b.tensor(100, TensorKind::kParam);
  auto a = b.tensor(100, TensorKind::kActivation);
  auto bb = b.tensor(100, TensorKind::kActivation);
  auto c = b.tensor(100, TensorKind::kActivation);
  b.op({w}, {a});
  b.op({}, {bb});
  b.op({bb}, {c});
  b.op({w, a, c}, {});
  DeviceProfile d;
  d.h2d_gbps = d.d2h_gbps = 0.001;
  d.duplex_gbps = 0.002;
  const std::vector<double> times(4, 1.0);
  const TimeBound t = time_bound(b.g, program_order(4), times, d, 250);
  EXPECT_EQ(t.transfer_us, 201);
  EXPECT_EQ(t.at_op, 2);
  EXPECT_EQ(t.off_device_bytes, 150);
}

}  // namespace
}  // namespace sa
