#pragma once
// A small, fast, portable random number generator for the search.
//
// std::mt19937 and the std distributions are not specified bit for bit across
// standard libraries; the search promises the same plan for the same seed, so
// it uses its own: splitmix64 to derive streams, xoshiro256** to draw.
// Every child of the genetic search draws from its own stream, derived from
// (seed, generation, child index), which makes the result independent of how
// children are spread over threads.

#include <cmath>
#include <cstdint>

namespace sa {

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t s = seed;
    for (uint64_t& w : s_)
      w = splitmix64(s);
  }
  // An independent stream for (seed, a, b), e.g. (seed, generation, child).
  static Rng derive(uint64_t seed, uint64_t a, uint64_t b = 0) {
    uint64_t s = seed;
    uint64_t h = splitmix64(s);
    s = h ^ (a * 0xD1B54A32D192ED03ull);
    h = splitmix64(s);
    s = h ^ (b * 0x8CB92BA72F3D8DD7ull);
    return Rng(splitmix64(s));
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n); n > 0. Lemire's multiply-shift (bias < n / 2^64).
  uint32_t below(uint32_t n) {
    return static_cast<uint32_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  // Uniform in [lo, hi].
  int32_t between(int32_t lo, int32_t hi) {
    return lo + static_cast<int32_t>(below(static_cast<uint32_t>(hi - lo + 1)));
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return uniform() < p; }
  // Standard normal (Box-Muller; one value per call).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace sa
