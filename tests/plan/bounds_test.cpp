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

}  // namespace
}  // namespace sa
