#pragma once
// Wall-clock helpers of the runtime.

#include <chrono>
#include <thread>

namespace sa::runtime {

using Clock = std::chrono::steady_clock;

inline Clock::duration from_us(double us) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::micro>(us));
}

inline double to_us(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

// Sleeps until t, then yields for the last stretch: sleep_until alone can
// overshoot by 50-100 us, which adds up over thousands of steps.
inline void sleep_until_precise(Clock::time_point t) {
  constexpr auto kSpin = std::chrono::microseconds(200);
  while (true) {
    const auto now = Clock::now();
    if (now >= t) return;
    if (t - now > kSpin)
      std::this_thread::sleep_for(t - now - kSpin);
    else
      std::this_thread::yield();
  }
}

}  // namespace sa::runtime
