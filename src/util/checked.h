#pragma once
// Integer arithmetic on sizes, offsets and strides read from files: each
// returns nullopt instead of overflowing, so that a reader can report the
// input as too large instead of wrapping around to a small, wrong number.
//
//   auto end = checked_add(offset, bytes);
//   if (!end || *end > file_size) throw Error(...);

#include <cstdint>
#include <optional>

namespace sa {

inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a * b + c, or nullopt when any step overflows.
inline std::optional<int64_t> checked_mul_add(int64_t a, int64_t b, int64_t c) {
  const auto m = checked_mul(a, b);
  return m ? checked_add(*m, c) : std::nullopt;
}

}  // namespace sa
