#include "report/trace.h"

#include <iterator>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "methods/methods.h"
#include "plan/host_tier.h"
#include "plan/stalls.h"
#include "report/class_memory.h"
#include "report/host_memory.h"
#include "report/labels.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/json.h"
#include "util/units.h"

namespace sa {
namespace {

constexpr int kPid = 1;
// Track (thread) ids: compute, H2D and D2H in their Stream order, drops,
// then the collective stream (data-parallel plans; after drops so that the
// older tracks keep their ids).
constexpr int kDropTid = 4;
constexpr int tid_of(Stream s) {
  return s == Stream::kCollective ? 5 : static_cast<int>(s) + 1;
}

// A JSON string; invalid UTF-8 in a name becomes U+FFFD (dump_json).
std::string json_str(std::string_view s) {
  return dump_json(nlohmann::json(s));
}

class TraceWriter {
 public:
  // Every event but the first is preceded by a comma and a newline, so the
  // file has one event per line.
  template <typename... Args>
  void event(fmt::format_string<Args...> f, Args&&... args) {
    out_.append(first_ ? std::string_view("\n") : std::string_view(",\n"));
    first_ = false;
    fmt::format_to(std::back_inserter(out_), f, std::forward<Args>(args)...);
  }
  fmt::memory_buffer& buffer() { return out_; }

