#include "plan/simulator.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "plan/host_tier.h"
#include "util/error.h"

namespace sa {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kUnknown = -1;

}  // namespace

// The bytes a copy of tensor t moves at the link's rate, counted in r. Note
// [Host tier]: a tensor on NVMe is staged through the host chunk by chunk,
// each chunk read and then copied (a swap-out: copied, then written), the
// disk and the link overlapped across chunks: its copy takes
// nvme_staged_us, as many bytes as the link moves in that time.
double Simulator::copy_bytes(const Graph& g, TensorId t, bool in, const DeviceProfile& d,
                             SimResult* r) const {
  const int64_t bytes = g.tensors[t].bytes;
  (in ? r->swap_in_bytes : r->swap_out_bytes) += bytes;
  if (on_nvme_.empty() || !on_nvme_[t]) return static_cast<double>(bytes);
  (in ? r->nvme_read_bytes : r->nvme_write_bytes) += bytes;
  const double link = in ? d.h2d_bytes_per_us() : d.d2h_bytes_per_us();
  return static_cast<double>(bytes) + nvme_added_us(bytes, in, d) * link;
}

SimResult Simulator::run(const Graph& g, const Plan& p, std::span<const double> op_us,
                         const DeviceProfile& d, const SimOptions& options) {
  return run_impl(g, p, op_us, d, options, nullptr);
}

SimResult Simulator::run(const Graph& g, const Plan& p, std::span<const double> op_us,
                         const DeviceProfile& d, CopyPicker& picker) {
  return run_impl(g, p, op_us, d, {}, &picker);
}

SimResult Simulator::run_impl(const Graph& g, const Plan& p, std::span<const double> op_us,
                              const DeviceProfile& d, const SimOptions& options,
                              CopyPicker* picker) {
  SimResult r;
  const int num_steps = p.num_steps();
  for (auto& q : queue_)
    q.clear();
  for (StepId s = 0; s < num_steps; ++s) {
    const Stream st = stream_of(g, p.steps[s]);
    if (st != Stream::kNone) queue_[static_cast<int>(st)].push_back(s);
  }
  finish_.assign(num_steps, kUnknown);
  if (options.record_timeline) start_.assign(num_steps, 0);
  if (!p.nvme_tensors.empty() && !d.has_nvme()) {
    r.error = fmt::format(
        "the plan keeps {} tensors on NVMe, and the device profile {} has no "
        "NVMe tier (docs/devices.md)",
        p.nvme_tensors.size(), d.name);
    return r;
  }
  on_nvme_.assign(p.nvme_tensors.empty() ? 0 : g.num_tensors(), 0);
  for (TensorId t : p.nvme_tensors)
    on_nvme_[t] = 1;

  // The finish time of a step, or kUnknown. Drops finish with their last wait.
  size_t head[kNumStreams] = {};
  auto finish_of = [&](StepId s) -> double {
    if (finish_[s] != kUnknown || p.steps[s].kind != StepKind::kDrop) return finish_[s];
    double f = 0;
    for (StepId w : p.waits_of(s)) {
      const double fw = finish_[w];  // drops never wait on drops
      if (fw == kUnknown) return kUnknown;
      f = std::max(f, fw);
    }
    finish_[s] = f;
    if (options.record_timeline) start_[s] = f;
    return f;
  };
  auto ready = [&](StepId s) {
    for (StepId w : p.waits_of(s))
      if (finish_of(w) == kUnknown) return false;
    return true;
  };
  const std::function<bool(StepId)> done = [&](StepId s) { return finish_of(s) != kUnknown; };
  // Copies are timed by the bytes left, compute and collective steps by
  // their op time.
  auto is_copy = [](int st) { return st == 1 || st == 2; };
  // The next step of stream st if it can start now, else -1.
  auto next_step = [&](int st) -> StepId {
    if (is_copy(st) && picker) {
      const Stream stream = static_cast<Stream>(st);
      return picker->exhausted(stream) ? -1 : picker->pick(stream, done);
    }
    if (head[st] >= queue_[st].size()) return -1;
    const StepId s = queue_[st][head[st]];
    if (!ready(s)) return -1;
    ++head[st];
    return s;
  };
  auto stream_done = [&](int st) {
    return is_copy(st) && picker ? picker->exhausted(static_cast<Stream>(st))
                                 : head[st] >= queue_[st].size();
  };

  const double h2d = d.h2d_bytes_per_us(), d2h = d.d2h_bytes_per_us();
  const double duplex_scale = std::min(1.0, d.duplex_bytes_per_us() / (h2d + d2h));
  StepId active[kNumStreams] = {-1, -1, -1, -1};
  double end_op[kNumStreams] = {};     // compute, collective: end time of the active step
  double remaining[kNumStreams] = {};  // copies: bytes left
  double now = 0, last_compute_end = 0;

  while (true) {
    for (int st = 0; st < kNumStreams; ++st) {
      if (active[st] >= 0) continue;
      const StepId s = next_step(st);
      if (s < 0) continue;
      active[st] = s;
      if (options.record_timeline) start_[s] = now;
      const Step& step = p.steps[s];
      if (!is_copy(st)) {
        const double t = op_us[step.op()];
        if (st == 0) {
          r.compute_us += t;
          if (step.kind == StepKind::kRecompute) r.recompute_us += t;
        } else {
          r.collective_us += t;
        }
        end_op[st] = now + t;
      } else {
        remaining[st] = copy_bytes(g, step.tensor(), st == 1, d, &r);
      }
    }
    const bool both = active[1] >= 0 && active[2] >= 0;
    const double rate[kNumStreams] = {0, h2d * (both ? duplex_scale : 1.0),
                                      d2h * (both ? duplex_scale : 1.0), 0};
    double t_end[kNumStreams] = {kInf, kInf, kInf, kInf};
    for (int st = 0; st < kNumStreams; ++st)
      if (active[st] >= 0) t_end[st] = is_copy(st) ? now + remaining[st] / rate[st] : end_op[st];
    const double t = *std::min_element(t_end, t_end + kNumStreams);
    if (t == kInf) {
      bool all_done = true;
      for (int st = 0; st < kNumStreams; ++st)
        all_done = all_done && stream_done(st);
      if (all_done) break;
      r.ok = false;
      for (int st = 0; st < kNumStreams; ++st)
        if (!stream_done(st)) {
          if (is_copy(st) && picker) {
            r.error = fmt::format("deadlock at {:.1f} us: no step left on the {} stream can start",
                                  now, to_string(static_cast<Stream>(st)));
            break;
          }
          const StepId s = queue_[st][head[st]];
          r.error = fmt::format(
              "deadlock at {:.1f} us: {} step {} on the {} stream waits for a step "
              "that can never finish",
              now, to_string(p.steps[s].kind), s, to_string(static_cast<Stream>(st)));
          break;
        }
      return r;
    }
    for (int st = 1; st < kNumStreams; ++st)
      if (active[st] >= 0 && is_copy(st)) remaining[st] -= rate[st] * (t - now);
    now = t;
    for (int st = 0; st < kNumStreams; ++st) {
      if (active[st] < 0 || t_end[st] != t) continue;
      finish_[active[st]] = now;
      if (picker) picker->finished(active[st]);
      if (st == 0) last_compute_end = now;
      active[st] = -1;
    }
  }

  r.ok = true;
  r.iteration_us = now;
  r.stall_us = std::max(0.0, last_compute_end - r.compute_us);
  if (options.record_timeline) {
    // Drops never waited on are resolved here too.
    for (StepId s = 0; s < num_steps; ++s)
      finish_of(s);
    r.timeline.resize(num_steps);
    for (StepId s = 0; s < num_steps; ++s)
      r.timeline[s] = {start_[s], finish_[s]};
    r.memory = memory_profile(g, p, r.timeline, r.iteration_us, &r.peak_device_bytes);
  }
  return r;
}

