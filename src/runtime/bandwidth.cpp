#include "runtime/bandwidth.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "util/error.h"

namespace sa::runtime {
namespace {

// Copies run back to back after a gate: the compute stream is kept busy for
// a while so that every copy is queued before the gate opens, then the copy
// streams start together.
constexpr double kGateUs = 2000;

}  // namespace

LinkMeasurement measure_link(Backend& b, int64_t bytes, int repeats) {
  SA_CHECK(bytes > 0 && repeats >= 2, "bytes {} repeats {}", bytes, repeats);
  Buffer dev = b.alloc_device(2 * bytes);
  Buffer up = b.alloc_host(bytes);
  Buffer down = b.alloc_host(bytes);
  std::byte* dev_in = dev.data();
  std::byte* dev_out = dev.data() + bytes;

  auto gate = b.create_event();
  std::vector<std::unique_ptr<Event>> ev_in, ev_out;
  for (int i = 0; i < repeats; ++i) {
    ev_in.push_back(b.create_event());
    ev_out.push_back(b.create_event());
  }
  // Warm-up: first copies pay for page mappings and lazy initialisation.
  b.copy_h2d(dev_in, up.data(), bytes);
  b.copy_d2h(down.data(), dev_out, bytes);
  b.synchronize();

  // Runs `repeats` copies in the chosen directions after one gate; returns
  // the end time of every copy since the gate.
  auto run = [&](bool h2d, bool d2h) {
    b.delay(Stream::kCompute, kGateUs);
    b.record(Stream::kCompute, *gate);
    if (h2d) b.wait(Stream::kH2D, *gate);
    if (d2h) b.wait(Stream::kD2H, *gate);
    for (int i = 0; i < repeats; ++i) {
      if (h2d) {
        b.copy_h2d(dev_in, up.data(), bytes);
        b.record(Stream::kH2D, *ev_in[i]);
      }
      if (d2h) {
        b.copy_d2h(down.data(), dev_out, bytes);
        b.record(Stream::kD2H, *ev_out[i]);
      }
    }
    b.synchronize();
    std::vector<double> in, out;
    for (int i = 0; i < repeats; ++i) {
      if (h2d) in.push_back(b.elapsed_us(*gate, *ev_in[i]));
      if (d2h) out.push_back(b.elapsed_us(*gate, *ev_out[i]));
    }
    return std::pair{in, out};
  };
  // GB/s from bytes per microsecond: / 1e3. Timed from the gate, not from
  // the first copy's end: the host backend's streams time their copies on
  // the emulated device's clock from the gate on (Note [Stream clocks] in
  // runtime/host/host_backend.cpp), so a first copy that ends late (its thread
  // woke up late) is made up by the next ones, and the time between the
  // first and the last end would overstate the rate.
  auto alone = [&](const std::vector<double>& ends) {
    return static_cast<double>(bytes) * repeats / ends.back() / 1e3;
  };

  LinkMeasurement m;
  m.bytes = bytes;
  m.repeats = repeats;
  m.h2d_gbps = alone(run(true, false).first);
  m.d2h_gbps = alone(run(false, true).second);

  // Both at once: count the bytes both directions moved until the first of
  // them finished (the in-flight copy of the other one pro rata).
  const auto [in, out] = run(true, true);
  const double t_end = std::min(in.back(), out.back());
  auto moved_by = [&](const std::vector<double>& ends) {
    double moved = 0, prev = 0;
    for (double e : ends) {
      if (e <= t_end) {
        moved += static_cast<double>(bytes);
      } else {
        if (t_end > prev) moved += static_cast<double>(bytes) * (t_end - prev) / (e - prev);
        break;
      }
      prev = e;
    }
    return moved;
  };
  m.duplex_gbps = (moved_by(in) + moved_by(out)) / t_end / 1e3;
  return m;
}

}  // namespace sa::runtime
