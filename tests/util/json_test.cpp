// util/json.h: the strict JSON parser every reader shares, and the checked
// field reads of the runtime's readers.

#include <cstdint>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "util/json.h"

namespace sa {
namespace {

using nlohmann::json;
using testing::error_of;

std::string parse_error(const std::string& text) {
  return error_of([&] { parse_json(text, "f.json"); });
}

TEST(Json, ParsesAndRejectsWithPaths) {
  const json j = parse_json(R"({"a": [1, {"b": "c"}], "d": 1.5})", "f.json");
  EXPECT_EQ(j["a"][1]["b"], "c");
  EXPECT_EQ(parse_error(R"({"a": 1, "a": 2})"),
            "f.json: a: duplicate key \"a\" (a key may appear only once in an object)");
  EXPECT_EQ(parse_error("  \n"), "f.json: (document): the input is empty (expected a JSON object)");
  EXPECT_EQ(parse_error(R"({"a": [1, 2)"),
            "f.json: a[1]: invalid JSON: parse error at line 1, column 12: syntax error while "
            "parsing array - unexpected end of input; expected ']'");
  EXPECT_EQ(parse_error(R"({"big": 1e400})"),
            "f.json: big: invalid JSON: number overflow parsing '1e400' (at line 1, column 14)");
  EXPECT_EQ(parse_error(std::string(1001, '[') + std::string(1001, ']')),
            "f.json: [0][0][0][0][0][0][0][0]...(991 more levels): JSON nested deeper than 1000 "
            "levels");
  EXPECT_EQ(parse_error(std::string(1000, '[') + std::string(1000, ']')), "(no error)");
}

// Note [Input limits]: a document that would take over 512 MiB is refused
// while it is read. "{}," costs 80 bytes (a 32-byte array slot, a 48-byte
// map) for 3 bytes of text: 6.7 million of them are over the limit.
TEST(Json, ADocumentOverTheMemoryLimitIsRefused) {
  std::string text = "[";
  const int64_t n = (int64_t{512} << 20) / 80 + 1000;
  text.reserve(static_cast<size_t>(3 * n + 2));
  for (int64_t i = 0; i < n; ++i)
    text += "{},";
  text += "{}]";
  const std::string err = parse_error(text);
  EXPECT_EQ(err.rfind("f.json: [", 0), 0u) << err;
  EXPECT_NE(err.find("]: the document would take over 512.0 MiB of memory (the limit for a JSON "
                     "input; not a swapadvisor file?)"),
            std::string::npos)
      << err;
  // A tenth of it is fine.
  EXPECT_EQ(parse_error("[" + text.substr(1, text.size() / 10 / 3 * 3) + "{}]"), "(no error)");
}

TEST(Json, DescribesValuesForMessages) {
  EXPECT_EQ(describe(json(nullptr)), "null");
  EXPECT_EQ(describe(json(true)), "true");
  EXPECT_EQ(describe(json("x")), "the string \"x\"");
  EXPECT_EQ(describe(json(5)), "the number 5");
  EXPECT_EQ(describe(json(5.0)), "the number 5.0");
  EXPECT_EQ(describe(json::array()), "an array");
  EXPECT_EQ(describe(json::object()), "an object");
  EXPECT_EQ(quote(std::string(100, 'a')), "\"" + std::string(60, 'a') + "...(100 bytes)\"");
}

TEST(Json, IntegersAreIntegersWrittenAsSuch) {
  EXPECT_EQ(json_integer(json::parse("5"), 0, 10), 5);
  EXPECT_EQ(json_integer(json::parse("-5"), -10, 10), -5);
  EXPECT_EQ(json_integer(json::parse("5.0"), 0, 10), std::nullopt);
  EXPECT_EQ(json_integer(json::parse("5.5"), 0, 10), std::nullopt);
  EXPECT_EQ(json_integer(json::parse("1e3"), 0, 10000), std::nullopt);
  EXPECT_EQ(json_integer(json::parse("\"5\""), 0, 10), std::nullopt);
  EXPECT_EQ(json_integer(json::parse("11"), 0, 10), std::nullopt);
  EXPECT_EQ(json_integer(json::parse("-1"), 0, 10), std::nullopt);
  // 2^32 + 1 is not a 32-bit 1; 2^64 - 1 is not an int64 -1.
  EXPECT_EQ(json_integer(json::parse("4294967297"), 0, INT32_MAX), std::nullopt);
  EXPECT_EQ(json_integer(json::parse("18446744073709551615"), INT64_MIN, INT64_MAX), std::nullopt);
  EXPECT_EQ(json_integer(json::parse("9223372036854775807"), 0, INT64_MAX), INT64_MAX);
}

TEST(Json, FieldReaderNamesFileAndPath) {
  const FieldReader r("f.json");
  const json doc = json::parse(R"({"a": {"n": 2.5, "s": 3}, "l": 7})");
  EXPECT_EQ(error_of([&] { r.field(doc, "", "zz"); }), "f.json: zz: missing required field");
  EXPECT_EQ(error_of([&] { r.field(doc["a"], "a", "zz"); }),
            "f.json: a.zz: missing required field");
  EXPECT_EQ(error_of([&] { r.field(doc["l"], "l", "zz"); }),
            "f.json: l: expected an object, got the number 7");
  EXPECT_EQ(error_of([&] { r.integer(doc["a"]["n"], "a.n", 0, 9); }),
            "f.json: a.n: expected a whole number from 0 to 9, got the number 2.5");
  EXPECT_EQ(error_of([&] { r.optional_string(doc["a"], "a", "s"); }),
            "f.json: a.s: expected a string, got the number 3");
  EXPECT_EQ(r.optional_string(doc["a"], "a", "absent"), nullptr);
  EXPECT_EQ(error_of([&] { r.array(doc, ""); }),
            "f.json: (document): expected an array, got an object");
  EXPECT_EQ(r.integer(doc["l"], "l", 7, 7), 7);
}

}  // namespace
}  // namespace sa
