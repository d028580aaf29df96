#include "report/host_memory.h"

#include <algorithm>

#include "plan/host_tier.h"

namespace sa {

std::vector<HostMemoryPoint> host_memory_over_time(const Graph& g, const Plan& p,
                                                   const SimResult& sim) {
  const int n = g.num_tensors();
  const std::vector<uint8_t> slot = host_slots(g, p);
  const std::vector<uint8_t> home = homes_on_host(g, p);
  std::vector<uint8_t> nvme(n, 0);
  for (TensorId t : p.nvme_tensors)
    nvme[t] = 1;
  // Per tensor: its first swap-out's start and its last swap-in's end.
  std::vector<double> from(n, -1), to(n, -1);
  for (StepId s = 0; s < p.num_steps(); ++s) {
    const Step& st = p.steps[s];
    if (st.kind == StepKind::kSwapOut && from[st.tensor()] < 0)
      from[st.tensor()] = sim.timeline[s].start_us;
    if (st.kind == StepKind::kSwapIn)
      to[st.tensor()] = std::max(to[st.tensor()], sim.timeline[s].end_us);
  }
  struct Change {
    double time_us;
    int64_t host, nvme;
  };
  std::vector<Change> changes;
  bool any = false;
  for (TensorId t = 0; t < n; ++t) {
    if (!slot[t]) continue;
    any = true;
    const int64_t bytes = nvme[t] ? g.tensors[t].bytes : host_slot_bytes(g.tensors[t].bytes);
    const double a = home[t] || from[t] < 0 ? 0.0 : from[t];
    changes.push_back({a, nvme[t] ? 0 : bytes, nvme[t] ? bytes : 0});
    // At home on the host, or copied out and never back: held to the end.
    if (!home[t] && to[t] >= a)
      changes.push_back({to[t], nvme[t] ? 0 : -bytes, nvme[t] ? -bytes : 0});
  }
  if (!any) return {};
  std::stable_sort(changes.begin(), changes.end(),
                   [](const Change& x, const Change& y) { return x.time_us < y.time_us; });
  std::vector<HostMemoryPoint> points{{0.0, host_use(g, p).staging_bytes, 0}};
  for (const Change& c : changes) {
    if (c.time_us > points.back().time_us)
      points.push_back({c.time_us, points.back().host_bytes, points.back().nvme_bytes});
    points.back().host_bytes += c.host;
    points.back().nvme_bytes += c.nvme;
  }
  return points;
}

}  // namespace sa
