#pragma once
// The stream simulator: predicts how long a Plan's iteration takes.
//
// Note [Simulated streams]
// ------------------------
// Compute, host→device (H2D), device→host (D2H) and collective streams (the
// last for data-parallel plans only) each run their
// steps in Plan order; a step starts when its stream is free and every step
// it waits for has finished. A compute step (or a recompute of an op) lasts
// its op time, and so does a collective step. A copy moves
// the tensor's bytes at its direction's bandwidth when it runs alone; when
// both directions run at once they share the duplex total: each direction's
// rate is scaled by min(1, duplex / (h2d + d2h)). Rates change only when a
// copy starts or ends, so the simulation is exact between events:
//
//   time →   0     10    20    30
//   h2d      [== 12 GB/s ==][10 GB/s]
//   d2h                   [10 GB/s]...     (V100: 12 each alone, 20 together)
//
// A drop takes no time: it finishes when the last step it waits for does.
// The simulated iteration is the steady state (the plan's initial resident
// set is on the device at time 0) and ends when every stream is done.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "cost/device.h"
#include "graph/graph.h"
#include "plan/plan.h"

namespace sa {

struct StepTiming {
  double start_us = 0;
  double end_us = 0;
};

struct MemoryPoint {
  double time_us;
  int64_t bytes;  // device bytes held by occupied objects from time_us on
};

struct SimResult {
  bool ok = false;
  std::string error;         // set when !ok (a deadlock: the plan is broken)
  double iteration_us = 0;   // when the last step ends
  double compute_us = 0;     // sum of compute step times (recomputes included)
  double recompute_us = 0;   // of which recompute steps
  double collective_us = 0;  // sum of collective step times (data-parallel plans)
  double stall_us = 0;       // time the compute stream waited on copies
  int64_t swap_in_bytes = 0;
  int64_t swap_out_bytes = 0;
  int64_t nvme_read_bytes = 0;       // of the swap-ins, through NVMe (Note [Host tier])
  int64_t nvme_write_bytes = 0;      // of the swap-outs
  int64_t peak_device_bytes = 0;     // with record_timeline only
  std::vector<StepTiming> timeline;  // per step, with record_timeline only
  std::vector<MemoryPoint> memory;   // with record_timeline only
};

struct SimOptions {
  bool record_timeline = false;  // also fills timeline, memory, peak_device_bytes
};

// Chooses the copy streams' next steps while the simulation runs, instead
// of the plan's order (Note [Copy order] in plan/copy_order.h).
class CopyPicker {
 public:
  virtual ~CopyPicker() = default;
  // Called whenever copy stream st (kH2D or kD2H) is free: a step of that
  // stream all of whose waits are done (done(s): step s has finished) to
  // start now, or -1 to leave the stream idle until the next step ends.
  virtual StepId pick(Stream st, const std::function<bool(StepId)>& done) = 0;
  virtual bool exhausted(Stream st) const = 0;  // every step of st has been picked
  virtual void finished(StepId s) {}            // step s (on a stream) has just finished
};

class Simulator {
 public:
  SimResult run(const Graph& g, const Plan& p, std::span<const double> op_us,
                const DeviceProfile& d, const SimOptions& options = {});
  // The same, with the copies started in the order `picker` chooses; the
  // plan's order of its swap-ins and swap-outs is ignored.
  SimResult run(const Graph& g, const Plan& p, std::span<const double> op_us,
                const DeviceProfile& d, CopyPicker& picker);

 private:
  SimResult run_impl(const Graph& g, const Plan& p, std::span<const double> op_us,
                     const DeviceProfile& d, const SimOptions& options, CopyPicker* picker);

  std::vector<StepId> queue_[kNumStreams];
  std::vector<uint8_t> on_nvme_;  // per tensor: Plan::nvme_tensors (Note [Host tier])
  double copy_bytes(const Graph& g, TensorId t, bool in, const DeviceProfile& d,
                    SimResult* r) const;
  std::vector<double> finish_;
  std::vector<double> start_;
};

// One tenant's stay in an object: from the start of the step that puts it
// there (a swap-in, or the first op that touches it) until its last step on
// it ends (its last access, swap-out or drop). An initial resident's begins
// at 0 and, if it is still in its object at the end, lasts until end_us. A
// tensor swapped in that no later step touches there ends where it begins.
struct ObjectTenancy {
  ObjectId object = kNoObject;
  Occupant tenant;
  double begin_us = 0;
  double end_us = 0;  // >= begin_us
};

// Every tenancy of every object of p, by begin, then object. REQUIRES:
// timeline is the simulator's timeline of p and end_us its iteration's end.
std::vector<ObjectTenancy> object_tenancies(const Graph& g, const Plan& p,
                                            std::span<const StepTiming> timeline, double end_us);

// Device bytes in use over time: the bytes of the objects that have a tenant
// (object_tenancies) at each time; objects of the initial resident set that
// keep their tenant are in use throughout.
std::vector<MemoryPoint> memory_profile(const Graph& g, const Plan& p,
                                        std::span<const StepTiming> timeline, double end_us,
                                        int64_t* peak);

}  // namespace sa
