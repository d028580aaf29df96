#include "report/report_data.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "methods/methods.h"
#include "plan/host_tier.h"
#include "plan/stalls.h"
#include "report/host_memory.h"
#include "report/labels.h"
#include "report/traffic.h"
#include "util/error.h"
#include "util/json.h"

namespace sa {
namespace {

using nlohmann::json;

// Note [Report time unit]: the page's times are whole multiples of a unit
// (time_unit_ns), 1 ns unless the plan's latest time is past kMaxUnits ns
// (about 104 days), and then the smallest power of ten that brings it within.
// So they stay exact integers both in int64 and in the page's doubles,
// however long the simulated iteration (a plan of op times up to
// kMaxOpUs each can last far longer than the 9.2e18 ns of an int64).
constexpr double kMaxUnits = 9007199254740992.0;  // 2^53

class TimeUnit {
 public:
  explicit TimeUnit(double latest_us) {
    SA_CHECK(std::isfinite(latest_us) && latest_us >= 0, "the plan's times end at {} us",
             latest_us);
    while (latest_us * 1e3 / ns_ > kMaxUnits)
      ns_ *= 10;
  }
  double ns() const { return ns_; }
  // us in units, clamped to +-2^53 (no time of the plan is past the latest).
  int64_t operator()(double us) const {
    return std::llround(std::clamp(us * 1e3 / ns_, -kMaxUnits, kMaxUnits));
  }

 private:
  double ns_ = 1;
};

// The latest time any column holds.
double latest_us(const SimResult& sim) {
  double t = std::max(0.0, sim.iteration_us);
  for (const StepTiming& s : sim.timeline)
    t = std::max({t, s.start_us, s.end_us});
  for (const MemoryPoint& m : sim.memory)
    t = std::max(t, m.time_us);
  return t;
}

// Appends values as deltas from the previous one appended.
class DeltaColumn {
 public:
  void push(int64_t v) {
    out_.push_back(v - prev_);
    prev_ = v;
  }
  std::vector<int64_t>& values() { return out_; }

 private:
  std::vector<int64_t> out_;
  int64_t prev_ = 0;
};

json method_json(const MethodResult& r, bool main) {
  json j = method_result_json(r);
  j["main"] = main;
  return j;
}

json optional_json(const auto& v) {
  return v ? json(*v) : json(nullptr);
}

// Every field of the sweep; its points as columns.
json sweep_json(const SweepResult& s) {
  std::vector<int64_t> budget, swap_in, swap_out;
  std::vector<bool> feasible;
  std::vector<std::string> why;
  std::vector<double> iteration_us, throughput, search_seconds;
  for (const SweepPoint& p : s.points) {
    budget.push_back(p.budget);
    feasible.push_back(p.feasible);
    why.push_back(p.why);
    iteration_us.push_back(p.iteration_us);
    throughput.push_back(p.throughput);
    swap_in.push_back(p.swap_in_bytes);
    swap_out.push_back(p.swap_out_bytes);
    search_seconds.push_back(p.search_seconds);
  }
  return {{"ideal_us", s.ideal_us},
          {"peak_live", s.peak_live},
          {"min_budget", s.min_budget},
          {"largest_op", s.largest_op},
          {"no_swap_floor", s.no_swap_floor},
          {"floor_order", s.floor_order},
          {"points",
           {{"budget", budget},
            {"feasible", feasible},
            {"why", why},
            {"iteration_us", iteration_us},
            {"throughput", throughput},
            {"swap_in_bytes", swap_in},
            {"swap_out_bytes", swap_out},
            {"search_seconds", search_seconds}}},
          {"target", optional_json(s.target)},
          {"target_budget", optional_json(s.target_budget)}};
}

// The tensors the report's tables name, each a row of data["tensors"], in
// order of first appearance.
class TensorRows {
 public:
  explicit TensorRows(const Graph& g)
      : g_(g), label_(tensor_labels(g)), row_(g.num_tensors(), -1) {}
  int32_t operator()(TensorId t) {
    if (row_[t] < 0) {
      row_[t] = static_cast<int32_t>(id_.size());
      id_.push_back(t);
      kind_.push_back(static_cast<int>(g_.tensors[t].kind));
      bytes_.push_back(g_.tensors[t].bytes);
      name_.push_back(label_[t]);
    }
    return row_[t];
  }
  json to_json() const {
    return {{"id", id_}, {"name", name_}, {"kind", kind_}, {"bytes", bytes_}};
  }

