#pragma once
// Strict JSON parsing for every file swapadvisor reads (graphs, plans,
// device profiles): nlohmann's parser driven through SAX so that it
//   - rejects a key repeated within one object (nlohmann would keep the last),
//   - rejects nesting deeper than 1000 levels (copying or dumping deeper
//     documents overflows the stack),
//   - turns every failure, numbers too large for a double included, into an
//     sa::Error "<origin>: <json path>: invalid JSON: ... at line L, column C",
//   - refuses documents over the limits of Note [Input limits]
//     (util/limits.h) before it has allocated that much.
// And small helpers for the readers that check what they read.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace sa {

nlohmann::json parse_json(std::string_view text, std::string_view origin);

// A string for an error message: JSON-quoted, at most 60 bytes of it, and
// never invalid UTF-8.
std::string quote(std::string_view s);

// j as JSON text (indented by `indent` spaces, or on one line with -1), for
// every JSON output (--json, --trace, the report's data). A string that is
// not valid UTF-8 (a device profile's file stem can be anything the file
// system allows) has its invalid bytes replaced by U+FFFD: nlohmann's
// dump() would throw (type_error 316), which is no error of the user's.
std::string dump_json(const nlohmann::json& j, int indent = -1);

// What a value is, for an error message: "null", "true", "the string \"x\"",
// "the number 5.5", "an array", "an object".
std::string describe(const nlohmann::json& j);

// j's value when j is an integer written as one (no fraction or exponent:
// 5.0 and 1e3 are not) within [lo, hi]; nullopt otherwise. nlohmann would
// convert 5.5 to 5 and 2^32 + 1 to a 32-bit 1.
std::optional<int64_t> json_integer(const nlohmann::json& j, int64_t lo, int64_t hi);

// Checked reads from a parsed document, for the readers of device profiles,
// exec files and values files. Every failure throws sa::Error
// "<origin>: <where>: <problem>", where is a JSON path ("ops[3].args[0]").
//
//   FieldReader r("p.json");
//   const int64_t n = r.integer(r.field(doc, "", "version"), "version", 1, 1);
class FieldReader {
 public:
  explicit FieldReader(std::string origin) : origin_(std::move(origin)) {}

  const std::string& origin() const { return origin_; }
  [[noreturn]] void fail(const std::string& where, const std::string& what) const;

  // obj's member key (obj an object), or nullptr.
  static const nlohmann::json* find(const nlohmann::json& obj, const char* key);
  // The member, or "<where>.<key>: missing required field".
  const nlohmann::json& field(const nlohmann::json& obj, const std::string& where,
                              const char* key) const;
  // json_integer(j, lo, hi), or "expected a whole number from lo to hi, got ...".
  int64_t integer(const nlohmann::json& j, const std::string& where, int64_t lo, int64_t hi) const;
  const std::string& string(const nlohmann::json& j, const std::string& where) const;
  const nlohmann::json& array(const nlohmann::json& j, const std::string& where) const;
  const nlohmann::json& object(const nlohmann::json& j, const std::string& where) const;
  // An optional string member: nullptr when absent.
  const std::string* optional_string(const nlohmann::json& obj, const std::string& where,
                                     const char* key) const;

  // "where.key", or "key" at the top level (where empty).
  static std::string member(const std::string& where, const char* key);

 private:
  std::string origin_;
};

}  // namespace sa
