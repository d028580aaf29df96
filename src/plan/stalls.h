#pragma once
// Where the compute stream stalled, and which copies it waited for.
//
// Note [Stall attribution]
// ------------------------
// A compute step stalls when it starts after the previous compute step ended
// (the first one: after time 0): the stream was free, so some step it waits
// for was not done. Its culprit is the wait that finished last, the one that
// actually held it back. A drop finishes when its latest wait does, so the
// attribution follows drops to the step behind them. The culprit is usually a
// swap-in (the data was not on the device yet); it is a swap-out when the op
// needs the memory that the swap-out frees.
//
//   time →    0        10       16      21
//   compute   [== op0 ==]......[= op1 =]      op1 waits for a and b; a ends
//   h2d       [====== a: swap-in t3 =]        last, at 16: op1 stalled 6 us
//   d2h       [= b =]                         on the swap-in of t3
//
// The stalls add up to SimResult::stall_us.
//
// Why the culprit copy ended when it did, its cause: it started late because
// its stream was busy with the copy before it (kLinkBusy), or because it
// waited for an op (kWaitedForOp: e.g. the last user of the object it
// fills) or for another copy (kWaitedForCopy: e.g. the swap-out that frees
// its object); or it started as soon as the iteration did (kNotHeld) and its
// own length is the stall. When the stream and a wait free it at the same
// time, the stream is blamed. In the drawing above, a is kNotHeld.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "plan/plan.h"
#include "plan/simulator.h"

namespace sa {

enum class StallCause : uint8_t { kNotHeld, kLinkBusy, kWaitedForOp, kWaitedForCopy };
inline constexpr int kNumStallCauses = 4;

struct Stall {
  StepId step = 0;      // the compute step that stalled
  double idle_us = 0;   // how long the compute stream sat idle before it
  StepId culprit = -1;  // the step it waited for that finished last; -1 if none did
  StallCause cause = StallCause::kNotHeld;  // why the culprit copy started when it did
};

// The stalls caused by one tensor's copies.
struct TensorStall {
  TensorId tensor = 0;
  double idle_us = 0;  // sum over the stalls it caused
  int stalls = 0;
  int via_swap_in = 0;   // of those, the ones where its swap-in was the culprit
  int via_swap_out = 0;  // ... its swap-out
};

struct StallReport {
  std::vector<Stall> stalls;           // in step order
  std::vector<TensorStall> by_tensor;  // the most idle time first (ties: lower tensor id)
  double total_us = 0;                 // sum of every stall's idle_us
  double unattributed_us = 0;          // idle time with no copy to blame (none expected)
  // Idle time by the culprit's direction (0: swap-in, 1: swap-out) and cause.
  double by_cause_us[2][kNumStallCauses] = {};
};

// "link busy", "waited for an op", ...
const char* to_string(StallCause c);

// {"swap_in": {"not_held_us", "link_busy_us", "waited_for_op_us",
// "waited_for_copy_us"}, "swap_out": {...}}: StallReport::by_cause_us.
nlohmann::json stall_causes_json(const StallReport& r);

// "swap-ins 1.13 s (link busy 0.99 s, waited for a copy 0.12 s), swap-outs
// 0.78 s (link busy 0.78 s)": the nonzero causes, largest first.
std::string describe_stall_causes(const StallReport& r);

// REQUIRES: timeline is the simulator's timeline of p (record_timeline).
StallReport attribute_stalls(const Graph& g, const Plan& p, std::span<const StepTiming> timeline);

}  // namespace sa
