#pragma once
// Host memory and the NVMe tier over an iteration, for the report page and
// the trace (issue 30).
//
// Note [Host memory over time]
// ----------------------------
// The runtime reserves every host slot for the whole iteration (Note [Host
// arena] in plan/host_tier.h), so what it allocates is one figure. What the
// plot shows is what those slots hold at each moment: a slot holds a value
// from the start of its tensor's first swap-out until the end of its last
// swap-in (a value nobody reads again is dead), or all iteration when its
// tensor's home between iterations is the host (homes_on_host). The NVMe
// staging counts as held all iteration. The gap between the curve and the
// arena is what slots sharing bytes by lifetime could save; values of
// tensors on NVMe are counted in the second series, not in host memory.

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "plan/plan.h"
#include "plan/simulator.h"

namespace sa {

struct HostMemoryPoint {
  double time_us;
  int64_t
      host_bytes;  // held in host memory from time_us on (slots, host_slot_bytes each, and staging)
  int64_t nvme_bytes;  // held on NVMe from time_us on
};

// The points where either figure changes, by time, the first at 0 (empty
// when the plan has no host slot). REQUIRES: sim has the plan's timeline.
std::vector<HostMemoryPoint> host_memory_over_time(const Graph& g, const Plan& p,
                                                   const SimResult& sim);

}  // namespace sa
