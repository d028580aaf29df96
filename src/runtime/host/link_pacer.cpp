#include "runtime/host/link_pacer.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "runtime/clock.h"
#include "util/error.h"

namespace sa::runtime {

LinkPacer::LinkPacer(const DeviceProfile& link, double time_scale, bool pace)
    : link_(link), pace_(pace) {
  set_time_scale(time_scale);
}

void LinkPacer::set_time_scale(double time_scale) {
  paced_ = pace_ && time_scale > 0;
  if (!paced_) return;
  SA_CHECK(link_.h2d_gbps > 0 && link_.d2h_gbps > 0 && link_.duplex_gbps > 0,
           "device profile '{}' has no link bandwidths", link_.name);
  rate_[0] = link_.h2d_bytes_per_us() / time_scale;
  rate_[1] = link_.d2h_bytes_per_us() / time_scale;
  duplex_scale_ = std::min(
      1.0, link_.duplex_bytes_per_us() / (link_.h2d_bytes_per_us() + link_.d2h_bytes_per_us()));
}

Clock::time_point LinkPacer::copy(Direction dir, std::byte* dst, const std::byte* src,
                                  int64_t bytes, Clock::time_point begin) {
  if (!paced_) {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    return Clock::now();
  }
  const int d = static_cast<int>(dir);
  active_[d].store(1, std::memory_order_relaxed);
  const int64_t chunk = std::max(kMinChunk, static_cast<int64_t>(rate_[d] * kChunkUs));
  auto due = begin;
  for (int64_t done = 0; done < bytes;) {
    const int64_t n = std::min(chunk, bytes - done);
    std::memcpy(dst + done, src + done, static_cast<size_t>(n));
    done += n;
    const bool both = active_[1 - d].load(std::memory_order_relaxed) != 0;
    due += from_us(static_cast<double>(n) / (rate_[d] * (both ? duplex_scale_ : 1.0)));
    if (done < bytes)
      std::this_thread::sleep_until(due);  // an overshoot is made up by the next chunks
    else
      sleep_until_precise(due);
  }
  active_[d].store(0, std::memory_order_relaxed);
  return due;
}

}  // namespace sa::runtime
