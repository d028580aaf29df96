#pragma once
// Errors a user can cause (bad files, bad flags, impossible budgets) are
// thrown as sa::Error with a message that names the file, the location and
// the problem; the command-line front end prints it and exits non-zero.
// A broken internal invariant is SA_CHECK: it also throws (so that tests and
// the CLI report it instead of aborting), but its message says it is a bug.

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace sa {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

[[noreturn]] void throw_internal(const char* file, int line, const char* cond,
                                 const std::string& detail);

}  // namespace sa

#define SA_CHECK(cond, ...)                                                                 \
  do {                                                                                      \
    if (!(cond)) ::sa::throw_internal(__FILE__, __LINE__, #cond, fmt::format(__VA_ARGS__)); \
  } while (0)
