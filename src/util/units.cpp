#include "util/units.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

namespace sa {

std::optional<int64_t> parse_bytes(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  // strtod would read hexadecimal ("0x10" as 16) too; nobody writes a size so.
  if (text.find_first_of("xX") != std::string_view::npos) return std::nullopt;
  // strtod reads the longest number prefix ("11.5", "1e9"); the rest is the unit.
  const std::string owned(text);
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(owned.c_str(), &end);
  if (end == owned.c_str() || errno == ERANGE) return std::nullopt;
  std::string_view unit(end);
  while (!unit.empty() && unit.front() == ' ')
    unit.remove_prefix(1);
  std::string u;
  for (char c : unit)
    u.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  double scale = 0;
  if (u.empty() || u == "b")
    scale = 1;
  else if (u == "k" || u == "kb")
    scale = 1e3;
  else if (u == "m" || u == "mb")
    scale = 1e6;
  else if (u == "g" || u == "gb")
    scale = 1e9;
  else if (u == "t" || u == "tb")
    scale = 1e12;
  else if (u == "kib")
    scale = 1024.0;
  else if (u == "mib")
    scale = 1024.0 * 1024;
  else if (u == "gib")
    scale = 1024.0 * 1024 * 1024;
  else if (u == "tib")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    return std::nullopt;
  double bytes = value * scale;
  if (!std::isfinite(bytes) || bytes < 1 || bytes > 9.0e18) return std::nullopt;
  double rounded = std::floor(bytes);
  return static_cast<int64_t>(rounded);
}

std::string format_bytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (b < 1024.0 * 1024) return fmt::format("{:.1f} KiB", b / 1024);
  if (b < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  if (b < 1024.0 * 1024 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  return fmt::format("{:.2f} TiB", b / (1024.0 * 1024 * 1024 * 1024));
}

std::string format_us(double us) {
  if (us < 1000) return fmt::format("{:.0f} us", us);
  if (us < 1e6) return fmt::format("{:.1f} ms", us / 1e3);
  return fmt::format("{:.2f} s", us / 1e6);
}

}  // namespace sa
