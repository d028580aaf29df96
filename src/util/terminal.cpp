#include "util/terminal.h"

#include <fmt/format.h>

namespace sa {
namespace {

// Note [Names on a terminal]: the characters a terminal acts on, or that
// reorder the text around them.
bool acts_on_terminal(char32_t c) {
  return c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) || (c >= 0x202a && c <= 0x202e) ||
         (c >= 0x2066 && c <= 0x2069);
}

std::string escape(std::string_view s, bool keep_lines) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char32_t c = 0;
    const int n = utf8_sequence(s, i, &c);
    if (n == 0) {  // an invalid byte: its value in hex
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    if (keep_lines && (c == '\n' || c == '\t')) {
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (acts_on_terminal(c)) {
      out += c < 0x80 ? fmt::format("\\x{:02x}", static_cast<unsigned>(c))
                      : fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace

int utf8_sequence(std::string_view s, size_t i, char32_t* cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  int n;
  char32_t v;
  char32_t min;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2, v = c & 0x1f, min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3, v = c & 0x0f, min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4, v = c & 0x07, min = 0x10000;
  } else {
    return 0;  // a continuation byte, 0xc0, 0xc1 (always overlong) or 0xf5 and up
  }
  if (i + n > s.size()) return 0;
  for (int k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    v = (v << 6) | (b(i + k) & 0x3f);
  }
  if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
  *cp = v;
  return n;
}

std::string terminal_safe(std::string_view s) {
  return escape(s, false);
}

std::string terminal_message(std::string_view s) {
  return escape(s, true);
}

}  // namespace sa