std::vector<ObjectTenancy> object_tenancies(const Graph& g, const Plan& p,
                                            std::span<const StepTiming> timeline, double end_us) {
  const int num_objects = p.num_objects();
  struct Current {
    Occupant item;
    double begin = 0, last = 0;
  };
  std::vector<Current> cur(num_objects);
  std::vector<ObjectTenancy> out;
  auto close = [&](ObjectId o, double at) {
    const Occupant item = cur[o].item;
    if (item.empty()) return;
    out.push_back({o, item, cur[o].begin, std::max(at, cur[o].begin)});
    cur[o].item = Occupant();
  };
  auto open = [&](ObjectId o, Occupant item, double at) {
    close(o, cur[o].last);
    cur[o] = {item, at, at};
  };
  std::vector<uint8_t> kept(num_objects, 0);
  for (const ResidentTensor& r : p.initial_resident) {
    cur[r.object] = {Occupant::of_tensor(r.tensor), 0, 0};
  }
  for (StepId s = 0; s < p.num_steps(); ++s) {
    const Step& st = p.steps[s];
    const StepTiming& t = timeline[s];
    switch (st.kind) {
      case StepKind::kSwapIn:
        open(st.object, st.occupant(), t.start_us);
        break;
      case StepKind::kSwapOut:
      case StepKind::kDrop:
        if (cur[st.object].item == st.occupant()) {
          cur[st.object].last = std::max(cur[st.object].last, t.end_us);
          close(st.object, cur[st.object].last);
        }
        break;
      case StepKind::kCompute:
      case StepKind::kRecompute: {
        auto objs = p.objects_of_step(s);
        int k = 0;
        for_each_step_slot(g, st.op(), st.kind == StepKind::kRecompute, [&](Occupant item, Access) {
          const ObjectId o = objs[k++];
          if (cur[o].item != item) open(o, item, t.start_us);
          cur[o].last = std::max(cur[o].last, t.end_us);
        });
        break;
      }
    }
  }
  // Initial residents still in their objects stay until the end.
  for (const ResidentTensor& r : p.initial_resident)
    if (cur[r.object].item == Occupant::of_tensor(r.tensor)) kept[r.object] = 1;
  for (ObjectId o = 0; o < num_objects; ++o)
    close(o, kept[o] ? end_us : cur[o].last);
  std::sort(out.begin(), out.end(), [](const ObjectTenancy& a, const ObjectTenancy& b) {
    return std::tie(a.begin_us, a.object, a.end_us) < std::tie(b.begin_us, b.object, b.end_us);
  });
  return out;
}

std::vector<MemoryPoint> memory_profile(const Graph& g, const Plan& p,
                                        std::span<const StepTiming> timeline, double end_us,
                                        int64_t* peak) {
  const std::vector<ObjectTenancy> tenancies = object_tenancies(g, p, timeline, end_us);
  std::vector<std::pair<double, int64_t>> events;  // (time, +bytes / -bytes)
  events.reserve(2 * tenancies.size());
  for (const ObjectTenancy& t : tenancies) {
    events.push_back({t.begin_us, p.objects[t.object].bytes});
    events.push_back({t.end_us, -p.objects[t.object].bytes});
  }
  std::sort(events.begin(), events.end());
  std::vector<MemoryPoint> out;
  int64_t bytes = 0, best = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    bytes += events[i].second;
    if (i + 1 < events.size() && events[i + 1].first == events[i].first) continue;
    out.push_back({events[i].first, bytes});
    best = std::max(best, bytes);
  }
  if (peak) *peak = best;
  return out;
}

}  // namespace sa
