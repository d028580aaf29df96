#include "util/json.h"

#include <vector>

#include <fmt/format.h>

#include "util/error.h"
#include "util/limits.h"
#include "util/units.h"

namespace sa {

using json = nlohmann::json;

// A cut through a multi-byte character is replaced.
std::string quote(std::string_view s) {
  constexpr size_t kMax = 60;
  const bool cut = s.size() > kMax;
  std::string text = json(std::string(cut ? s.substr(0, kMax) : s))
                         .dump(-1, ' ', false, json::error_handler_t::replace);
  if (cut) text.insert(text.size() - 1, fmt::format("...({} bytes)", s.size()));
  return text;
}

std::string dump_json(const json& j, int indent) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

std::string describe(const json& j) {
  switch (j.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return j.get<bool>() ? "true" : "false";
    case json::value_t::string:
      return "the string " + quote(j.get_ref<const std::string&>());
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    case json::value_t::binary:
      return "binary data";
    default:
      return "the number " + j.dump();  // 1.0 prints as "1.0", 1e30 as "1e+30"
  }
}

std::optional<int64_t> json_integer(const json& j, int64_t lo, int64_t hi) {
  if (j.is_number_unsigned()) {
    const uint64_t u = j.get<uint64_t>();
    if (hi < 0 || u > static_cast<uint64_t>(hi) || static_cast<int64_t>(u) < lo)
      return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (j.is_number_integer()) {
    const int64_t v = j.get<int64_t>();
    if (v < lo || v > hi) return std::nullopt;
    return v;
  }
  return std::nullopt;
}

void FieldReader::fail(const std::string& where, const std::string& what) const {
  throw Error(fmt::format("{}: {}: {}", origin_, where.empty() ? "(document)" : where, what));
}

const json* FieldReader::find(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::string FieldReader::member(const std::string& where, const char* key) {
  return where.empty() ? std::string(key) : where + "." + key;
}

const json& FieldReader::field(const json& obj, const std::string& where, const char* key) const {
  const json* j = find(object(obj, where), key);
  if (!j) fail(member(where, key), "missing required field");
  return *j;
}

int64_t FieldReader::integer(const json& j, const std::string& where, int64_t lo,
                             int64_t hi) const {
  const std::optional<int64_t> v = json_integer(j, lo, hi);
  if (!v)
    fail(where, fmt::format("expected a whole number from {} to {}, got {}", lo, hi, describe(j)));
  return *v;
}

const std::string& FieldReader::string(const json& j, const std::string& where) const {
  if (!j.is_string()) fail(where, fmt::format("expected a string, got {}", describe(j)));
  return j.get_ref<const std::string&>();
}

const json& FieldReader::array(const json& j, const std::string& where) const {
  if (!j.is_array()) fail(where, fmt::format("expected an array, got {}", describe(j)));
  return j;
}

const json& FieldReader::object(const json& j, const std::string& where) const {
  if (!j.is_object()) fail(where, fmt::format("expected an object, got {}", describe(j)));
  return j;
}

const std::string* FieldReader::optional_string(const json& obj, const std::string& where,
                                                const char* key) const {
  const json* j = find(object(obj, where), key);
  return j ? &string(*j, member(where, key)) : nullptr;
}

namespace {

// A path component for an object key: ".bytes", or ["odd key"] for a key
// that is not a plain identifier.
std::string key_component(std::string_view key) {
  bool plain = !key.empty() && key.size() <= 60 && !(key[0] >= '0' && key[0] <= '9');
  for (char c : key)
    plain = plain && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_');
  return plain ? fmt::format(".{}", key) : fmt::format("[{}]", quote(key));
}

// Joins path components ("tensors", "[3]", ".bytes") into "tensors[3].bytes";
// a very deep path keeps its first components and counts the rest.
std::string join_path(const std::vector<std::string>& parts) {
  constexpr size_t kShown = 8;
  std::string s;
  for (size_t i = 0; i < parts.size() && i < kShown; ++i)
    s += parts[i];
  if (parts.size() > kShown) s += fmt::format("...({} more levels)", parts.size() - kShown);
  if (!s.empty() && s[0] == '.') s.erase(0, 1);
  return s.empty() ? "(document)" : s;
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; they
// may also quote the offending bytes, which need not be valid UTF-8, and a
// long token in full.
std::string clean_nlohmann_message(const std::string& what) {
  auto close = what.find("] ");
  std::string msg = close == std::string::npos ? what : what.substr(close + 2);
  const std::string marker = "last read: '";
  if (auto at = msg.find(marker); at != std::string::npos) {
    const size_t begin = at + marker.size();
    size_t end = msg.find("'; expected", begin);
    if (end == std::string::npos && msg.back() == '\'') end = msg.size() - 1;
    constexpr size_t kKeep = 40;
    if (end != std::string::npos && end > begin + kKeep + 3)
      msg.replace(begin, end - begin - kKeep, "...");
  }
  std::string out;
  out.reserve(msg.size());
  for (unsigned char c : msg) {
    if (c >= 0x80 || c < 0x20)
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  return out;
}

// 1-based line and column of a byte offset, for errors nlohmann reports
// without them.
std::string line_and_column(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return fmt::format("line {}, column {}", line, column);
}

// Builds the document from nlohmann's SAX events, like nlohmann's own DOM
// parser (no recursion: nlohmann parses with an explicit stack and destroys
// values iteratively), and in addition
//   - rejects a key repeated within one object (nlohmann would keep the last),
//   - rejects nesting deeper than kMaxDepth (a graph file needs 4 levels):
//     nlohmann 3.11 parses and destroys a 10^6-deep array without recursion,
//     but copying or dump()ing one recurses and overflows the stack,
//   - knows where in the document it is, so that a syntax error names the
//     JSON path where it happened,
//   - stops when the document would take more than kMaxJsonDocumentBytes
//     (Note [Input limits]): a few MB of "[0,0,0,..." make gigabytes of
//     nlohmann values, and running out of memory while nlohmann destroys a
//     half-built document aborts (its destructor allocates).
class DomBuilder {
 public:
  static constexpr size_t kMaxDepth = 1000;

  explicit DomBuilder(json& root) : root_(root) {}

  bool null() { return value(nullptr) != nullptr; }
  bool boolean(bool v) { return value(v) != nullptr; }
  bool number_integer(json::number_integer_t v) { return value(v) != nullptr; }
  bool number_unsigned(json::number_unsigned_t v) { return value(v) != nullptr; }
  bool number_float(json::number_float_t v, const std::string&) { return value(v) != nullptr; }
  // The lexer clears its token buffer before it reads the next token, so
  // the strings can be moved from.
  bool string(std::string& v) { return value(std::move(v)) != nullptr; }
  bool binary(json::binary_t& v) { return value(std::move(v)) != nullptr; }

  bool start_object(size_t) { return open(json::value_t::object); }
  bool start_array(size_t) { return open(json::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& k) {
    if (!charge(kMemberBytes + heap_bytes(k))) return false;
    Frame& f = stack_.back();
    auto [it, inserted] = f.container->get_ptr<json::object_t*>()->try_emplace(std::move(k));
    if (!inserted) {
      error_ = fmt::format("{}: duplicate key {} (a key may appear only once in an object)",
                           path(&it->first), quote(it->first));
      return false;
    }
    f.key = &it->first;
    f.slot = &it->second;
    return true;
  }

  template <class Exception>
  bool parse_error(size_t position, const std::string&, const Exception& e) {
    error_position_ = position;
    error_ = clean_nlohmann_message(e.what());
    is_syntax_error_ = std::is_same_v<Exception, json::parse_error>;
    return false;
  }

  // After a failed parse: the complete message after "<origin>: ".
  std::string error(std::string_view text) const {
    if (error_position_ == std::string::npos) return error_;  // ours, already with a path
    std::string msg = path(nullptr) + ": invalid JSON: " + error_;
    // nlohmann's syntax errors say where they are; its other errors (a
    // number too large for a double) do not.
    if (!is_syntax_error_) msg += " (at " + line_and_column(text, error_position_) + ")";
    return msg;
  }

 private:
  struct Frame {
    json* container;
    const std::string* key = nullptr;  // objects: the last key read
    json* slot = nullptr;              // objects: where that key's value goes
  };

  // Memory nlohmann keeps per value, on a 64-bit libstdc++: the json itself
  // (16 bytes; counted twice in an array, whose vector may hold as much
  // spare capacity as it uses), or a std::map node holding key and value in
  // an object (kMemberBytes, charged with the key); then what the value
  // allocates for itself.
  static constexpr int64_t kElementBytes = 2 * sizeof(json);
  static constexpr int64_t kMemberBytes = 32 + sizeof(std::string) + sizeof(json);
  static int64_t heap_bytes(const std::string& s) {
    return s.size() < 16 ? 0 : static_cast<int64_t>(s.size()) + 1;
  }
  template <typename V>
  static int64_t own_bytes(const V& v) {
    if constexpr (std::is_same_v<std::decay_t<V>, std::string>)
      return sizeof(std::string) + heap_bytes(v);
    else if constexpr (std::is_same_v<std::decay_t<V>, json::binary_t>)
      return sizeof(json::binary_t) + static_cast<int64_t>(v.size());
    else if constexpr (std::is_same_v<std::decay_t<V>, json::value_t>)
      return v == json::value_t::object ? sizeof(json::object_t) : sizeof(json::array_t);
    else
      return 0;
  }

  bool charge(int64_t bytes) {
    bytes_ += bytes;
    if (bytes_ <= kMaxJsonDocumentBytes) return true;
    error_ = fmt::format(
        "{}: the document would take over {} of memory (the limit for a JSON input; not a "
        "swapadvisor file?)",
        path(nullptr), format_bytes(kMaxJsonDocumentBytes));
    return false;
  }

  template <typename V>
  json* value(V&& v) {
    const bool in_array = !stack_.empty() && stack_.back().container->is_array();
    if (!charge(own_bytes(v) + (in_array ? kElementBytes : 0))) return nullptr;
    if (stack_.empty()) {
      root_ = json(std::forward<V>(v));
      return &root_;
    }
    Frame& f = stack_.back();
    if (f.container->is_array()) {
      auto& array = *f.container->get_ptr<json::array_t*>();
      array.emplace_back(std::forward<V>(v));
      return &array.back();
    }
    *f.slot = json(std::forward<V>(v));
    return f.slot;
  }

  bool open(json::value_t type) {
    if (stack_.size() >= kMaxDepth) {
      error_ = fmt::format("{}: JSON nested deeper than {} levels", path(nullptr), kMaxDepth);
      return false;
    }
    json* container = value(type);
    if (!container) return false;
    stack_.push_back(Frame{container});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  // The path of the value being read, or last read: every open container
  // and, in the innermost one, its last element. With key given, the path
  // of that key in the innermost object instead.
  std::string path(const std::string* key) const {
    std::vector<std::string> parts;
    for (size_t i = 0; i < stack_.size(); ++i) {
      const Frame& f = stack_[i];
      const std::string* k = (key && i + 1 == stack_.size()) ? key : f.key;
      if (f.container->is_array()) {
        if (!f.container->empty()) parts.push_back(fmt::format("[{}]", f.container->size() - 1));
      } else if (k) {
        parts.push_back(key_component(*k));
      }
    }
    return join_path(parts);
  }

  json& root_;
  std::vector<Frame> stack_;
  int64_t bytes_ = 0;  // estimated memory of the document so far
  std::string error_;
  size_t error_position_ = std::string::npos;
  bool is_syntax_error_ = false;
};

}  // namespace

json parse_json(std::string_view text, std::string_view origin) {
  if (static_cast<int64_t>(text.size()) > kMaxJsonInputBytes)
    throw Error(fmt::format("{}: over {} of JSON (the limit for a JSON input)", origin,
                            format_bytes(kMaxJsonInputBytes)));
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw Error(fmt::format("{}: (document): the input is empty (expected a JSON object)", origin));
  json doc;
  DomBuilder builder(doc);
  if (!json::sax_parse(text.begin(), text.end(), &builder))
    throw Error(fmt::format("{}: {}", origin, builder.error(text)));
  return doc;
}

}  // namespace sa
