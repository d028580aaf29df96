#pragma once
// Measured GEMM rates per math type, for the device profile `swapadvisor
// bandwidth` writes (docs/runtime.md, "swapadvisor bandwidth"): one short
// n x n x n matrix product per type, timed after a warm-up, best of the
// repeats. A measured rate replaces the datasheet peak the built-in profile
// would give.
//
// The CUDA backend times cuBLAS's cublasGemmEx in FP32 (CUBLAS_COMPUTE_32F,
// no TF32), TF32 (CUBLAS_COMPUTE_32F_FAST_TF32), FP16 and BF16 (inputs and
// output in the type, FP32 accumulation). FP8 GEMMs need cublasLt with
// scale factors on sm_89 and later and are not measured. The host backend
// has no GPU: it times a plain C++ FP32 matrix product on the CPU and
// measures no other type.

#include <string>

namespace sa::runtime {

struct MathRates {
  // TFLOP/s (10^12 flop/s) reached; 0 = not measured.
  double fp32 = 0, tf32 = 0, fp16 = 0, bf16 = 0, fp8 = 0;
  int n = 0;        // the GEMM's size
  int repeats = 0;  // timed runs per type
  std::string how;  // what was timed, for the profile's source string
};

// The CPU's FP32 rate with a cache-blocked C++ loop (REQUIRES: n >= 16,
// repeats >= 1).
MathRates measure_host_matmul(int n, int repeats);

// cuBLAS on CUDA device `device`; cuBLAS is loaded at run time (dlopen), so
// the binary does not depend on it. Throws sa::Error without the CUDA
// backend, a device or cuBLAS (runtime/cuda/cuda_gemm.cpp,
// runtime/cuda/cuda_stub.cpp).
MathRates measure_cuda_matmul(int device, int n, int repeats);

}  // namespace sa::runtime
