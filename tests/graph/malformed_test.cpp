// The malformed-graph corpus: every file in tests/data/malformed/ breaks one
// rule of format v1, and tests/data/malformed/EXPECTED.tsv says which error
// the reader must give for it ("file<TAB>message after '<path>: '").

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "graph/graph_io.h"
#include "graph/validate.h"
#include "test_util.h"
#include "util/error.h"

namespace sa {
namespace {

using testing::data_path;

struct Case {
  std::string file;
  std::string expected;  // the message after "<path>: "
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.file;
}

std::vector<Case> read_manifest() {
  std::vector<Case> cases;
  std::ifstream in(data_path("malformed/EXPECTED.tsv"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    if (tab == std::string::npos) {
      cases.push_back({line, "<missing tab in EXPECTED.tsv>"});
      continue;
    }
    cases.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  return cases;
}

std::string test_name(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.file;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

class MalformedFile : public ::testing::TestWithParam<Case> {};

TEST_P(MalformedFile, IsRejectedWithItsError) {
  const Case& c = GetParam();
  const std::string path = data_path("malformed/" + c.file);
  ASSERT_TRUE(std::filesystem::is_regular_file(path)) << path << " is listed but missing";
  try {
    const Graph g = read_graph(path);
    FAIL() << path << " was accepted (" << g.num_tensors() << " tensors, " << g.num_ops()
           << " ops); expected: " << c.expected;
  } catch (const Error& e) {
    const std::string what = e.what();
    const std::string prefix = path + ": ";
    ASSERT_EQ(what.rfind(prefix, 0), 0u) << "the message does not start with the path: " << what;
    EXPECT_NE(what.find(c.expected), std::string::npos) << what;
    EXPECT_EQ(what.substr(prefix.size()), c.expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Malformed, MalformedFile, ::testing::ValuesIn(read_manifest()), test_name);

TEST(Malformed, ManifestCoversEveryFile) {
  const std::vector<Case> cases = read_manifest();
  EXPECT_GE(cases.size(), 30u);
  std::set<std::string> listed;
  for (const Case& c : cases) {
    EXPECT_TRUE(listed.insert(c.file).second) << c.file << " is listed twice";
    EXPECT_FALSE(c.expected.empty()) << c.file << " has no expected message";
  }
  for (const auto& entry : std::filesystem::directory_iterator(data_path("malformed"))) {
    const std::string name = entry.path().filename().string();
    if (name == "EXPECTED.tsv") continue;
    EXPECT_TRUE(listed.count(name))
        << "tests/data/malformed/" << name << " has no line in EXPECTED.tsv";
  }
}

// Near misses that are valid and must stay accepted.
constexpr const char* kValid = R"({
  "format": "swapadvisor-graph", "version": 1, "name": "NAME",
  "extra": EXTRA,
  "tensors": [
    {"id": 0, "bytes": 1125899906842623, "kind": "input"},
    {"id": 1, "bytes": 1, "kind": "activation"}
  ],
  "ops": [{"id": 0, "type": "t", "inputs": [0], "outputs": [1], "flops": 0, "time_us": 1e12}]
})";

std::string valid_with(const std::string& name, const std::string& extra) {
  std::string s = kValid;
  s.replace(s.find("NAME"), 4, name);
  s.replace(s.find("EXTRA"), 5, extra);
  return s;
}

TEST(Malformed, NearMissesAreAccepted) {
  // A 100,000-character name, a name in UTF-8 with escapes, nesting within
  // the limit in a field the reader does not know, sizes at the 2^50 limit, an op time
  // at the 10^12 us limit.
  const std::string long_name(100000, 'n');
  const Graph g = parse_graph(valid_with(long_name, "null"), "long-name");
  EXPECT_EQ(g.name.size(), 100000u);
  EXPECT_EQ(parse_graph(valid_with("r\\u00e9sum\\u00e9 \xe2\x9c\x93", "{}"), "utf8").name,
            "r\xc3\xa9sum\xc3\xa9 \xe2\x9c\x93");
  const std::string deep = std::string(900, '[') + std::string(900, ']');
  EXPECT_NO_THROW(parse_graph(valid_with("deep", deep), "deep"));
  EXPECT_NO_THROW(validate_graph(g, "long-name"));
}

TEST(Malformed, ErrorsFromParseGraphNameTheOrigin) {
  try {
    parse_graph(valid_with("x", "[1, 2"), "my origin");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("my origin: extra[2]: invalid JSON: ", 0), 0u)
        << e.what();
  }
}

}  // namespace
}  // namespace sa
