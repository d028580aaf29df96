#pragma once
// One check for every CUDA runtime call: a failure throws sa::Error naming
// the call, the file and line, and the error's name and description.
//
//   SA_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream));
//
// Included by .cu files only; the throwing half lives in cuda_error.cpp so
// that nvcc never compiles fmt.

namespace sa::runtime {

[[noreturn]] void throw_cuda_error(const char* name, const char* description, const char* call,
                                   const char* file, int line);
[[noreturn]] void throw_error(const char* message);  // sa::Error(message)

}  // namespace sa::runtime

#define SA_CUDA_CHECK(call)                                                                 \
  do {                                                                                      \
    const cudaError_t sa_cuda_status_ = (call);                                             \
    if (sa_cuda_status_ != cudaSuccess)                                                     \
      ::sa::runtime::throw_cuda_error(cudaGetErrorName(sa_cuda_status_),                    \
                                      cudaGetErrorString(sa_cuda_status_), #call, __FILE__, \
                                      __LINE__);                                            \
  } while (0)
