#pragma once
// Host memory and the NVMe tier (issue 30): where a tensor that leaves the
// device is kept.
//
// Note [Host tier]
// ----------------
// A tensor has a host slot when the plan ever copies it out, or when it is
// persistent (parameters, buffers, optimizer state, inputs) and not on the
// device when the iteration starts: its home between iterations is then the
// host. Each slot is the tensor's for the whole iteration, so what host
// memory a plan needs is the sum of its slots, whatever the timing: the
// runtime gives each its place in one pinned host arena, and the verifier
// checks the sum against the plan's host budget without simulating. (Slots
// whose lifetimes do not overlap could share bytes, as device objects do;
// that is not done yet, so the figure is an upper bound.) A slot takes its
// tensor's bytes rounded up to kHostSlotAlignment, its place in the arena
// (Note [Host arena]).
//
// With a host budget (Plan::host_budget, --host-memory) and a device
// profile with an NVMe tier (DeviceProfile::has_nvme), the slots that do not
// fit live in a file on NVMe instead: every copy of such a tensor goes
// through host staging buffers, chunk by chunk, on the copy's stream: a
// swap-in reads a chunk from NVMe, then copies it to the device (a
// swap-out copies, then writes), and the two buffers of a direction let the
// next chunk's read (or the previous chunk's write) run while a chunk
// crosses the link. So with chunks of C bytes, a disk time per chunk of
// C / NVMe rate + latency and a link time of C / link rate, a swap-in takes
//     disk(c0) + max(disk(c1), link(c0)) + ... + max(disk(cn-1), link(cn-2)) + link(cn-1)
// (nvme_staged_us; a swap-out the same with link first and disk second):
// about the slower of the two for large tensors, both in full for a tensor
// of one chunk. The staging takes two chunks each way: 4 x
// min(kNvmeChunkBytes, the largest tensor on NVMe), rounded up to
// 4096-byte blocks (nvme_staging_bytes), counted against the budget.
//
// Which slots go to NVMe is the planner's stage 2a (plan/planner.h), after
// the walk; three policies:
//   - kLeastStall (the default): the plan is simulated without NVMe first;
//     each slot's cost is what its copies would stall, summed: the time
//     NVMe adds to each copy (bytes / NVMe rate, plus the latency per
//     chunk) less the copy's slack: the time between its end and the
//     first step that waits for it, or less where a longer copy would delay
//     the copies after it on its stream (up to the stream's next idle gap).
//     The slots that cost least per byte go first (ties: the larger first);
//
//       swap-in of a, 1 GB: link 0.1 s, NVMe adds 0.4 s; its reader starts
//       1.0 s after it ends: slack 1.0 s, cost 0            -> a goes first
//       swap-in of b, 1 GB: its reader waits for it: cost 0.4 s
//
//   - kFewestCopies: the slots whose copies cross the NVMe link least often
//     per byte first (ties: the larger first);
//   - kFirstEvicted: the slots kept in host memory in the order the plan
//     first copies them out, the rest to NVMe (what static offload rules,
//     such as ZeRO-Infinity's, amount to): the baseline the others are
//     measured against (docs/results.md, "Host budget and NVMe").

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cost/device.h"
#include "graph/graph.h"
#include "plan/plan.h"
#include "plan/simulator.h"

