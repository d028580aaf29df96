#pragma once
// Paced host copies: the host backend's model of the PCIe link.
//
// Note [Paced copies]
// -------------------
// A copy moves its bytes with memcpy in chunks, and after each chunk sleeps
// until the time the link would have needed for the bytes so far, counted
// from when the copy began on its stream's clock (Note [Stream clocks] in
// runtime/host/host_backend.cpp); a copy that begins late runs unpaced until it
// has made the time up. The rate is the simulator's (Note [Simulated
// streams] in plan/simulator.h): a direction alone runs at its bandwidth;
// while the other direction is also copying, each runs at bandwidth x
// min(1, duplex / (h2d + d2h)). The rate is re-read at every chunk (each
// about kChunkUs of wall time), so a copy slows down when the other
// direction starts and speeds up when it ends.
// Everything is stretched by the time scale: a link of 12 GB/s at time
// scale 10 moves 1.2 GB per wall second, which lets a host whose memcpy is
// slower than the emulated link keep up. With time scale 0 (or pacing off)
// copies are plain memcpy.

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "cost/device.h"
#include "runtime/clock.h"

namespace sa::runtime {

enum class Direction : uint8_t { kH2D = 0, kD2H = 1 };

class LinkPacer {
 public:
  static constexpr double kChunkUs = 100;         // wall time per chunk
  static constexpr int64_t kMinChunk = 64 << 10;  // 64 KiB

  // link: the bandwidths (GB/s) of a device profile. time_scale <= 0 or
  // pace = false: unpaced.
  LinkPacer(const DeviceProfile& link, double time_scale, bool pace);

  // Copies bytes from src to dst, taking as long as the link would if the
  // copy began at `begin` (the stream's clock: Note [Stream clocks] in
  // runtime/host/host_backend.cpp; with a begin in the past the copy runs
  // unpaced until it has made the time up). Returns when the link would
  // have finished (unpaced: when it did). Called by at most one thread per
  // direction at a time.
  Clock::time_point copy(Direction dir, std::byte* dst, const std::byte* src, int64_t bytes,
                         Clock::time_point begin);

  bool paced() const { return paced_; }

  // As if constructed with this time scale (no copy in flight).
  void set_time_scale(double time_scale);

 private:
  DeviceProfile link_;
  bool pace_ = false;
  bool paced_ = false;
  double rate_[2] = {0, 0};  // bytes per wall microsecond, alone
  double duplex_scale_ = 1;  // rate factor while both directions copy
  std::atomic<int> active_[2] = {0, 0};
};

}  // namespace sa::runtime
