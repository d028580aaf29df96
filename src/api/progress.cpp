#include "api/progress.h"

#include <unistd.h>

#include <cstdio>

namespace sa::api {

std::function<void(const SearchProgress&)> stderr_search_progress() {
  const bool tty = isatty(STDERR_FILENO);
  return [tty](const SearchProgress& p) {
    if (p.kind != SearchProgress::Kind::kGeneration)
      std::fprintf(stderr, "%s\n", p.line.c_str());
    else if (tty)
      std::fprintf(stderr, "\r%s\x1b[K%s", p.line.c_str(), p.last ? "\n" : "");
    else if (!p.unchanged)
      std::fprintf(stderr, "%s\n", p.line.c_str());
    std::fflush(stderr);
  };
}

}  // namespace sa::api
