#pragma once
// The CUDA backend: the device arena is one cudaMalloc of exactly the budget,
// host storage is pinned (cudaMallocHost), the three streams are CUDA streams
// (copies with cudaMemcpyAsync on two of them), events are cudaEvents, and
// the synthetic kernels are CUDA kernels (runtime/cuda/cuda_kernels.cu) that
// compute what the host's do, bit for bit, and then spin on the GPU's global
// timer for the op's duration. Every CUDA call is checked (runtime/cuda/cuda_check.h).
//
// Built when CMake finds a CUDA toolkit (SA_HAVE_CUDA); otherwise these
// functions say so (runtime/cuda/cuda_stub.cpp). Code that needs a GPU asks
// cuda_device_count() first: it is 0, with the reason, on a machine without
// a driver or a device.

#include <memory>
#include <string>

#include "runtime/backend.h"

namespace sa::runtime {

// Whether this binary has the CUDA backend.
bool cuda_backend_built();

// The number of usable CUDA devices; 0 with the reason in *why when the
// backend is not built, the driver is missing or there is no device.
int cuda_device_count(std::string* why = nullptr);

struct CudaBackendOptions {
  int device = 0;
  // When set, launch_op calls it instead of launching the op's synthetic
  // kernel: it queues the op's real kernels on the compute stream it is given
  // (OpKernelHook, runtime/backend.h).
  OpKernelHook kernel;
  // Collective ops' kernels run staged through host memory with this
  // (runtime::exchange_words); unset: a plan with collectives is refused.
  CollectiveHook collective;
};

// Throws sa::Error when there is no such device (or no CUDA backend).
std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options);
inline std::unique_ptr<Backend> make_cuda_backend(int device = 0) {
  return make_cuda_backend(CudaBackendOptions{device, {}, {}});
}

}  // namespace sa::runtime
