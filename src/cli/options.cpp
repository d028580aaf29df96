#include "cli/options.h"

#include <charconv>
#include <cmath>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace sa::cli {
namespace {

std::string shown(const std::string& input) {
  constexpr size_t kMax = 40;
  return input.size() <= kMax
             ? "'" + input + "'"
             : fmt::format("'{}...' ({} characters)", input.substr(0, kMax), input.size());
}

// The whole of text as a T, or false.
template <typename T>
bool parse_whole(std::string_view text, T* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  if constexpr (std::is_floating_point_v<T>) {
    // from_chars would accept "nan" and "inf" too; they are refused below.
    const auto r = std::from_chars(text.data(), end, *out);
    return r.ec == std::errc() && r.ptr == end;
  } else {
    const auto r = std::from_chars(text.data(), end, *out, 10);
    return r.ec == std::errc() && r.ptr == end;
  }
}

// word: a word also allowed ("auto"), or empty.
CLI::Validator number_check(double lo, double hi, bool zero_ok, const std::string& word = "") {
  std::string range = zero_ok ? fmt::format("0 or a number from {:g} to {:g}", lo, hi)
                              : fmt::format("a number from {:g} to {:g}", lo, hi);
  if (!word.empty()) range = word + ", " + range;
  return CLI::Validator(
      [lo, hi, zero_ok, range, word](std::string& input) -> std::string {
        if (!word.empty() && input == word) return "";
        // A leading '+' is what a user may write; from_chars does not take it.
        std::string_view text = input;
        if (!text.empty() && text.front() == '+') text.remove_prefix(1);
        double v = 0;
        if (!parse_whole(text, &v) || !std::isfinite(v))
          return fmt::format("expected {}, got {}", range, shown(input));
        if (zero_ok && v == 0) return "";
        if (v < lo || v > hi) return fmt::format("expected {}, got {}", range, shown(input));
        return "";
      },
      (word.empty() ? "" : word + " or ") +
          (zero_ok ? fmt::format("0 or NUMBER in [{:g}, {:g}]", lo, hi)
                   : fmt::format("NUMBER in [{:g}, {:g}]", lo, hi)));
}

}  // namespace

CLI::Validator number_in(double lo, double hi) {
  return number_check(lo, hi, false);
}

CLI::Validator zero_or_number_in(double lo, double hi) {
  return number_check(lo, hi, true);
}

CLI::Validator auto_zero_or_number_in(double lo, double hi) {
  return number_check(lo, hi, true, "auto");
}

CLI::Validator integer_in(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& input) -> std::string {
        int64_t v = 0;
        if (!parse_whole(std::string_view(input), &v) || v < lo || v > hi)
          return fmt::format("expected a whole number from {} to {}, got {}", lo, hi, shown(input));
        return "";
      },
      fmt::format("INT in [{}, {}]", lo, hi));
}

CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        uint64_t v = 0;
        if (!parse_whole(std::string_view(input), &v))
          return fmt::format("expected a whole number from 0 to 2^64-1, got {}", shown(input));
        return "";
      },
      "UINT64");
}

CLI::Validator cuda_device_index() {
  return integer_in(0, 1023);
}

CLI::Validator non_empty() {
  return CLI::Validator(
      [](std::string& input) -> std::string { return input.empty() ? "must not be empty" : ""; },
      "");
}

}  // namespace sa::cli
