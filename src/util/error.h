#pragma once
// Two kinds of error, told apart by type so that the command-line front end
// can tell the user which one happened (exit status 1 or 2):
//
//   - sa::Error: something the user can cause and fix (a bad file, a bad
//     flag, an impossible budget). Its message names the file, the location
//     and the problem.
//   - sa::InternalError: a broken internal invariant, thrown by SA_CHECK (so
//     that tests and the CLI report it instead of aborting). Its message says
//     that it is a bug. It is deliberately not an sa::Error: code that
//     catches user errors to add context must not swallow bugs.

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace sa {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error(what) {}
};

[[noreturn]] void throw_internal(const char* file, int line, const char* cond,
                                 const std::string& detail);

}  // namespace sa

#define SA_CHECK(cond, ...)                                                                 \
  do {                                                                                      \
    if (!(cond)) ::sa::throw_internal(__FILE__, __LINE__, #cond, fmt::format(__VA_ARGS__)); \
  } while (0)