namespace sa {

inline constexpr int64_t kNvmeChunkBytes = int64_t{16} << 20;  // one staged NVMe transfer

inline constexpr int64_t kNvmeBlockBytes = 4096;  // O_DIRECT's alignment (runtime/nvme/)

// One host staging buffer for NVMe copies of tensors of at most
// largest_bytes: a chunk, or the largest tensor, in whole blocks (0: no
// tensor on NVMe). The runtime allocates four: two each way.
inline int64_t nvme_staging_chunk(int64_t largest_bytes) {
  const int64_t b = std::min(kNvmeChunkBytes, largest_bytes);
  return (b + kNvmeBlockBytes - 1) / kNvmeBlockBytes * kNvmeBlockBytes;
}
inline int64_t nvme_staging_bytes(int64_t largest_bytes) {
  return 4 * nvme_staging_chunk(largest_bytes);
}

// Note [Host arena]
// -----------------
// The runtime keeps every host slot and the NVMe staging in one host
// allocation (pinned on CUDA), made once before the first iteration, of
// exactly host_use(g, p).total() bytes: never more than the plan's host
// budget (the verifier's rule S7), and no more than the plan needs when the
// budget is larger (pinning memory that nothing uses would take it from
// the rest of the machine). The staging comes first, at offset 0, so that
// its chunks keep O_DIRECT's 4096-byte alignment (the arena is page
// aligned); the slots follow in tensor order, each at a multiple of
// kHostSlotAlignment. Values that only load the device before an iteration
// (the initial value or a new batch of a tensor that starts on the device
// and is never copied out) have no slot: they pass through a load buffer
// outside the arena, untimed, as a data loader's batch would.
inline constexpr int64_t kHostSlotAlignment = 64;

inline int64_t host_slot_bytes(int64_t bytes) {
  return (bytes + kHostSlotAlignment - 1) / kHostSlotAlignment * kHostSlotAlignment;
}

struct HostArena {
  std::vector<int64_t> slot_offset;  // per tensor; -1: no slot in the arena (none, or on NVMe)
  int64_t staging_chunk = 0;         // each of the four staging chunks, from offset 0
  int64_t bytes = 0;                 // == host_use(g, p).total()
};

// The places of the plan's host slots and staging (Note [Host arena]).
HostArena host_arena(const Graph& g, const Plan& p);

enum class HostTierPolicy : uint8_t { kLeastStall, kFewestCopies, kFirstEvicted };

struct HostUse {
  int64_t slot_bytes = 0;     // the host slots of the tensors not on NVMe (host_slot_bytes each)
  int64_t staging_bytes = 0;  // the NVMe staging buffers (0 without NVMe tensors)
  int64_t nvme_bytes = 0;     // the NVMe slots
  int64_t total() const { return slot_bytes + staging_bytes; }
};

// Per tensor, whether its home between iterations is the host: persistent
// and not on the device when the iteration starts.
std::vector<uint8_t> homes_on_host(const Graph& g, const Plan& p);

// Per tensor, whether it has a host slot (Note [Host tier]): at home on the
// host, or copied out by the plan.
std::vector<uint8_t> host_slots(const Graph& g, const Plan& p);

// The time a staged copy of `bytes` of a tensor on NVMe takes, in us, the
// link at its one-way rate (Note [Host tier]: chunk by chunk, the disk and
// the link overlapped).
double nvme_staged_us(int64_t bytes, bool in, const DeviceProfile& d);

// The time NVMe adds to that copy: nvme_staged_us less the link's time
// (the simulator times the copy so, and kLeastStall costs it so).
double nvme_added_us(int64_t bytes, bool in, const DeviceProfile& d);

// What the plan's host slots take, with the plan's nvme_tensors on NVMe.
HostUse host_use(const Graph& g, const Plan& p);

// Whether the plan's host slots fit p.host_budget as they are (no budget:
// they do).
bool host_fits(const Graph& g, const Plan& p);

// kLeastStall's cost of each tensor on NVMe, in us (Note [Host tier]), from
// the plan's simulation with a timeline, without NVMe.
std::vector<double> nvme_stall_cost(const Graph& g, const Plan& p, const SimResult& sim,
                                    const DeviceProfile& d);

// Stage 2a: moves slots to NVMe (p->nvme_tensors) until the host use fits
// p->host_budget (0: unlimited, nothing moves). stall_cost: kLeastStall's
// costs (nvme_stall_cost), ignored by the other policies. False, with the
// reason in *why, when it cannot fit: the device has no NVMe tier, or even
// with every slot on NVMe the staging does not fit.
bool place_on_nvme(const Graph& g, const DeviceProfile& d, HostTierPolicy policy,
                   std::span<const double> stall_cost, Plan* p, std::string* why);

}  // namespace sa
