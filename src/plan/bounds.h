#pragma once
// Lower bounds on the iteration time of any plan, for reporting beside
// results (paper-notes.md, "Bounds worth reporting").
//
// Note [Transfer bound]
// ---------------------
// Fix the op order. When op p runs, the device holds at most `budget` bytes,
// among them everything op p touches. Every transient tensor that is live at
// p (created before p, used again after p) but not on the device was created
// on the device, so it was copied out before p started, and it is needed
// later, so it is copied back in after p ended. If H(p) bytes of such
// tensors must be off the device,
//     H(p) >= live transient bytes at p + persistent bytes op p touches - budget,
// then no plan with this order can beat
//     T >= H(p) / d2h_bandwidth + op p's time + H(p) / h2d_bandwidth,
// with each direction at its full one-way bandwidth (sharing the duplex link
// only slows it down). The bound is the maximum over p, and never less than
// the compute bound (the sum of op times). It holds for plans with this
// order; another order may have a lower peak.

#include <cstdint>
#include <span>

#include "cost/device.h"
#include "graph/graph.h"

namespace sa {

struct TimeBound {
  double compute_us = 0;         // sum of op times
  double transfer_us = 0;        // Note [Transfer bound] for the given order
  OpId at_op = kNoOp;            // the op p that gives transfer_us
  int64_t off_device_bytes = 0;  // H(p)
  double bound_us() const { return compute_us > transfer_us ? compute_us : transfer_us; }
};

TimeBound time_bound(const Graph& g, std::span<const OpId> order, std::span<const double> op_us,
                     const DeviceProfile& d, int64_t budget);

}  // namespace sa