 private:
  fmt::memory_buffer out_;
  bool first_ = true;
};

std::string_view phase_category(Phase ph) {
  switch (ph) {
    case Phase::kForward:
      return "forward";
    case Phase::kBackward:
      return "backward";
    case Phase::kUpdate:
      return "update";
    case Phase::kUnknown:
      break;
  }
  return "compute";
}

}  // namespace

std::string trace_to_json(const Graph& g, const Plan& p, const SimResult& sim,
                          const TraceInfo& info) {
  SA_CHECK(sim.ok && static_cast<int>(sim.timeline.size()) == p.num_steps(),
           "the trace needs a simulated timeline ({} entries for {} steps)", sim.timeline.size(),
           p.num_steps());
  const StallReport stalls = attribute_stalls(g, p, sim.timeline);
  std::vector<int32_t> stall_of(p.num_steps(), -1);  // step -> index in stalls.stalls
  for (size_t i = 0; i < stalls.stalls.size(); ++i)
    stall_of[stalls.stalls[i].step] = static_cast<int32_t>(i);

  const std::vector<std::string> tensor_label = tensor_labels(g);
  // Note [Host tier]: a copy of a tensor on NVMe is staged through the host
  // on its stream; it is named so, with "tier":"nvme" in its args.
  std::vector<uint8_t> on_nvme(g.num_tensors(), 0);
  for (TensorId t : p.nvme_tensors)
    on_nvme[t] = 1;
  const HostUse host = host_use(g, p);
  TraceWriter w;
  fmt::memory_buffer& out = w.buffer();
  nlohmann::json other = sim_result_json(sim);
  other.update({{"graph", g.name},
                {"method", p.method},
                {"memory_budget_bytes", p.memory_budget},
                {"pool_bytes", p.arena_bytes()},
                {"host_bytes", host.total()},
                {"generator", "swapadvisor plan --trace"}});
  if (p.host_budget > 0)
    other.update({{"host_budget_bytes", p.host_budget}, {"nvme_bytes", host.nvme_bytes}});
  fmt::format_to(std::back_inserter(out), "{{\"displayTimeUnit\":\"ms\",\"otherData\":{},\n",
                 dump_json(other));
  out.append(std::string_view("\"traceEvents\":["));

  w.event(R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":{}}}}})", kPid,
          json_str(info.title));
  const std::pair<int, std::string_view> tracks[] = {
      {tid_of(Stream::kCompute), "compute"},
      {tid_of(Stream::kH2D), "host→device (swap-in)"},
      {tid_of(Stream::kD2H), "device→host (swap-out)"},
      {tid_of(Stream::kCollective), "collective (data-parallel)"},
      {kDropTid, "drops"}};
  for (const auto& [tid, name] : tracks) {
    w.event(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":{}}}}})", kPid,
            tid, json_str(name));
    w.event(
        R"({{"ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}}}})",
        kPid, tid, tid);
  }

  for (StepId s = 0; s < p.num_steps(); ++s) {
    const Step& st = p.steps[s];
    const StepTiming& t = sim.timeline[s];
    if (st.runs_op()) {
      const Op& op = g.ops[st.op()];
      const bool again = st.kind == StepKind::kRecompute;
      std::string extra;
      if (stall_of[s] >= 0) {
        const Stall& x = stalls.stalls[stall_of[s]];
        extra = fmt::format(R"(,"stalled_us":{:.3f})", x.idle_us);
        if (x.culprit >= 0) {
          const Step& c = p.steps[x.culprit];
          const std::string what =
              c.runs_op()
                  ? fmt::format("step {}: {} {}", x.culprit, to_string(c.kind), op_label(g, c.op()))
                  : fmt::format("step {}: {} of {}", x.culprit, to_string(c.kind),
                                tensor_label[c.tensor()]);
          extra += fmt::format(R"(,"waited_for":{})", json_str(what));
        }
      }
      w.event(
          R"({{"ph":"X","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},"name":{},"cat":"{}","args":{{"step":{},"op":{},"type":{}{}}}}})",
          kPid, tid_of(stream_of(g, st)), t.start_us, t.end_us - t.start_us,
          json_str(again ? "recompute " + op_label(g, st.op()) : op_label(g, st.op())),
          again ? std::string_view("recompute") : phase_category(op.phase), s, st.op(),
          json_str(op.type), extra);
      continue;
    }
    const Tensor& x = g.tensors[st.tensor()];
    const bool nvme = on_nvme[st.tensor()] && st.kind != StepKind::kDrop;
    const std::string name = fmt::format("{} ({}){}", tensor_label[st.tensor()],
                                         format_bytes(x.bytes), nvme ? " via NVMe" : "");
    const std::string args = fmt::format(
        R"("step":{},"tensor":{},"kind":"{}","bytes":{},"object":{},"class":{},"tier":"{}")", s,
        st.tensor(), to_string(x.kind), x.bytes, st.object, p.objects[st.object].cls,
        nvme ? "nvme" : "host");
    if (st.kind == StepKind::kDrop) {
      w.event(
          R"({{"ph":"i","s":"t","pid":{},"tid":{},"ts":{:.3f},"name":{},"cat":"drop","args":{{{}}}}})",
          kPid, kDropTid, t.end_us, json_str(name), args);
      continue;
    }
    w.event(
        R"({{"ph":"X","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},"name":{},"cat":"{}","args":{{{}}}}})",
        kPid, tid_of(stream_of(g, st)), t.start_us, t.end_us - t.start_us, json_str(name),
        to_string(st.kind), args);
  }

  for (const MemoryPoint& m : sim.memory)
    w.event(R"({{"ph":"C","pid":{},"ts":{:.3f},"name":"device memory","args":{{"in use":{}}}}})",
            kPid, m.time_us, m.bytes);
  // Host memory and NVMe: what the slots hold (Note [Host memory over time]);
  // the arena, host_bytes in the metadata, holds them all iteration.
  for (const HostMemoryPoint& m : host_memory_over_time(g, p, sim)) {
    w.event(R"({{"ph":"C","pid":{},"ts":{:.3f},"name":"host memory","args":{{"in use":{}}}}})",
            kPid, m.time_us, m.host_bytes);
    if (!p.nvme_tensors.empty())
      w.event(R"({{"ph":"C","pid":{},"ts":{:.3f},"name":"on NVMe","args":{{"in use":{}}}}})", kPid,
              m.time_us, m.nvme_bytes);
  }
  for (const ClassMemory& grp :
       memory_by_class(g, p, sim.timeline, sim.iteration_us, info.class_tracks)) {
    const std::string name = json_str(grp.label);
    for (const MemoryPoint& m : grp.points)
      w.event(R"({{"ph":"C","pid":{},"ts":{:.3f},"name":{},"args":{{"in use":{}}}}})", kPid,
              m.time_us, name, m.bytes);
  }
  out.append(std::string_view("\n]}\n"));
  return fmt::to_string(out);
}

void write_trace(const Graph& g, const Plan& p, const SimResult& sim, const TraceInfo& info,
                 const std::string& path) {
  write_file(path, trace_to_json(g, p, sim, info));
}

}  // namespace sa
