#pragma once
// Byte counts and durations as people write and read them.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sa {

// Parses "16GB", "11.5GiB", "512MiB", "1e9", "4096" (plain numbers are bytes).
// Decimal units (kB, MB, GB, TB) are powers of 1000, binary ones (KiB, MiB,
// GiB, TiB) powers of 1024. Returns nullopt for anything else, including
// negative, zero-or-fractional-byte and overflowing values, NaN, infinity
// and hexadecimal.
std::optional<int64_t> parse_bytes(std::string_view text);

// "1.50 GiB", "37.6 MiB", "512 B".
std::string format_bytes(int64_t bytes);

// "12.3 ms", "850 us", "2.10 s".
std::string format_us(double microseconds);

}  // namespace sa
