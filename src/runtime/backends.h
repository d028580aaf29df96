#pragma once
// Choosing a backend by name ("host" or "cuda"), for the command line and the
// benchmarks.

#include <memory>
#include <string>

#include "cost/device.h"
#include "runtime/backend.h"

namespace sa::runtime {

struct BackendOptions {
  std::string name = "host";  // "host" or "cuda"
  DeviceProfile link;         // host: paces the copies
  double time_scale = 1;      // host: copies take time_scale x the link's time
  bool pace = true;           // host: pace copies at all
  int cuda_device = 0;        // cuda: which GPU
};

// Throws sa::Error for an unknown name, or a CUDA backend that cannot run.
std::unique_ptr<Backend> make_backend(const BackendOptions& options);

}  // namespace sa::runtime
