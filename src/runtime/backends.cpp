#include "runtime/backends.h"

#include <fmt/format.h>

#include "runtime/cuda/cuda_backend.h"
#include "runtime/host/host_backend.h"
#include "runtime/mpi/ranks.h"
#include "util/error.h"

namespace sa::runtime {

std::unique_ptr<Backend> make_backend(const BackendOptions& o) {
  if (o.name == "host") {
    HostBackendOptions h;
    h.link = o.link;
    h.time_scale = o.time_scale;
    h.pace = o.pace;
    return make_host_backend(h);
  }
  if (o.name == "cuda") return make_cuda_backend({o.cuda_device, {}, exchange_words});
  throw Error(fmt::format("unknown backend '{}' (host or cuda)", o.name));
}

}  // namespace sa::runtime
