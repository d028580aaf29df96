#include "plan/host_tier.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "util/units.h"

namespace sa {

std::vector<uint8_t> homes_on_host(const Graph& g, const Plan& p) {
  std::vector<uint8_t> home(g.num_tensors(), 0);
  for (TensorId t = 0; t < g.num_tensors(); ++t)
    home[t] = !is_transient(g.tensors[t].kind);
  for (const ResidentTensor& r : p.initial_resident)
    home[r.tensor] = 0;  // its home between iterations is the device
  return home;
}

std::vector<uint8_t> host_slots(const Graph& g, const Plan& p) {
  std::vector<uint8_t> slot = homes_on_host(g, p);
  for (const Step& s : p.steps)
    if (s.kind == StepKind::kSwapOut) slot[s.tensor()] = 1;
  return slot;
}

double nvme_staged_us(int64_t bytes, bool in, const DeviceProfile& d) {
  const double nvme = (in ? d.nvme_read_gbps : d.nvme_write_gbps) * 1e3;  // B/us
  const double link = in ? d.h2d_bytes_per_us() : d.d2h_bytes_per_us();
  auto disk = [&](int64_t b) { return static_cast<double>(b) / nvme + d.nvme_latency_us; };
  auto wire = [&](int64_t b) { return static_cast<double>(b) / link; };
  // A swap-in reads a chunk, then copies it; a swap-out copies, then writes.
  auto first = [&](int64_t b) { return in ? disk(b) : wire(b); };
  auto second = [&](int64_t b) { return in ? wire(b) : disk(b); };
  const int64_t n = std::max<int64_t>(1, (bytes + kNvmeChunkBytes - 1) / kNvmeChunkBytes);
  if (n == 1) return first(bytes) + second(bytes);
  const int64_t c = kNvmeChunkBytes, last = bytes - (n - 1) * c;
  return first(c) + static_cast<double>(n - 2) * std::max(first(c), second(c)) +
         std::max(first(last), second(c)) + second(last);
}

double nvme_added_us(int64_t bytes, bool in, const DeviceProfile& d) {
  const double link = in ? d.h2d_bytes_per_us() : d.d2h_bytes_per_us();
  return nvme_staged_us(bytes, in, d) - static_cast<double>(bytes) / link;
}

HostUse host_use(const Graph& g, const Plan& p) {
  const std::vector<uint8_t> slot = host_slots(g, p);
  HostUse u;
  for (TensorId t = 0; t < g.num_tensors(); ++t)
    if (slot[t]) u.slot_bytes += host_slot_bytes(g.tensors[t].bytes);
  int64_t largest = 0;
  for (TensorId t : p.nvme_tensors) {
    u.slot_bytes -= host_slot_bytes(g.tensors[t].bytes);
    u.nvme_bytes += g.tensors[t].bytes;
    largest = std::max(largest, g.tensors[t].bytes);
  }
  u.staging_bytes = nvme_staging_bytes(largest);
  return u;
}

HostArena host_arena(const Graph& g, const Plan& p) {
  HostArena a;
  a.slot_offset.assign(g.num_tensors(), -1);
  std::vector<uint8_t> slot = host_slots(g, p);
  int64_t largest = 0;
  for (TensorId t : p.nvme_tensors) {
    slot[t] = 0;
    largest = std::max(largest, g.tensors[t].bytes);
  }
  a.staging_chunk = nvme_staging_chunk(largest);
  a.bytes = nvme_staging_bytes(largest);
  for (TensorId t = 0; t < g.num_tensors(); ++t) {
    if (!slot[t]) continue;
    a.slot_offset[t] = a.bytes;
    a.bytes += host_slot_bytes(g.tensors[t].bytes);
  }
  return a;
}

bool host_fits(const Graph& g, const Plan& p) {
  return p.host_budget <= 0 || host_use(g, p).total() <= p.host_budget;
}

std::vector<double> nvme_stall_cost(const Graph& g, const Plan& p, const SimResult& sim,
                                    const DeviceProfile& d) {
  std::vector<double> cost(g.num_tensors(), 0.0);
  if (!d.has_nvme() || static_cast<int>(sim.timeline.size()) != p.num_steps()) return cost;
  // Each step's first waiter: the earliest start of a step that waits for it.
  std::vector<double> first_waiter(p.num_steps(), sim.iteration_us);
  for (StepId s = 0; s < p.num_steps(); ++s)
    for (StepId w : p.waits_of(s))
      first_waiter[w] = std::min(first_waiter[w], sim.timeline[s].start_us);
  // A longer copy also delays the copies after it on its stream, up to the
  // stream's next idle gap: a copy's slack is the least of its own and, past
  // the gap to the next copy, the next copy's (computed from the last).
  for (const StepKind kind : {StepKind::kSwapIn, StepKind::kSwapOut}) {
    std::vector<StepId> copies;
    for (StepId s = 0; s < p.num_steps(); ++s)
      if (p.steps[s].kind == kind) copies.push_back(s);
    std::stable_sort(copies.begin(), copies.end(), [&](StepId a, StepId b) {
      return sim.timeline[a].start_us < sim.timeline[b].start_us;
    });
    const bool in = kind == StepKind::kSwapIn;
    double later = std::numeric_limits<double>::infinity();  // the next copy's slack plus the gap
    for (size_t k = copies.size(); k-- > 0;) {
      const StepId s = copies[k];
      const StepTiming& t = sim.timeline[s];
      const double slack = std::min(std::max(0.0, first_waiter[s] - t.end_us), later);
      if (k > 0) later = slack + std::max(0.0, t.start_us - sim.timeline[copies[k - 1]].end_us);
      const TensorId x = p.steps[s].tensor();
      cost[x] += std::max(0.0, nvme_added_us(g.tensors[x].bytes, in, d) - slack);
    }
  }
  return cost;
}

bool place_on_nvme(const Graph& g, const DeviceProfile& d, HostTierPolicy policy,
                   std::span<const double> stall_cost, Plan* p, std::string* why) {
  p->nvme_tensors.clear();
  if (p->host_budget <= 0) return true;
  const int n = g.num_tensors();
  const std::vector<uint8_t> slot = host_slots(g, *p);
  int64_t host = host_use(g, *p).slot_bytes;  // nvme_tensors is empty
  if (host <= p->host_budget) return true;
  if (!d.has_nvme()) {
    *why = fmt::format(
        "its host slots take {} ({} B), over the host budget of {} ({} B), and the device "
        "profile has no NVMe tier to put the rest on (docs/devices.md, \"NVMe tier\")",
        format_bytes(host), host, format_bytes(p->host_budget), p->host_budget);
    return false;
  }
  // Per slot: its copies in the plan, and the step that first copies it
  // out (-1 for a persistent tensor at home on the host: out before the
  // iteration began).
  std::vector<int32_t> copies(n, 0), evicted_at(n, -1);
  const std::vector<uint8_t> home_on_host = homes_on_host(g, *p);
  for (StepId s = p->num_steps() - 1; s >= 0; --s) {  // backwards: the first copy-out stays
    const Step& st = p->steps[s];
    if (st.kind != StepKind::kSwapIn && st.kind != StepKind::kSwapOut) continue;
    const TensorId t = st.tensor();
    ++copies[t];
    if (st.kind == StepKind::kSwapOut && !home_on_host[t]) evicted_at[t] = s;
  }
  std::vector<TensorId> order;  // the slots, the first to go to NVMe first
  for (TensorId t = 0; t < n; ++t)
    if (slot[t]) order.push_back(t);
  auto bytes = [&](TensorId t) { return g.tensors[t].bytes; };
  if (policy == HostTierPolicy::kLeastStall && static_cast<int>(stall_cost.size()) == n) {
    // cost / bytes ascending: a.cost x b.bytes < b.cost x a.bytes.
    std::stable_sort(order.begin(), order.end(), [&](TensorId a, TensorId b) {
      const double l = stall_cost[a] * static_cast<double>(bytes(b));
      const double r = stall_cost[b] * static_cast<double>(bytes(a));
      return l != r ? l < r : bytes(a) > bytes(b);
    });
  } else if (policy != HostTierPolicy::kFirstEvicted) {
    // copies / bytes ascending without division: a.copies x b.bytes < b.copies x a.bytes.
    std::stable_sort(order.begin(), order.end(), [&](TensorId a, TensorId b) {
      const __int128 l = static_cast<__int128>(copies[a]) * bytes(b);
      const __int128 r = static_cast<__int128>(copies[b]) * bytes(a);
      return l != r ? l < r : bytes(a) > bytes(b);
    });
  } else {
    // Kept on the host in first-evicted order: the last evicted go first.
    std::stable_sort(order.begin(), order.end(),
                     [&](TensorId a, TensorId b) { return evicted_at[a] > evicted_at[b]; });
  }
  int64_t largest = 0;  // on NVMe, for the staging
  for (TensorId t : order) {
    if (host + nvme_staging_bytes(largest) <= p->host_budget) break;
    p->nvme_tensors.push_back(t);
    host -= host_slot_bytes(bytes(t));
    largest = std::max(largest, bytes(t));
  }
  if (host + nvme_staging_bytes(largest) > p->host_budget) {
    p->nvme_tensors.clear();
    *why = fmt::format(
        "the host budget of {} ({} B) does not hold the NVMe staging buffers ({}) beside "
        "what must stay in host memory ({})",
        format_bytes(p->host_budget), p->host_budget, format_bytes(nvme_staging_bytes(largest)),
        format_bytes(host));
    return false;
  }
  std::sort(p->nvme_tensors.begin(), p->nvme_tensors.end());
  return true;
}

}  // namespace sa
