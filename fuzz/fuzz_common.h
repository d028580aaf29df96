#pragma once
// Shared by the libFuzzer targets (docs/fuzzing.md).
//
// A target feeds one input to a reader. An sa::Error is the reader saying
// no, which is fine; anything else that escapes (sa::InternalError, a
// nlohmann exception, std::bad_alloc), a sanitizer report, a leak or a hang
// is a finding. What a reader accepts must also round-trip where a writer
// exists: a mismatch is reported with fuzz_fail().

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "util/error.h"
#include "util/file_io.h"

namespace sa::fuzz {

// Gzip input inflates to at most this much here (the programs allow 256
// MiB): enough for every seed, and keeps a fuzzed gzip bomb fast.
constexpr int64_t kMaxInflated = int64_t{16} << 20;

inline std::string input(const uint8_t* data, size_t size) {
  return gunzip_if_gzip(std::string(reinterpret_cast<const char*>(data), size), "fuzz",
                        kMaxInflated);
}

[[noreturn]] inline void fuzz_fail(const char* what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what);
  std::abort();
}

// text was written by a writer from what a reader accepted: it must read
// back (read) and write again (write) to the same text.
template <typename Read, typename Write>
void check_round_trip(const std::string& text, Read&& read, Write&& write) {
  std::string again;
  try {
    again = write(read(text));
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    fuzz_fail("what was read does not read back after writing");
  }
  if (again != text) fuzz_fail("what was read does not round-trip through its writer");
}

// Runs body(); an sa::Error (the input refused) is the expected outcome.
template <typename F>
void refused_or_read(F&& body) {
  try {
    body();
  } catch (const Error&) {
  }
}

// The graphs the exec, values and plan targets check their input against, read
// once: tests/data/capture's tiny captures (and tests/data/plans' mlp-3).
const std::string& data_dir();

// The graph a JSON input names ({"graph": {"name": ...}}), or "" when it
// names none or is not JSON: which graph the exec and plan targets read it
// against.
std::string graph_name(const std::string& text);

}  // namespace sa::fuzz
