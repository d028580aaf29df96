// The CUDA backend's entry points in a build without the CUDA toolkit.

#include "runtime/cuda/cuda_backend.h"
#include "runtime/math_rates.h"
#include "util/error.h"

namespace sa::runtime {

bool cuda_backend_built() {
  return false;
}

int cuda_device_count(std::string* why) {
  if (why) *why = "this swapadvisor was built without the CUDA toolkit (no nvcc found by CMake)";
  return 0;
}

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions&) {
  throw Error(
      "the CUDA backend is not available: this swapadvisor was built without the CUDA toolkit "
      "(install it and reconfigure; CMake looks for nvcc on PATH and in /usr/local/cuda)");
}

MathRates measure_cuda_matmul(int, int, int) {
  throw Error(
      "cannot measure GEMM rates on CUDA: this swapadvisor was built without the CUDA toolkit");
}

}  // namespace sa::runtime
