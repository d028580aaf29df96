#include <gtest/gtest.h>

#include "cost/op_cost.h"
#include "test_util.h"

namespace sa {
namespace {

DeviceProfile unit_device() {
  DeviceProfile d;
  d.name = "unit";
  d.peak_tflops = 1;  // 10^6 flop/us
  d.hbm_gbps = 1;     // 10^3 B/us
  d.compute_efficiency = 0.5;
  d.memory_efficiency = 0.5;
  d.launch_overhead_us = 2;
  return d;
}

TEST(OpCost, MeasuredTimeWins) {
  Op op;
  op.time_us = 7;
  op.flops = 1e12;
  EXPECT_EQ(estimate_op_us(op, unit_device()), 7);
}

TEST(OpCost, RooflineTakesTheSlowerBound) {
  Op op;
  op.flops = 1e6;           // 1e6 / (1e6 * 0.5) = 2 us
  op.bytes_accessed = 3e3;  // 3e3 / (1e3 * 0.5) = 6 us
  EXPECT_DOUBLE_EQ(estimate_op_us(op, unit_device()), 6 + 2);
  op.flops = 1e7;  // 20 us
  EXPECT_DOUBLE_EQ(estimate_op_us(op, unit_device()), 20 + 2);
}

TEST(OpCost, UncostedOpsGetOverheadAndOneWarning) {
  testing::GraphBuilder b;
  b.op({}, {}, {}, 1.0);
  b.op({}, {}, {}, 1.0);
  b.g.ops[0].time_us.reset();
  b.g.ops[1].time_us.reset();
  b.g.name = "g";
  std::vector<std::string> warnings;
  auto t = op_times_us(b.g, unit_device(), &warnings);
  EXPECT_EQ(t, (std::vector<double>{2, 2}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("2 of 2 ops"), std::string::npos);
  EXPECT_EQ(ideal_us(t), 4);
}

// Note [Input limits]: an op time, given or estimated, and times
// --compute-scale, is at most 10^12 us.
TEST(OpCost, TimesOverTheLimitAreNamed) {
  testing::GraphBuilder b;
  b.op({}, {}, {}, 1e12);  // at the limit
  b.op({}, {}, {}, 1.0);
  b.g.ops[1].time_us.reset();
  b.g.ops[1].flops = 1e300;  // 1e300 / (10^6 flop/us * 0.5) = 2e294 us
  b.g.name = "g";
  const DeviceProfile d = unit_device();
  std::vector<double> t = op_times_us(b.g, d);
  EXPECT_EQ(testing::error_of([&] { check_op_times(b.g, d, t); }),
            "g: ops[1] (test::op): its time is 2e+294 us (estimated from its flops and "
            "bytes_accessed and device unit's peak_tflops, hbm_gbps, efficiencies and "
            "launch_overhead_us), over the limit of 1e+12 us per op");
  b.g.ops[1].flops = 1e6;  // 2 us + 2 us overhead
  t = op_times_us(b.g, d);
  EXPECT_EQ(testing::error_of([&] { check_op_times(b.g, d, t); }), "(no error)");
  EXPECT_EQ(testing::error_of([&] { check_op_times(b.g, d, t, 1.5); }),
            "g: ops[0] (test::op): its time is 1.5e+12 us with --compute-scale 1.5 (its "
            "time_us), over the limit of 1e+12 us per op");
}

}  // namespace
}  // namespace sa
