#include <fmt/format.h>

#include "runtime/cuda/cuda_check.h"
#include "util/error.h"

namespace sa::runtime {

void throw_cuda_error(const char* name, const char* description, const char* call, const char* file,
                      int line) {
  throw Error(fmt::format("{}:{}: {} failed: {} ({})", file, line, call, name, description));
}

void throw_error(const char* message) {
  throw Error(message);
}

}  // namespace sa::runtime
