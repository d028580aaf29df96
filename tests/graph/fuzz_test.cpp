// Seeded random mutations of a valid graph: whatever the reader is given, it
// returns a graph that passes validate_graph() or throws sa::Error naming the
// origin; never another exception, a crash or a hang. The seed is printed;
// rerun a failure with SA_TEST_SEED=<seed> (and SA_TEST_FUZZ_ITERATIONS=<n>
// for a longer run).

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "graph/graph_io.h"
#include "graph/validate.h"
#include "test_util.h"
#include "util/error.h"
#include "util/file_io.h"

namespace sa {
namespace {

constexpr const char* kGraph = R"({"format": "swapadvisor-graph", "version": 1, "name": "fuzz",
 "source": "tests/graph/fuzz_test.cpp",
 "tensors": [
  {"id": 0, "bytes": 4096, "kind": "input", "name": "x", "shape": [32, 32], "dtype": "float32"},
  {"id": 1, "bytes": 1024, "kind": "param", "name": "w"},
  {"id": 2, "bytes": 1024, "kind": "optimizer_state", "name": "w.momentum"},
  {"id": 3, "bytes": 8192, "kind": "activation"},
  {"id": 4, "bytes": 8192, "kind": "temp"},
  {"id": 5, "bytes": 8192, "kind": "gradient"},
  {"id": 6, "bytes": 1024, "kind": "gradient"},
  {"id": 7, "bytes": 64, "kind": "buffer"}
 ],
 "ops": [
  {"id": 0, "type": "aten::mm", "phase": "forward", "inputs": [0, 1], "outputs": [3],
   "flops": 65536, "bytes_accessed": 13312},
  {"id": 1, "type": "aten::relu_", "phase": "forward", "inputs": [7], "outputs": [4],
   "updates": [3], "workspace_bytes": 256},
  {"id": 2, "type": "loss_bwd", "phase": "backward", "inputs": [4, 3], "outputs": [5],
   "time_us": 2.5},
  {"id": 3, "type": "aten::mm_bwd", "phase": "backward", "inputs": [5, 0], "outputs": [6]},
  {"id": 4, "type": "sgd", "phase": "update", "inputs": [6], "outputs": [], "updates": [1, 2],
   "name": "step"}
 ]
}
)";

uint64_t test_seed() {
  return testing::seed_from_env(20240601);
}

int iterations(int fallback) {
  if (const char* s = std::getenv("SA_TEST_FUZZ_ITERATIONS")) return std::atoi(s);
  return fallback;
}

// Numbers that probe every limit: signs, zero, the int32/int64/uint64 and
// 2^50 boundaries, floats, overflow, underflow.
const std::vector<std::string> kNumbers = {
    "-1",
    "0",
    "1",
    "-0",
    "3",
    "7",
    "8",
    "1.5",
    "2.0",
    "1e3",
    "-1e30",
    "1e30",
    "1e308",
    "1e400",
    "-1e400",
    "1e-400",
    "2147483647",
    "2147483648",
    "-2147483649",
    "1125899906842624",
    "1125899906842625",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999999999",
};

// Fragments that are likely to keep the text almost valid JSON.
const std::vector<std::string> kTokens = {
    "[",    "]",  "{",        "}",         ",",       ":",       "\"",   "null",
    "true", "[]", "{}",       "\"id\": 1", "\\u0000", "\\ud800", "\xff", "\xc3\xa9",
    "0",    "-",  "\"kind\"", "\"temp\"",  "e",       ".",       "\n",   "\"updates\": [3]",
};

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  size_t below(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }

  // One random edit of text; says what it did in `log`.
  void mutate(std::string& text, std::string& log) {
    const size_t n = text.size();
    switch (below(7)) {
      case 0: {  // truncate
        const size_t at = below(n + 1);
        text.resize(at);
        log += "truncate@" + std::to_string(at) + " ";
        break;
      }
      case 1: {  // flip bits of one byte
        if (n == 0) break;
        const size_t at = below(n);
        text[at] = static_cast<char>(text[at] ^ (1 << below(8)));
        log += "flip@" + std::to_string(at) + " ";
        break;
      }
      case 2: {  // delete a span
        const size_t at = below(n + 1);
        const size_t len = below(std::min<size_t>(64, n - at) + 1);
        text.erase(at, len);
        log += "delete@" + std::to_string(at) + "+" + std::to_string(len) + " ";
        break;
      }
      case 3: {  // duplicate a span
        const size_t at = below(n + 1);
        const size_t len = below(std::min<size_t>(128, n - at) + 1);
        text.insert(at, text.substr(at, len));
        log += "dup@" + std::to_string(at) + "+" + std::to_string(len) + " ";
        break;
      }
      case 4:
      case 5: {                                          // replace a number with a boundary value
        std::vector<std::pair<size_t, size_t>> numbers;  // (start, length)
        for (size_t i = 0; i < n;) {
          if ((text[i] >= '0' && text[i] <= '9') || text[i] == '-') {
            size_t j = i + 1;
            while (j < n && ((text[j] >= '0' && text[j] <= '9') || text[j] == '.' ||
                             text[j] == 'e' || text[j] == 'E' || text[j] == '+' || text[j] == '-'))
              ++j;
            numbers.emplace_back(i, j - i);
            i = j;
          } else {
            ++i;
          }
        }
        if (numbers.empty()) break;
        const auto [at, len] = numbers[below(numbers.size())];
        const std::string& with = kNumbers[below(kNumbers.size())];
        text.replace(at, len, with);
        log += "number@" + std::to_string(at) + "=" + with + " ";
        break;
      }
      case 6: {  // insert a token
        const size_t at = below(n + 1);
        const std::string& token = kTokens[below(kTokens.size())];
        text.insert(at, token);
        log += "insert@" + std::to_string(at) + " ";
        break;
      }
    }
  }

 private:
  std::mt19937_64 rng_;
};

