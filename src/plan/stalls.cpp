#include "plan/stalls.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/units.h"

namespace sa {
namespace {

// Idle gaps shorter than this are rounding, not stalls (about a femtosecond).
constexpr double kMinGapUs = 1e-9;

// The step that finished last among s's waits, following drops (which finish
// with their latest wait) to the copy or compute step behind them.
StepId latest_wait(const Plan& p, std::span<const StepTiming> timeline, StepId s) {
  StepId best = -1;
  for (StepId w : p.waits_of(s))
    if (best < 0 || timeline[w].end_us > timeline[best].end_us) best = w;
  while (best >= 0 && p.steps[best].kind == StepKind::kDrop) {
    const StepId behind = latest_wait(p, timeline, best);
    if (behind < 0) break;
    best = behind;
  }
  return best;
}

// Note [Stall attribution]: why copy step c started when it did. prev: the
// step before c on its stream, or -1.
StallCause cause_of(const Plan& p, std::span<const StepTiming> timeline, StepId c, StepId prev) {
  const double start = timeline[c].start_us;
  if (prev >= 0 && timeline[prev].end_us >= start - kMinGapUs) return StallCause::kLinkBusy;
  const StepId w = latest_wait(p, timeline, c);
  if (w < 0 || timeline[w].end_us < start - kMinGapUs) return StallCause::kNotHeld;
  return p.steps[w].runs_op() ? StallCause::kWaitedForOp : StallCause::kWaitedForCopy;
}

}  // namespace

const char* to_string(StallCause c) {
  switch (c) {
    case StallCause::kNotHeld:
      return "not held";
    case StallCause::kLinkBusy:
      return "link busy";
    case StallCause::kWaitedForOp:
      return "waited for an op";
    case StallCause::kWaitedForCopy:
      return "waited for a copy";
  }
  return "?";
}

nlohmann::json stall_causes_json(const StallReport& r) {
  static constexpr const char* kKeys[kNumStallCauses] = {"not_held_us", "link_busy_us",
                                                         "waited_for_op_us", "waited_for_copy_us"};
  nlohmann::json j;
  for (int dir = 0; dir < 2; ++dir) {
    nlohmann::json& d = j[dir == 0 ? "swap_in" : "swap_out"];
    for (int c = 0; c < kNumStallCauses; ++c)
      d[kKeys[c]] = r.by_cause_us[dir][c];
  }
  return j;
}

std::string describe_stall_causes(const StallReport& r) {
  std::string out;
  for (int dir = 0; dir < 2; ++dir) {
    double total = 0;
    std::vector<std::pair<double, int>> parts;
    for (int c = 0; c < kNumStallCauses; ++c) {
      total += r.by_cause_us[dir][c];
      if (r.by_cause_us[dir][c] > 0) parts.push_back({-r.by_cause_us[dir][c], c});
    }
    if (parts.empty()) continue;
    std::sort(parts.begin(), parts.end());
    std::string inner;
    for (const auto& [neg_us, c] : parts)
      inner += fmt::format("{}{} {}", inner.empty() ? "" : ", ",
                           to_string(static_cast<StallCause>(c)), format_us(-neg_us));
    out += fmt::format("{}{} {} ({})", out.empty() ? "" : ", ", dir == 0 ? "swap-ins" : "swap-outs",
                       format_us(total), inner);
  }
  return out;
}

StallReport attribute_stalls(const Graph& g, const Plan& p, std::span<const StepTiming> timeline) {
  SA_CHECK(static_cast<int>(timeline.size()) == p.num_steps(),
           "timeline has {} entries for {} steps", timeline.size(), p.num_steps());
  StallReport r;
  // Each step's predecessor on its stream.
  std::vector<StepId> prev_on_stream(p.num_steps(), -1);
  StepId last[kNumStreams] = {-1, -1, -1, -1};
  for (StepId s = 0; s < p.num_steps(); ++s) {
    // stream_of(g, step): a data-parallel collective runs on its own stream.
    const Stream st = stream_of(g, p.steps[s]);
    if (st == Stream::kNone) continue;
    prev_on_stream[s] = last[static_cast<int>(st)];
    last[static_cast<int>(st)] = s;
  }
  std::unordered_map<TensorId, size_t> row;  // tensor -> index in by_tensor
  double prev_end = 0;
  for (StepId s = 0; s < p.num_steps(); ++s) {
    // Compute and recompute steps share the compute stream; a collective's
    // step is on the collective stream, and its waits are not the compute
    // stream's stalls.
    if (stream_of(g, p.steps[s]) != Stream::kCompute) continue;
    const double gap = timeline[s].start_us - prev_end;
    prev_end = timeline[s].end_us;
    if (gap <= kMinGapUs) continue;
    Stall st{s, gap, latest_wait(p, timeline, s)};
    r.stalls.push_back(st);
    r.total_us += gap;
    const bool is_copy = st.culprit >= 0 && (p.steps[st.culprit].kind == StepKind::kSwapIn ||
                                             p.steps[st.culprit].kind == StepKind::kSwapOut);
    if (!is_copy) {
      r.unattributed_us += gap;
      continue;
    }
    const Step& c = p.steps[st.culprit];
    r.stalls.back().cause = cause_of(p, timeline, st.culprit, prev_on_stream[st.culprit]);
    r.by_cause_us[c.kind == StepKind::kSwapIn ? 0 : 1][static_cast<int>(r.stalls.back().cause)] +=
        gap;
    auto [it, fresh] = row.try_emplace(c.tensor(), r.by_tensor.size());
    if (fresh) r.by_tensor.push_back({c.tensor()});
    TensorStall& ts = r.by_tensor[it->second];
    ts.idle_us += gap;
    ++ts.stalls;
    ++(c.kind == StepKind::kSwapIn ? ts.via_swap_in : ts.via_swap_out);
  }
  std::sort(r.by_tensor.begin(), r.by_tensor.end(), [](const TensorStall& a, const TensorStall& b) {
    return a.idle_us != b.idle_us ? a.idle_us > b.idle_us : a.tensor < b.tensor;
  });
  return r;
}

}  // namespace sa
