#pragma once
// Checks for command-line option values, stricter than CLI11's own: CLI11's
// Range lets NaN through (every comparison with NaN is false) and prints its
// bounds with 309 digits, and its unsigned conversion turns "-1" and numbers
// of 2^64 or more into 2^64-1. Each validator's message names the value and
// what is allowed; CLI11 prefixes the option's name.
//
//   app->add_option("--time-scale", scale)->check(number_in(0, 1e6));

#include <cstdint>

#include <CLI/CLI.hpp>

namespace sa::cli {

// A finite number from lo to hi (inclusive).
CLI::Validator number_in(double lo, double hi);

// 0, or a finite number from lo to hi: for options where 0 means "off".
CLI::Validator zero_or_number_in(double lo, double hi);
// "auto", or as zero_or_number_in (run's --time-scale).
CLI::Validator auto_zero_or_number_in(double lo, double hi);

// A whole number (decimal, no sign for unsigned ranges) from lo to hi.
CLI::Validator integer_in(int64_t lo, int64_t hi);

// A seed: a decimal whole number from 0 to 2^64-1.
CLI::Validator seed_value();

// --cuda-device: 0 to 1023.
CLI::Validator cuda_device_index();

// --time-scale (run, bandwidth): 0 (as fast as possible), or from
// kMinTimeScale to kMaxTimeScale. Beyond these, paced times underflow to
// nothing or a microsecond op lasts days.
inline constexpr double kMinTimeScale = 1e-3;
inline constexpr double kMaxTimeScale = 1e6;

// --iterations of run: each needs its own checksums and timings.
inline constexpr int kMaxIterations = 1'000'000;

// A value that is not empty (--memory '').
CLI::Validator non_empty();

}  // namespace sa::cli
