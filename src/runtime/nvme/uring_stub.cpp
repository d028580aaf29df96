// Built without liburing: no io_uring engine (the threads engine remains).

#include "runtime/nvme/io_engine.h"

namespace sa::runtime {

std::unique_ptr<NvmeEngine> make_uring_engine(int, int, NvmeDone, std::string* why) {
  if (why) *why = "this build has no io_uring support (liburing was not found)";
  return nullptr;
}

}  // namespace sa::runtime
