#include "report/stalls.h"

#include <algorithm>
#include <unordered_map>

#include "util/error.h"

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

}  // namespace

StallReport attribute_stalls(const Plan& p, std::span<const StepTiming> timeline) {
  SA_CHECK(static_cast<int>(timeline.size()) == p.num_steps(),
           "timeline has {} entries for {} steps", timeline.size(), p.num_steps());
  StallReport r;
  std::unordered_map<TensorId, size_t> row;  // tensor -> index in by_tensor
  double prev_end = 0;
  for (StepId s = 0; s < p.num_steps(); ++s) {
    if (p.steps[s].kind != StepKind::kCompute) continue;
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
    auto [it, fresh] = row.try_emplace(c.subject, r.by_tensor.size());
    if (fresh) r.by_tensor.push_back({c.subject});
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