 private:
  const Graph& g_;
  std::vector<std::string> label_;
  std::vector<int32_t> row_;
  std::vector<int32_t> id_, kind_;
  std::vector<int64_t> bytes_;
  std::vector<std::string> name_;
};

json summary_json(const ReportInput& in, const MethodResult& m, const PlanTraffic& traffic) {
  const Graph& g = in.graph;
  const Plan& p = m.plan;
  json summary = {{"graph", g.name},
                  {"source", in.source},
                  {"device", in.device.name},
                  {"device_memory_bytes", in.device.memory_bytes},
                  {"h2d_gbps", in.device.h2d_gbps},
                  {"d2h_gbps", in.device.d2h_gbps},
                  {"method", m.name},
                  {"origin", in.origin},
                  {"budget", in.budget},
                  {"peak_live", in.peak_live},
                  {"batch", optional_json(in.batch)},
                  {"ideal_us", in.ideal_us},
                  {"allocator", std::string(to_string(p.allocator))},
                  {"arena_bytes", p.arena_bytes()},
                  {"pool_bytes", p.arena_bytes()},
                  {"classes", p.pool.num_classes()},
                  {"objects", p.num_objects()},
                  {"ops", g.num_ops()},
                  {"tensors", g.num_tensors()},
                  {"steps", p.num_steps()},
                  {"swap_ins", traffic.swap_ins},
                  {"swap_outs", traffic.swap_outs},
                  {"drops", traffic.drops},
                  {"generator", "swapadvisor " SA_VERSION}};
  summary.update(sim_result_json(m.sim));
  return summary;
}

// The op types, interned, and each op's type, phase and name.
void add_ops(const Graph& g, json* data) {
  std::unordered_map<std::string, int> type_index;
  std::vector<std::string> types;
  std::vector<int> op_type, op_phase;
  std::vector<std::string> op_name;
  for (const Op& op : g.ops) {
    auto [it, fresh] = type_index.try_emplace(op.type, static_cast<int>(types.size()));
    if (fresh) types.push_back(op.type);
    op_type.push_back(it->second);
    op_phase.push_back(static_cast<int>(op.phase));
    op_name.push_back(op.name);
  }
  (*data)["types"] = types;
  (*data)["ops"] = {{"type", op_type}, {"phase", op_phase}, {"name", op_name}};
}

// The streams' lanes (every step's start and duration) and the drops.
void add_lanes(const Graph& g, const Plan& p, const SimResult& sim, const TimeUnit& ns,
               TensorRows& tensor_row, json* data) {
  struct Lane {
    DeltaColumn start;
    std::vector<int64_t> dur;
    std::vector<int32_t> subject;
    std::vector<int32_t> recompute;  // compute lane: 1 for a recompute step
  } lanes[kNumStreams];
  DeltaColumn drop_time;
  std::vector<int32_t> drop_subject;
  for (StepId s = 0; s < p.num_steps(); ++s) {
    const Step& st = p.steps[s];
    const StepTiming& t = sim.timeline[s];
    if (st.kind == StepKind::kDrop) {
      drop_time.push(ns(t.end_us));
      drop_subject.push_back(tensor_row(st.tensor()));
      continue;
    }
    Lane& l = lanes[static_cast<int>(stream_of(g, st))];
    const int64_t a = ns(t.start_us);
    l.start.push(a);
    l.dur.push_back(std::max<int64_t>(0, ns(t.end_us) - a));
    l.subject.push_back(st.runs_op() ? st.op() : tensor_row(st.tensor()));
    if (st.runs_op()) l.recompute.push_back(st.kind == StepKind::kRecompute);
  }
  // Drops finish with their waits, not in step order: sort them by time.
  {
    std::vector<std::pair<int64_t, int32_t>> d;
    int64_t acc = 0;
    for (size_t i = 0; i < drop_subject.size(); ++i)
      d.push_back({acc += drop_time.values()[i], drop_subject[i]});
    std::stable_sort(d.begin(), d.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    DeltaColumn time;
    std::vector<int32_t> subject;
    for (const auto& [t, x] : d) {
      time.push(t);
      subject.push_back(x);
    }
    (*data)["drops"] = {{"time", time.values()}, {"subject", subject}};
  }
  json lanes_json;
  const char* lane_names[kNumStreams] = {"compute", "h2d", "d2h", "collective"};
  for (int i = 0; i < kNumStreams; ++i)
    lanes_json[lane_names[i]] = {
        {"start", lanes[i].start.values()}, {"dur", lanes[i].dur}, {"subject", lanes[i].subject}};
  lanes_json["compute"]["recompute"] = lanes[0].recompute;
  (*data)["lanes"] = std::move(lanes_json);
}

// Host memory and NVMe over time (Note [Host memory over time]); null
// when the plan keeps nothing on the host.
json host_json(const Graph& g, const Plan& p, const SimResult& sim, const TimeUnit& ns) {
  const std::vector<HostMemoryPoint> points = host_memory_over_time(g, p, sim);
  if (points.empty()) return nullptr;
  DeltaColumn time, bytes, nvme;
  for (const HostMemoryPoint& pt : points) {
    time.push(ns(pt.time_us));
    bytes.push(pt.host_bytes);
    nvme.push(pt.nvme_bytes);
  }
  const HostUse u = host_use(g, p);
  return {{"time", time.values()},     {"bytes", bytes.values()},
          {"nvme", nvme.values()},     {"arena_bytes", u.total()},
          {"budget", p.host_budget},   {"nvme_tensors", p.nvme_tensors.size()},
          {"nvme_bytes", u.nvme_bytes}};
}

json memory_json(const SimResult& sim, const TimeUnit& ns) {
  DeltaColumn mem_time, mem_bytes;
  for (const MemoryPoint& pt : sim.memory) {
    mem_time.push(ns(pt.time_us));
    mem_bytes.push(pt.bytes);
  }
  return {{"time", mem_time.values()}, {"bytes", mem_bytes.values()}};
}

// The arena: the objects, and every tenancy of them, by begin.
json arena_json(const Graph& g, const Plan& p, const SimResult& sim, const TimeUnit& ns,
                TensorRows& tensor_row) {
  DeltaColumn offset;
  std::vector<int64_t> bytes;
  std::vector<int32_t> cls;
  for (const Block& b : p.objects) {
    offset.push(b.offset);
    bytes.push_back(b.bytes);
    cls.push_back(b.cls);
  }
  DeltaColumn begin;
  std::vector<int64_t> dur;
  std::vector<int32_t> object, tenant;
  for (const ObjectTenancy& t : object_tenancies(g, p, sim.timeline, sim.iteration_us)) {
    object.push_back(t.object);
    // The page's encoding (report_data.h): a tensor row, or -1 - op.
    tenant.push_back(t.tenant.is_tensor() ? tensor_row(t.tenant.tensor())
                                          : -1 - t.tenant.workspace_op());
    const int64_t a = ns(t.begin_us);
    begin.push(a);
    dur.push_back(std::max<int64_t>(0, ns(t.end_us) - a));
  }
  return {{"objects", {{"offset", offset.values()}, {"bytes", bytes}, {"cls", cls}}},
          {"tenancies",
           {{"object", object}, {"tenant", tenant}, {"begin", begin.values()}, {"dur", dur}}}};
}

// The tensors that moved bytes: one only dropped (recomputed) moved none.
json traffic_json(const Graph& g, const Plan& p, TensorRows& tensor_row) {
  std::vector<TensorTraffic> moved = tensor_traffic(g, p);
  std::erase_if(moved, [](const TensorTraffic& t) { return t.bytes == 0; });
  json tr = {{"tensor", json::array()}, {"in", json::array()},    {"out", json::array()},
             {"drops", json::array()},  {"bytes", json::array()}, {"total", moved.size()}};
  for (size_t i = 0; i < moved.size() && i < static_cast<size_t>(kReportTopRows); ++i) {
    tr["tensor"].push_back(tensor_row(moved[i].tensor));
    tr["in"].push_back(moved[i].swap_ins);
    tr["out"].push_back(moved[i].swap_outs);
    tr["drops"].push_back(moved[i].drops);
    tr["bytes"].push_back(moved[i].bytes);
  }
  return tr;
}

json stalls_json(const Graph& g, const Plan& p, const SimResult& sim, const TimeUnit& ns,
                 TensorRows& tensor_row) {
  const StallReport stalls = attribute_stalls(g, p, sim.timeline);
  std::vector<Stall> top = stalls.stalls;
  std::stable_sort(top.begin(), top.end(),
                   [](const Stall& a, const Stall& b) { return a.idle_us > b.idle_us; });
  if (top.size() > static_cast<size_t>(kReportTopRows)) top.resize(kReportTopRows);
  json tj = {{"op", json::array()},
             {"start_ns", json::array()},
             {"idle_ns", json::array()},
             {"culprit_kind", json::array()},
             {"culprit_tensor", json::array()},
             {"culprit_start_ns", json::array()}};
  for (const Stall& x : top) {
    tj["op"].push_back(p.steps[x.step].op());
    tj["start_ns"].push_back(ns(sim.timeline[x.step].start_us));
    tj["idle_ns"].push_back(ns(x.idle_us));
    const bool copy = x.culprit >= 0 && !p.steps[x.culprit].runs_op();
    tj["culprit_kind"].push_back(x.culprit >= 0 ? static_cast<int>(p.steps[x.culprit].kind) : -1);
    tj["culprit_tensor"].push_back(copy ? tensor_row(p.steps[x.culprit].tensor()) : -1);
    tj["culprit_start_ns"].push_back(
        ns(x.culprit >= 0 ? sim.timeline[x.culprit].start_us : sim.timeline[x.step].start_us));
  }
  json bt = {{"tensor", json::array()},
             {"idle_ns", json::array()},
             {"stalls", json::array()},
             {"via_in", json::array()},
             {"via_out", json::array()}};
  for (size_t i = 0; i < stalls.by_tensor.size() && i < static_cast<size_t>(kReportTopRows); ++i) {
    const TensorStall& x = stalls.by_tensor[i];
    bt["tensor"].push_back(tensor_row(x.tensor));
    bt["idle_ns"].push_back(ns(x.idle_us));
    bt["stalls"].push_back(x.stalls);
    bt["via_in"].push_back(x.via_swap_in);
    bt["via_out"].push_back(x.via_swap_out);
  }
  return {{"count", stalls.stalls.size()},
          {"total_us", stalls.total_us},
          {"unattributed_us", stalls.unattributed_us},
          {"by_cause", stall_causes_json(stalls)},
          {"top", std::move(tj)},
          {"by_tensor", std::move(bt)}};
}

}  // namespace

std::string report_data_json(const ReportInput& in) {
  SA_CHECK(
      in.main >= 0 && in.main < static_cast<int>(in.methods.size()) && in.methods[in.main].feasible,
      "the report's main method {} is not a feasible one of {}", in.main, in.methods.size());
  const Graph& g = in.graph;
  const MethodResult& m = in.methods[in.main];
  const Plan& p = m.plan;
  const SimResult& sim = m.sim;
  SA_CHECK(static_cast<int>(sim.timeline.size()) == p.num_steps(),
           "the report needs a simulated timeline ({} entries for {} steps)", sim.timeline.size(),
           p.num_steps());
  const TimeUnit ns(latest_us(sim));
  TensorRows tensor_row(g);

  json data;
  data["version"] = 1;
  // An integer while it is one exactly (up to 10^18).
  data["time_unit_ns"] = ns.ns() <= 1e18 ? json(static_cast<int64_t>(ns.ns())) : json(ns.ns());
  data["summary"] = summary_json(in, m, plan_traffic(g, p));
  json methods = json::array();
  for (size_t i = 0; i < in.methods.size(); ++i)
    methods.push_back(method_json(in.methods[i], static_cast<int>(i) == in.main));
  data["methods"] = std::move(methods);

  json kinds = json::array();
  for (int k = 0; k <= static_cast<int>(TensorKind::kTemp); ++k)
    kinds.push_back(to_string(static_cast<TensorKind>(k)));
  data["kinds"] = std::move(kinds);
  json phases = json::array();
  for (int k = 0; k <= static_cast<int>(Phase::kUpdate); ++k)
    phases.push_back(to_string(static_cast<Phase>(k)));
  data["phases"] = std::move(phases);

  add_ops(g, &data);
  add_lanes(g, p, sim, ns, tensor_row, &data);
  data["memory"] = memory_json(sim, ns);
  data["host"] = host_json(g, p, sim, ns);
  data["arena"] = arena_json(g, p, sim, ns, tensor_row);
  data["traffic"] = traffic_json(g, p, tensor_row);
  data["stalls"] = stalls_json(g, p, sim, ns, tensor_row);
  if (in.sweep) data["sweep"] = sweep_json(*in.sweep);
  // Last: every row that the tables above added is in.
  data["tensors"] = tensor_row.to_json();
  return dump_json(data);
}

}  // namespace sa