// Parses text and checks the outcome; returns true when it was accepted.
bool check_one(const std::string& text, const std::string& origin, const std::string& log) {
  try {
    const Graph g = parse_graph(text, origin);
    EXPECT_NO_THROW(validate_graph(g, origin)) << log;
    return true;
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(origin + ": ", 0), 0u) << log << "\nmessage: " << what;
    EXPECT_LT(what.size(), 2000u) << log << "\nmessage: " << what.substr(0, 2000);
  } catch (const std::exception& e) {
    ADD_FAILURE() << log << "\nnot an sa::Error: " << e.what();
  } catch (...) {
    ADD_FAILURE() << log << "\nthrew something that is not a std::exception";
  }
  return false;
}

TEST(Fuzz, MutatedGraphTextIsParsedOrRejected) {
  ASSERT_NO_THROW(parse_graph(kGraph, "fuzz"));
  const uint64_t seed = test_seed();
  const int n = iterations(2000);
  std::cout << "seed " << seed << " (set SA_TEST_SEED to change), " << n << " iterations\n";
  RecordProperty("seed", std::to_string(seed));
  Mutator m(seed);
  int accepted = 0;
  for (int i = 0; i < n && !HasFailure(); ++i) {
    std::string text = kGraph;
    std::string log = "seed " + std::to_string(seed) + " iteration " + std::to_string(i) + ": ";
    const size_t edits = 1 + m.below(3);
    for (size_t k = 0; k < edits; ++k)
      m.mutate(text, log);
    accepted += check_one(text, "fuzz-" + std::to_string(i), log);
  }
  std::cout << accepted << " of " << n << " mutants were valid graphs\n";
  // The mutations must reach past the JSON syntax into the graph rules.
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, n);
}

// The same through the gzip reader: mutations of the compressed bytes.
TEST(Fuzz, MutatedGzipIsReadOrRejected) {
  const uint64_t seed = test_seed() + 1;
  const int n = iterations(2000) / 4;
  std::cout << "seed " << seed << " (SA_TEST_SEED + 1), " << n << " iterations\n";
  RecordProperty("seed", std::to_string(seed));
  const auto dir = std::filesystem::temp_directory_path();
  const std::string packed_path =
      (dir / ("sa_fuzz_" + std::to_string(getpid()) + ".json.gz")).string();
  write_file(packed_path, kGraph);
  std::string packed;
  {
    std::ifstream in(packed_path, std::ios::binary);
    packed.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(packed.size(), 18u);
  Mutator m(seed);
  const std::string path =
      (dir / ("sa_fuzz_mutant_" + std::to_string(getpid()) + ".json.gz")).string();
  for (int i = 0; i < n && !HasFailure(); ++i) {
    std::string bytes = packed;
    std::string log = "seed " + std::to_string(seed) + " iteration " + std::to_string(i) + ": ";
    const size_t edits = 1 + m.below(2);
    for (size_t k = 0; k < edits; ++k)
      m.mutate(bytes, log);
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    try {
      const Graph g = read_graph(path);
      EXPECT_NO_THROW(validate_graph(g, path)) << log;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << log << "\n" << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << log << "\nnot an sa::Error: " << e.what();
    }
  }
  std::filesystem::remove(path);
  std::filesystem::remove(packed_path);
}

}  // namespace
}  // namespace sa
