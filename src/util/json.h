#pragma once
// Strict JSON parsing for every file swapadvisor reads (graphs, plans,
// device profiles): nlohmann's parser driven through SAX so that it
//   - rejects a key repeated within one object (nlohmann would keep the last),
//   - rejects nesting deeper than 1000 levels (copying or dumping deeper
//     documents overflows the stack),
//   - turns every failure, numbers too large for a double included, into an
//     sa::Error "<origin>: <json path>: invalid JSON: ... at line L, column C".

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace sa {

nlohmann::json parse_json(std::string_view text, std::string_view origin);

// A string for an error message: JSON-quoted, at most 60 bytes of it, and
// never invalid UTF-8.
std::string quote(std::string_view s);

}  // namespace sa
