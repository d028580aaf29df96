#pragma once
// Lower bounds on the iteration time of any plan, for reporting beside
// results (paper-notes.md, "Bounds worth reporting").
//
// Note [Transfer bound]
// ---------------------
// Fix the op order. When op p runs, the device holds at most `budget` bytes,
// among them everything op p touches (a swap-in holds its object from the
// moment it starts). Two kinds of bytes are needed again after p:
//   - transient tensors live at p (created before p, used again after it);
//   - persistent tensors (parameters, optimizer state, inputs) that some op
//     after p accesses.
// Those not on the device during p are copied in after p ends, so
//     in(p) >= live transient bytes + bytes op p touches
//                + persistent bytes accessed after p (and not by p) - budget
// and the iteration lasts at least
//     max(compute before p, out(p) / d2h) + op p + max(compute after p, in(p) / h2d)
// where out(p) = in(p) - those persistent bytes: the transient part, which
// was created on the device and so copied out before p (a persistent tensor
// may have stayed on the host). Each direction at its full one-way bandwidth
// (sharing the duplex link only slows it down: Note [Duplex in the bound]).
// The bound is the maximum over p, and never less than the compute bound
// (the sum of op times). It holds for plans with this order; another order
// may have a lower peak.
//
// Note [Recompute bound]
// ----------------------
// With recomputation a transient live at p need not cross the link: it may
// be dropped and made again, at a cost in compute (below).
// What no plan can remake is what must cross it: the persistent tensors
// (parameters, gradients kept across iterations, optimizer state, inputs)
// and the transients whose producer may not run again (may_recompute:
// updates in place, or marked recompute: false). So, with T(p) the bytes op
// p touches (transient or not, and its workspace), N(p) the bytes of the
// transients live at p, not touched by p, that may not be remade, and P(p)
// the persistent bytes accessed after p and not by p:
//     in(p)  >= T(p) + N(p) + P(p) - budget
//     out(p) >= T(p) + N(p) - budget   (P(p) may have stayed on the host)
// and the iteration lasts at least what Note [Transfer bound] says with
// these, were remaking free. It is not: let X(p) be the bytes of the
// remakeable transients live at p and not touched by it. Those not on the
// device during p were either copied out before p and are copied in after
// it, or are remade after p, each by running its producer again. With x of
// them remade,
//     in(p)  >= T(p) + N(p) + P(p) + X(p) - x - budget
//     out(p) >= T(p) + N(p) + X(p) - x - budget
// and the compute after p grows by at least R(x): the fractional knapsack
// that remakes x bytes from the cheapest producers per byte first, charging
// a producer its op time in proportion to the bytes of its outputs in X(p)
// (running it remakes all of them; its inputs may cost more). The bound at p
// is the least over x in [0, X(p)] of
//     max(compute before p, out(p) / d2h) + op p
//         + max(compute after p + R(x), in(p) / h2d)
// (a convex function of x: src/plan/bounds.cpp walks the knapsack's
// segments). x = 0 is the swap-only bound at p; R = 0 and x = X(p) the
// bound that counted remaking free, which it replaces (issue 29: at Fig. 6's
// WResNet-152-10 that one said 100% of ideal). It holds for every plan of
// the order, recomputing or not.

// Note [Duplex in the bound]
// --------------------------
// Both directions together move at most the profile's duplex rate (the
// simulator's cap when both copy streams run). Besides the copies of Note
// [Transfer bound], two more are known at each op p:
//   - in_before(p) >= persistent bytes accessed at p or before - budget:
//     what was not on the device when the iteration began, copied in before
//     p starts;
//   - out_after(p) >= persistent bytes last updated at p or after - budget:
//     the updated tensors not on the device at the end carry their latest
//     value to the host, copied out after their update;
// so the half before p is also at least (out(p) + in_before(p)) / duplex and
// the half after it (in(p) + out_after(p)) / duplex. Where the duplex rate
// is the sum of the two directions this adds nothing.

// Note [Tiered transfer bound]
// ----------------------------
// With a host budget H and an NVMe tier (issue 30), the bytes off the
// device while op p runs are in host memory or on NVMe, and host memory
// holds at most H of them. So at least in(p) - H of the bytes copied in
// after p are read from NVMe after p, and at least out(p) - H of those
// copied out before p were written to it before p; each at the NVMe's full
// rate, overlapped with the link and compute as well as any plan could:
//     max(compute before p, out(p) / d2h, (out(p) - H) / nvme write) + op p
//         + max(compute after p, in(p) / h2d, (in(p) - H) / nvme read)
// With no host budget (H = 0 means unlimited) it is the bound above.

#include <cstdint>
#include <span>

#include "cost/device.h"
#include "graph/graph.h"

namespace sa {

struct TimeBound {
  double compute_us = 0;         // sum of op times
  double transfer_us = 0;        // Note [Transfer bound] for the given order
  OpId at_op = kNoOp;            // the op p that gives transfer_us
  int64_t off_device_bytes = 0;  // in(p)
  double remake_us = 0;          // R(x) at op p (Note [Recompute bound])
  double bound_us() const { return compute_us > transfer_us ? compute_us : transfer_us; }
};

// recompute: Note [Recompute bound] instead of Note [Transfer bound];
// host_budget > 0 with a profile that has an NVMe tier: Note [Tiered
// transfer bound].
TimeBound time_bound(const Graph& g, std::span<const OpId> order, std::span<const double> op_us,
                     const DeviceProfile& d, int64_t budget, bool recompute = false,
                     int64_t host_budget = 0);

}  // namespace sa
