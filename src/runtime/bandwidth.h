#pragma once
// Measures the link between host and device memory through a backend: each
// direction alone, then both at once (the duplex total), with the backend's
// host buffers (pinned on CUDA). On the host backend with paced copies it
// measures the pacer (a test checks that it recovers the profile).

#include <cstdint>

#include "runtime/backend.h"

namespace sa::runtime {

struct LinkMeasurement {
  double h2d_gbps = 0;     // host→device alone, GB/s (10^9 B/s)
  double d2h_gbps = 0;     // device→host alone
  double duplex_gbps = 0;  // both directions together, total
  int64_t bytes = 0;       // per copy
  int repeats = 0;         // copies per measurement
};

// REQUIRES: bytes > 0, repeats >= 2.
LinkMeasurement measure_link(Backend& backend, int64_t bytes, int repeats);

}  // namespace sa::runtime
