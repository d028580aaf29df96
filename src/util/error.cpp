#include "util/error.h"

namespace sa {

void throw_internal(const char* file, int line, const char* cond, const std::string& detail) {
  throw InternalError(
      fmt::format("internal error (a bug in swapadvisor) at {}:{}: check '{}' failed: {}", file,
                  line, cond, detail));
}

}  // namespace sa
