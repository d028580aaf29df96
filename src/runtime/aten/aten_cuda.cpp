// The CUDA placing allocator of the ATen kernels (runtime/aten/aten_cuda.h).

#include "runtime/aten/aten_cuda.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>
#include <unordered_set>

#include <c10/util/Exception.h>
#include <torch/csrc/api/include/torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/cuda/CUDAPluggableAllocator.h>
#endif

namespace sa::runtime::aten_cuda {
namespace {

PlacementSlots& slots() {
  static PlacementSlots s;
  return s;
}

std::mutex streams_mutex;
std::unordered_set<void*>& live_streams() {
  static std::unordered_set<void*> s;
  return s;
}

bool is_live(void* stream) {
  std::lock_guard lock(streams_mutex);
  return live_streams().contains(stream);
}

void* allocate(size_t n, cudaStream_t stream) {
  if (n == 0) return nullptr;
  if (void* p = slots().take(static_cast<int64_t>(n))) return p;
  void* p = nullptr;
  const cudaError_t e = cudaMallocAsync(&p, n, stream);
  if (e != cudaSuccess) {
    cudaGetLastError();
    TORCH_CHECK(false, "swapadvisor: a kernel's scratch allocation of ", n,
                " bytes outside the plan's arena failed: ", cudaGetErrorString(e));
  }
  slots().note_scratch(p, static_cast<int64_t>(n));
  return p;
}

void release(void* p, cudaStream_t stream) {
  if (!p || !slots().release(p)) return;  // a planned object stays
  // Errors are ignored: this runs from destructors, also at process exit.
  if (stream && is_live(stream))
    cudaFreeAsync(p, stream);
  else
    cudaFree(p);
  cudaGetLastError();
}

}  // namespace

void stream_begins(void* stream) {
  std::lock_guard lock(streams_mutex);
  live_streams().insert(stream);
}

void stream_ends(void* stream) {
  std::lock_guard lock(streams_mutex);
  live_streams().erase(stream);
}

PlacementSlots* placing_allocator(int device, std::string* why) {
#if TORCH_VERSION_MAJOR >= 2
  // Once per process: libtorch refuses to swap an allocator that has been
  // used, and ours has state for the whole process anyway.
  static const std::string failure = [device]() -> std::string {
    // Keep freed scratch in the pool instead of giving it back to the
    // driver at every synchronisation.
    cudaMemPool_t pool = nullptr;
    if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
      uint64_t keep = UINT64_MAX;
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
    cudaGetLastError();
    try {
      // The device argument's type differs between 2.x releases (int,
      // c10::DeviceIndex): generic lambdas take either.
      auto a = torch::cuda::CUDAPluggableAllocator::createCustomAllocator(
          [](size_t n, auto /*device*/, cudaStream_t s) -> void* { return allocate(n, s); },
          [](void* p, size_t /*n*/, auto /*device*/, cudaStream_t s) { release(p, s); });
      torch::cuda::CUDAPluggableAllocator::changeCurrentAllocator(a);
    } catch (const c10::Error& e) {
      return e.what_without_backtrace();
    }
    return "";
  }();
  if (failure.empty()) return &slots();
  if (why) *why = failure;
  return nullptr;
#else
  (void)device;
  if (why) *why = "libtorch " TORCH_VERSION " cannot swap its CUDA allocator (2.0 can)";
  return nullptr;
#endif
}

}  // namespace sa::runtime::aten_cuda
