// measure_cuda_matmul (runtime/math_rates.h): cuBLAS GEMMs per math type.
// cuBLAS is opened at run time, so that swapadvisor links and runs without
// it; only its header is needed to build.

#include <dlfcn.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "runtime/cuda/cuda_check.h"
#include "runtime/math_rates.h"

namespace sa::runtime {
namespace {

using CreateFn = cublasStatus_t (*)(cublasHandle_t*);
using DestroyFn = cublasStatus_t (*)(cublasHandle_t);
using StatusStringFn = const char* (*)(cublasStatus_t);
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);

struct Cublas {
  void* lib = nullptr;
  CreateFn create = nullptr;
  DestroyFn destroy = nullptr;
  StatusStringFn status_string = nullptr;
  GemmExFn gemm = nullptr;

  Cublas() {
    for (const char* name : {"libcublas.so", "libcublas.so.13", "libcublas.so.12",
                             "/usr/local/cuda/lib64/libcublas.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib)
      throw_error(
          "cuBLAS not found (dlopen libcublas.so): add the CUDA toolkit's lib64 to "
          "LD_LIBRARY_PATH to measure GEMM rates");
    create = reinterpret_cast<CreateFn>(dlsym(lib, "cublasCreate_v2"));
    destroy = reinterpret_cast<DestroyFn>(dlsym(lib, "cublasDestroy_v2"));
    status_string = reinterpret_cast<StatusStringFn>(dlsym(lib, "cublasGetStatusString"));
    gemm = reinterpret_cast<GemmExFn>(dlsym(lib, "cublasGemmEx"));
    if (!create || !destroy || !status_string || !gemm)
      throw_error("cuBLAS lacks cublasCreate_v2, cublasGemmEx or cublasGetStatusString");
  }
  ~Cublas() {
    if (lib) dlclose(lib);
  }
  void check(cublasStatus_t s, const char* call) const {
    if (s == CUBLAS_STATUS_SUCCESS) return;
    const std::string m = std::string(call) + " failed: " + status_string(s);
    throw_error(m.c_str());
  }
};

// Device memory and events freed whatever happens.
struct Scratch {
  void* p[3] = {nullptr, nullptr, nullptr};
  cudaEvent_t start = nullptr, stop = nullptr;
  ~Scratch() {
    for (void* q : p)
      if (q) cudaFree(q);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

struct Handle {
  const Cublas& api;
  cublasHandle_t h = nullptr;
  explicit Handle(const Cublas& c) : api(c) { api.check(api.create(&h), "cublasCreate"); }
  ~Handle() {
    if (h) api.destroy(h);
  }
};

// TFLOP/s of the best of `repeats` n^3 GEMMs with data type `type` and
// compute type `compute`, after one warm-up.
double time_gemm(const Cublas& api, cublasHandle_t h, Scratch& s, int n, int repeats,
                 cudaDataType type, cublasComputeType_t compute) {
  const float alpha = 1, beta = 0;
  auto run = [&] {
    api.check(api.gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, s.p[0], type, n, s.p[1], type,
                       n, &beta, s.p[2], type, n, compute, CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx");
  };
  run();
  SA_CUDA_CHECK(cudaDeviceSynchronize());
  float best_ms = 0;
  for (int r = 0; r < repeats; ++r) {
    SA_CUDA_CHECK(cudaEventRecord(s.start));
    run();
    SA_CUDA_CHECK(cudaEventRecord(s.stop));
    SA_CUDA_CHECK(cudaEventSynchronize(s.stop));
    float ms = 0;
    SA_CUDA_CHECK(cudaEventElapsedTime(&ms, s.start, s.stop));
    if (r == 0 || ms < best_ms) best_ms = ms;
  }
  return 2.0 * n * n * n / (static_cast<double>(best_ms) * 1e-3) / 1e12;
}

}  // namespace

MathRates measure_cuda_matmul(int device, int n, int repeats) {
  if (n < 16 || repeats < 1) throw_error("measure_cuda_matmul: n >= 16 and repeats >= 1");
  SA_CUDA_CHECK(cudaSetDevice(device));
  const Cublas api;
  Scratch s;
  const size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(n) * 4;  // room for FP32
  for (void*& q : s.p) {
    SA_CUDA_CHECK(cudaMalloc(&q, bytes));
    // 0x3c in every byte: small finite values in FP32, FP16 and BF16 alike.
    SA_CUDA_CHECK(cudaMemset(q, 0x3c, bytes));
  }
  SA_CUDA_CHECK(cudaEventCreate(&s.start));
  SA_CUDA_CHECK(cudaEventCreate(&s.stop));
  const Handle h(api);
  MathRates m;
  m.n = n;
  m.repeats = repeats;
  m.fp32 = time_gemm(api, h.h, s, n, repeats, CUDA_R_32F, CUBLAS_COMPUTE_32F);
  m.tf32 = time_gemm(api, h.h, s, n, repeats, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32);
  m.fp16 = time_gemm(api, h.h, s, n, repeats, CUDA_R_16F, CUBLAS_COMPUTE_32F);
  m.bf16 = time_gemm(api, h.h, s, n, repeats, CUDA_R_16BF, CUBLAS_COMPUTE_32F);
  m.how = "cuBLAS cublasGemmEx " + std::to_string(n) + "^3, best of " + std::to_string(repeats) +
          ", FP32 accumulation; FP8 not measured";
  return m;
}

}  // namespace sa::runtime
