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

#include <span>
#include <vector>

#include "plan/plan.h"
#include "plan/simulator.h"

namespace sa {

struct Stall {
  StepId step = 0;      // the compute step that stalled
  double idle_us = 0;   // how long the compute stream sat idle before it
  StepId culprit = -1;  // the step it waited for that finished last; -1 if none did
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
};

// REQUIRES: timeline is the simulator's timeline of p (record_timeline).
StallReport attribute_stalls(const Plan& p, std::span<const StepTiming> timeline);

}  // namespace sa
