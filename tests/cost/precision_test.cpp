// The op cost model per math type (docs/devices.md, "Op cost model"): a
// matmul's time on every built-in profile, against a roofline computed by
// hand from the datasheet figures, not by the code under test.
#include <array>
#include <string>

#include <gtest/gtest.h>

#include "cost/device.h"
#include "cost/op_cost.h"
#include "test_util.h"

namespace sa {
namespace {

// C[M,N] = A[M,K] B[K,N]: 2MNK flops, (MK + KN + MN) elements moved.
Op matmul(double m, double n, double k, MathType math, int elem_bytes) {
  Op op;
  op.type = "aten::mm";
  op.math = math;
  op.flops = 2 * m * n * k;
  op.bytes_accessed = (m * k + k * n + m * n) * elem_bytes;
  return op;
}

struct Expected {
  const char* device;
  // For fp32, tf32, fp16, bf16, fp8 in that order: {square 4096^3 GEMM (compute-
  // bound everywhere), skinny 16x8192x8192 GEMM (memory-bound everywhere)}, in us:
  //   max(flops / (rate TFLOP/s * 10^6 * 0.6), bytes / (hbm GB/s * 10^3 * 0.75))
  //   + launch overhead.
  // E.g. h100-80gb bf16, square: 137,438,953,472 / (989e6 * 0.6) = 231.613 us
  // vs 100,663,296 B / (3350e3 * 0.75) = 40.065 us, + 4 us = 235.613 us;
  // skinny: 2,147,483,648 flops / (989e6 * 0.6) = 3.6 us vs 134,479,872 B /
  // (3350e3 * 0.75) = 53.629 us, + 4 = 57.629 us. The v100 has no BF16 or TF32
  // units (FP32 rate: 14,590 us + 6) and no FP8 (the FP16 rate); the A100 no
  // FP8 (its FP16 rate, 312).
  std::array<std::array<double, 2>, 5> us;
};

constexpr Expected kExpected[] = {
    {"v100-16gb",
     {{{14596.122, 405.236},
       {14596.122, 405.236},
       {1838.519, 205.618},
       {14596.122, 233.971},
       {1838.519, 105.809}}}},
    {"a100-40gb",
     {{{11751.919, 236.069},
       {1473.365, 236.069},
       {739.182, 120.534},
       {739.182, 120.534},
       {739.182, 62.767}}}},
    {"h100-80gb",
     {{{3422.879, 111.257},
       {466.757, 111.257},
       {235.613, 57.629},
       {235.613, 57.629},
       {119.748, 30.814}}}},
    {"h200-141gb",
     {{{3422.879, 78.857},
       {466.757, 78.857},
       {235.613, 41.428},
       {235.613, 41.428},
       {119.748, 22.714}}}},
    {"gh200-96gb",
     {{{3422.879, 93.828},
       {466.757, 93.828},
       {235.613, 48.914},
       {235.613, 48.914},
       {119.748, 26.457}}}},
    {"gh200-144gb",
     {{{3422.879, 77.329},
       {466.757, 77.329},
       {235.613, 40.664},
       {235.613, 40.664},
       {119.748, 22.332}}}},
};

TEST(Precision, MatmulCostPerMathOnEveryBuiltin) {
  ASSERT_EQ(builtin_device_names().size(), std::size(kExpected));
  constexpr MathType kMath[] = {MathType::kFp32, MathType::kTf32, MathType::kFp16, MathType::kBf16,
                                MathType::kFp8};
  constexpr int kBytes[] = {4, 4, 2, 2, 1};
  for (const Expected& e : kExpected) {
    const DeviceProfile d = load_device(e.device);
    for (int m = 0; m < 5; ++m) {
      SCOPED_TRACE(std::string(e.device) + " " + std::string(to_string(kMath[m])));
      EXPECT_NEAR(estimate_op_us(matmul(4096, 4096, 4096, kMath[m], kBytes[m]), d), e.us[m][0],
                  1e-3);
      EXPECT_NEAR(estimate_op_us(matmul(16, 8192, 8192, kMath[m], kBytes[m]), d), e.us[m][1], 1e-3);
    }
  }
}

TEST(Precision, ProfileWithoutMathRatesCostsEverythingAtFp32) {
  // A format-1 profile written before the per-math fields: every math type
  // runs at peak_tflops, as before.
  const DeviceProfile d = parse_device(R"({"format":"swapadvisor-device","version":1,
      "memory_bytes":1e9,"h2d_gbps":10,"d2h_gbps":10,"peak_tflops":2,"hbm_gbps":1000})",
                                       "old.json");
  for (MathType m :
       {MathType::kFp32, MathType::kTf32, MathType::kFp16, MathType::kBf16, MathType::kFp8})
    EXPECT_EQ(d.math_tflops(m), 2) << to_string(m);
  // 2e9 flops / (2e6 flop/us * 0.6) + 5 us default overhead.
  EXPECT_NEAR(estimate_op_us(matmul(1000, 1000, 1000, MathType::kBf16, 2), d), 1671.667, 1e-3);
}

TEST(Precision, ProfileMathRatesReadWriteAndFallBack) {
  const DeviceProfile d = parse_device(R"({"format":"swapadvisor-device","version":1,
      "memory_bytes":1e9,"h2d_gbps":10,"d2h_gbps":10,"peak_tflops":2,"hbm_gbps":1000,
      "fp16_tflops":16,"bf16_tflops":15})",
                                       "p.json");
  EXPECT_EQ(d.math_tflops(MathType::kTf32), 2);
  EXPECT_EQ(d.math_tflops(MathType::kFp16), 16);
  EXPECT_EQ(d.math_tflops(MathType::kBf16), 15);
  EXPECT_EQ(d.math_tflops(MathType::kFp8), 16);  // no FP8: the FP16 rate
  const std::string text = device_to_json(d);
  EXPECT_NE(text.find("\"bf16_tflops\": 15"), std::string::npos) << text;
  EXPECT_EQ(text.find("tf32_tflops"), std::string::npos) << text;  // absent stays absent
  EXPECT_EQ(device_to_json(parse_device(text, "p.json")), text);
  EXPECT_EQ(testing::error_of([] {
              parse_device(R"({"format":"swapadvisor-device","version":1,"memory_bytes":1e9,
                  "h2d_gbps":10,"d2h_gbps":10,"peak_tflops":2,"hbm_gbps":1,"fp8_tflops":-1})",
                           "p.json");
            }),
            "p.json: fp8_tflops: must be a positive number, got -1");
}

}  // namespace
}  // namespace sa
