#include "fuzz_common.h"

namespace sa::fuzz {

const std::string& data_dir() {
  static const std::string dir = [] {
    const char* env = std::getenv("SA_FUZZ_DATA");
    return std::string(env && *env ? env : SA_FUZZ_DATA);
  }();
  return dir;
}

}  // namespace sa::fuzz
