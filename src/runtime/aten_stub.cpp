// The ATen kernel backend when swapadvisor is built without libtorch.

#include "runtime/aten_kernels.h"
#include "util/error.h"

namespace sa::runtime {

bool aten_available() {
  return false;
}

std::unique_ptr<AtenKernels> make_aten_kernels(const Graph&, const AtenProgram&,
                                               const AtenOptions&) {
  throw Error(
      "--kernels aten needs swapadvisor built with libtorch (SA_WITH_TORCH; on Debian: apt-get "
      "install libtorch-dev, then re-run cmake)");
}

}  // namespace sa::runtime
