#include <gtest/gtest.h>

#include "graph/dataflow.h"
#include "plan/bounds.h"
#include "test_util.h"

namespace sa {
namespace {

// op0: a = f()   op1: b = g()   op2: c = h(b)   op3: k(a, c): a waits.
testing::GraphBuilder chain() {
  testing::GraphBuilder b;
  auto a = b.tensor(100, TensorKind::kActivation);
  auto bb = b.tensor(100, TensorKind::kActivation);
  auto c = b.tensor(100, TensorKind::kActivation);
  b.op({}, {a});
  b.op({}, {bb});
  b.op({bb}, {c});
  b.op({a, c}, {});
  return b;
}

// The chain above with a parameter w (100 B) read by op0 and op3.
testing::GraphBuilder param_chain() {
  testing::GraphBuilder b;
  auto w = b.tensor(100, TensorKind::kParam);
  auto a = b.tensor(100, TensorKind::kActivation);
  auto bb = b.tensor(100, TensorKind::kActivation);
  auto c = b.tensor(100, TensorKind::kActivation);
  b.op({w}, {a});
  b.op({}, {bb});
  b.op({bb}, {c});
  b.op({w, a, c}, {});
  return b;
}

// The chain above.
// Budget 200 B, 1 B/us each way, 1 us per op. At op2 (creates c, reads b),
// a is live (read again by op3) but not touched: live transients a, b, c =
// 300, so at least 300 - 200 = 100 B of a are off the device during op2:
// copied out before it (100 us) and back after it (100 us).
//   T >= 100 + 1 + 100 = 201 us, at op2.
TEST(Bounds, TransferBoundByHand) {
  testing::GraphBuilder b = chain();
  const DeviceProfile d = testing::unit_link();
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
  testing::GraphBuilder b = param_chain();
  const DeviceProfile d = testing::unit_link();
  const std::vector<double> times(4, 1.0);
  const TimeBound t = time_bound(b.g, program_order(4), times, d, 250);
  EXPECT_EQ(t.transfer_us, 201);
  EXPECT_EQ(t.at_op, 2);
  EXPECT_EQ(t.off_device_bytes, 150);
}

// Note [Tiered transfer bound] on the graph above, with a host budget of
// 20 B and NVMe at 0.5 B/us read, 0.25 B/us write. At op2, out = 50 and
// in = 150: at least 30 B were written to NVMe before op2 (120 us) and
// 130 B are read from it after (260 us):
//   T >= max(2, 50, 120) + 1 + max(1, 150, 260) = 381 us.
// At op3 (out 50, in 50): max(3, 50, 120) + 1 + max(0, 50, 60) = 181 us;
// at op1 (in 50): 1 + 1 + max(2, 50, 60) = 62 us. With a host budget of
// 200 B NVMe takes nothing: 201 us as above.
TEST(Bounds, TieredBoundCountsNvmeBeyondTheHostBudget) {
  testing::GraphBuilder b = param_chain();
  DeviceProfile d = testing::unit_link();
  const std::vector<double> times(4, 1.0);
  // Without an NVMe tier the host budget changes nothing.
  EXPECT_EQ(time_bound(b.g, program_order(4), times, d, 250, false, 20).transfer_us, 201);
  d.nvme_read_gbps = 0.0005;
  d.nvme_write_gbps = 0.00025;
  const TimeBound t = time_bound(b.g, program_order(4), times, d, 250, false, 20);
  EXPECT_EQ(t.transfer_us, 381);
  EXPECT_EQ(t.at_op, 2);
  EXPECT_EQ(time_bound(b.g, program_order(4), times, d, 250, false, 200).transfer_us, 201);
  EXPECT_EQ(time_bound(b.g, program_order(4), times, d, 250, false, 0).transfer_us, 201);
}

// Note [Duplex in the bound]: parameters w1, w2, w3 (50 B each); op0, op1
// and op2 update w1, w2 and w3, op3 updates w1 and w2; budget 100 B, 1 B/us
// each way, 1.5 B/us both together, 1 us an op. During op2 (w3 on the
// device) at most one of w1, w2 is there too: 50 B come in after op2. Of the
// three tensors updated at op2 or later at most 100 B stay on the device at
// the end: 50 B go out after op2. Both share the link:
//   T >= 2 + 1 + max(1, 50 / 1, 100 / 1.5) = 3 + 200 / 3 us, at op2,
// where each direction on its own gives 3 + 50 = 53 us.
TEST(Bounds, DuplexCapsBothDirectionsAfterAnOp) {
  testing::GraphBuilder b;
  auto w1 = b.tensor(50, TensorKind::kParam);
  auto w2 = b.tensor(50, TensorKind::kParam);
  auto w3 = b.tensor(50, TensorKind::kParam);
  b.op({}, {}, {w1});
  b.op({}, {}, {w2});
  b.op({}, {}, {w3});
  b.op({}, {}, {w1, w2});
  DeviceProfile d = testing::unit_link();
  d.duplex_gbps = 0.0015;
  const std::vector<double> times(4, 1.0);
  const TimeBound t = time_bound(b.g, program_order(4), times, d, 100);
  EXPECT_NEAR(t.transfer_us, 3 + 200.0 / 3, 1e-9);
  EXPECT_EQ(t.at_op, 2);
  EXPECT_EQ(t.off_device_bytes, 50);
  // The same whatever is recomputed: nothing here may be remade.
  EXPECT_NEAR(time_bound(b.g, program_order(4), times, d, 100, true).transfer_us, 3 + 200.0 / 3,
              1e-9);
  // Where the shared cap is the sum of both directions it adds nothing.
  d.duplex_gbps = 0.002;
  EXPECT_EQ(time_bound(b.g, program_order(4), times, d, 100).transfer_us, 53);
}

// Note [Recompute bound] on the chain of TransferBoundByHand (budget 200 B):
// a need not cross the link when op0 may run again, but remaking it costs
// op0's 1 us (1/100 us per byte). At op2 (b and c on the device: 200 B) a is
// off the device: x of its 100 B remade after op2, the rest copied out and
// back:
//   T(x) = max(2, 100 - x) + 1 + max(1 + x / 100, 100 - x)
// least where 1 + x / 100 = 100 - x: x = 9900 / 101, T = 3 + 200 / 101 us
// (above the compute bound, 4 us, by what remaking a costs, less the bytes
// the fractional knapsack lets the link carry). When op0 may not run again
// (recompute: false), a must be copied out and back as without
// recomputation: 201 us at op2.
TEST(Bounds, RecomputeBoundByHand) {
  testing::GraphBuilder b = chain();
  const DeviceProfile d = testing::unit_link();
  const std::vector<double> times(4, 1.0);
  const TimeBound remade = time_bound(b.g, program_order(4), times, d, 200, true);
  EXPECT_NEAR(remade.transfer_us, 3 + 200.0 / 101, 1e-9);
  EXPECT_EQ(remade.at_op, 2);
  EXPECT_NEAR(remade.remake_us, 99.0 / 101, 1e-9);
  EXPECT_EQ(remade.off_device_bytes, 1);  // 200 / 101 B, rounded down
  // With op0 free to run again the bound is the compute bound.
  std::vector<double> free_op0 = times;
  free_op0[0] = 0;
  EXPECT_EQ(time_bound(b.g, program_order(4), free_op0, d, 200, true).bound_us(), 3);
  b.g.ops[0].recompute = false;
  const TimeBound kept = time_bound(b.g, program_order(4), times, d, 200, true);
  EXPECT_EQ(kept.transfer_us, 201);
  EXPECT_EQ(kept.at_op, 2);
  EXPECT_EQ(kept.off_device_bytes, 100);
  // Another op that may not run again changes nothing: b is touched by op2
  // (it is on the device anyway) and dead after it.
  b.g.ops[0].recompute = true;
  b.g.ops[1].recompute = false;
  EXPECT_NEAR(time_bound(b.g, program_order(4), times, d, 200, true).bound_us(), 3 + 200.0 / 101,
              1e-9);
}

// Note [Recompute bound]'s knapsack takes the cheapest bytes first and walks
// past its first segment. op0 makes a (100 B, 1 us: 0.01 us/B), op1 e (100
// B, 20 us: 0.2 us/B), op2 b, op3 c = h(b), op4 reads a and e, op5 c; 100 B
// each, 1 us an op but op1; budget 200 B. At op3 (b and c on the device) a
// and e are off it; x B of them remade, a first:
//   T(x) = max(22, 200 - x) + 1 + max(2 + R(x), 200 - x),
//   R(x) = x / 100 up to 100 B, then 1 + (x - 100) / 5.
// On the first segment T falls to 201 at x = 100; on the second the lines
// cross at 3 + (x - 100) / 5 = 200 - x, x = 217 / 1.2, where
//   T = 22 + 1 + 200 - 217 / 1.2 = 253 / 6 us, R = 103 / 6 us.
// Elsewhere less: at op4 (a, e on the device, c off) 24 + 200 / 101; at op2
// 22 + 400 / 101.
TEST(Bounds, RecomputeBoundRemakesTheCheapestBytesFirst) {
  testing::GraphBuilder b;
  auto a = b.tensor(100, TensorKind::kActivation);
  auto e = b.tensor(100, TensorKind::kActivation);
  auto bb = b.tensor(100, TensorKind::kActivation);
  auto c = b.tensor(100, TensorKind::kActivation);
  b.op({}, {a});
  b.op({}, {e});
  b.op({}, {bb});
  b.op({bb}, {c});
  b.op({a, e}, {});
  b.op({c}, {});
  const DeviceProfile d = testing::unit_link();
  const std::vector<double> times = {1, 20, 1, 1, 1, 1};
  const TimeBound t = time_bound(b.g, program_order(6), times, d, 200, true);
  EXPECT_EQ(t.compute_us, 25);
  EXPECT_EQ(t.at_op, 3);
  EXPECT_NEAR(t.transfer_us, 253.0 / 6, 1e-9);
  EXPECT_NEAR(t.remake_us, 103.0 / 6, 1e-9);
  EXPECT_EQ(t.off_device_bytes, 19);  // 200 - 217 / 1.2
  // Swap only, x = 0: 200 B out before op3 and in after it.
  EXPECT_EQ(time_bound(b.g, program_order(6), times, d, 200).transfer_us, 200 + 1 + 200);
}

// Parameters cross the link whatever is recomputed. w (100 B) is read by
// op0 and op3 and a by op3 only; budget 200 B. At op2 (touches b and c:
// 200 B) a may be remade, but w, needed by op3, is off the device:
//   in >= 200 + 0 + 100 - 200 = 100 B after op2: T >= 2 + 1 + max(1, 100) = 103 us.
// Swap-only, a must cross too: in >= 400 - 200 = 200 B, out >= 100 B:
//   T >= max(2, 100) + 1 + max(1, 200) = 301 us.
TEST(Bounds, RecomputeBoundCountsParameters) {
  testing::GraphBuilder b;
  auto w = b.tensor(100, TensorKind::kParam);
  auto a = b.tensor(100, TensorKind::kActivation);
  auto bb = b.tensor(100, TensorKind::kActivation);
  auto c = b.tensor(100, TensorKind::kActivation);
  b.op({w}, {a});
  b.op({}, {bb});
  b.op({bb}, {c});
  b.op({w, a}, {});
  b.op({c}, {});
  const DeviceProfile d = testing::unit_link();
  const std::vector<double> times(5, 1.0);
  const TimeBound rc = time_bound(b.g, program_order(5), times, d, 200, true);
  EXPECT_EQ(rc.at_op, 2);
  EXPECT_EQ(rc.off_device_bytes, 100);
  EXPECT_EQ(rc.transfer_us, 2 + 1 + 100);
  const TimeBound swap_only = time_bound(b.g, program_order(5), times, d, 200);
  EXPECT_EQ(swap_only.at_op, 2);
  EXPECT_EQ(swap_only.off_device_bytes, 200);
  EXPECT_EQ(swap_only.transfer_us, 100 + 1 + 200);
  EXPECT_LE(rc.bound_us(), swap_only.bound_us());
}

}  // namespace
}  // namespace sa
