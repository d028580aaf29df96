#pragma once
// Text put into the report page, escaped for where it goes.
//
// Note [Embedded JSON]
// --------------------
// The page's data is JSON inside <script type="application/json">. The HTML
// parser ends that element at the first "</script" and, after a "<!--", also
// looks for "<script" and "-->" (the script data escaped states): a name
// holding "<!--<script>" makes the element swallow the rest of the page, page
// script included, and nothing is drawn. JSON allows any character in a
// string to be written as \uXXXX, so script_json() writes every '<', '>' and
// '&' that way: none of those sequences can appear, and JSON.parse of the
// element's text gives the same value. U+2028 and U+2029 (line separators
// to older JavaScript) are escaped too, should the data ever be read as a
// script. Outside strings JSON has none of these characters.
//
//   script_json(R"({"name":"</script><!--"})")  {"name":"\u003c/script\u003e\u003c!--"}
//   escape_html("a<b & \"c\"")                  a&lt;b &amp; &quot;c&quot;

#include <string>
#include <string_view>

namespace sa {

// JSON text (valid UTF-8, as dump_json() writes it) made safe to put inside
// a <script> element.
std::string script_json(std::string_view json);

// Text for an HTML element or a quoted attribute value. Invalid UTF-8 bytes
// become U+FFFD.
std::string escape_html(std::string_view s);

}  // namespace sa
