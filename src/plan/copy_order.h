#pragma once
// The order of the copies on each link, chosen by simulation.
//
// Note [Copy order]
// -----------------
// In release order, a swap-in whose object was freed early, for an op far
// ahead, runs before one whose object was freed a little later for the very
// next op: the compute stream stalls while the link works for the future.
// The same holds for swap-outs, which free the memory a later op needs.
// In deadline order (the default), the planner writes the plan in release
// order, simulates it (plan/simulator.h) with each copy stream's next step
// chosen on the way: whenever a copy stream is free, it starts, among its
// copies whose waits are done, the one due first (earliest deadline first).
// A swap-in is due at its first user; a swap-out at the first op that waits
// for it (the first user of the memory it frees), or earlier, when a swap-in
// due earlier waits for it. The plan is then written again with its copies
// in the order they started, so simulating it gives exactly that simulation
// (put_copies_in_deadline_order returns it, and Planner gives it to the
// search as it is: Note [Planning stages] in plan/planner.h).
// Each stream's order must agree with the step list, where every wait points
// to an earlier step: a copy released at position r and due at d may sit at
// any key in [r', d-1], where r' is r or, for a swap-in, the key of the
// latest swap-out it waits for if later. Each takes key max(r', the previous
// copy's key on its stream), and a copy is chosen only if r' < d' for every
// copy d' of its stream still to place; otherwise the stream waits for the
// one with the smallest d'.
//
//   d2h                 [= out(v) =]                  (v: the victim x evicts)
//   release order   h2d              [= in(x) =][= in(y) =]   x freed at 1, for op 9
//   deadline order  h2d   [= in(y) =]    [= in(x) =]           y freed at 2, for op 3
//
// The baselines keep release order (docs/results.md, "Copy order", has the
// measurements).

#include <cstdint>
#include <span>
#include <vector>

#include "cost/device.h"
#include "graph/graph.h"
#include "plan/plan.h"
#include "plan/simulator.h"

namespace sa {

struct CopyOrder {
  SimResult sim;  // the simulation that chose the order: what Simulator::run gives for the result
  // Per lane (0: swap-ins, 1: swap-outs): the lane's plan steps in the picked
  // order, and the key each takes there.
  std::vector<StepId> steps[2];
  std::vector<int32_t> keys[2];
};

// Chooses the copies' order for plan p, whose steps are in release order;
// key[s] is the position of step s's release (Note [Copy order]).
// Returns false (and leaves *out alone) when the plan has no copy, or when a
// step waits for a copy in a way the picker does not handle (a drop or
// swap-out waiting for a copy, a swap-in for a swap-in), which only the
// baselines' directives make happen.
bool order_copies_by_deadline(const Graph& g, const Plan& p, std::span<const int32_t> key,
                              std::span<const double> op_us, const DeviceProfile& d, Simulator& sim,
                              CopyOrder* out);

// The order of steps within one key (Note [Swap planning]): the compute
// steps (a recompute before the op it serves, emitted first), then the
// releases (swap-outs and drops), then the swap-ins. The walk's writer and
// the copy-order stage sort on (key, rank_of).
inline int rank_of(StepKind k) {
  switch (k) {
    case StepKind::kCompute:
    case StepKind::kRecompute:
      return 0;
    case StepKind::kSwapOut:
    case StepKind::kDrop:
      return 1;
    case StepKind::kSwapIn:
      return 2;
  }
  return 0;
}

// Where a step of a plan written in release order stands (Note [Copy
// order]): the position of its release (key), and the order in which the
// walk made it (made: distinct per step), which breaks ties as the walk's
// writer does.
struct StepKey {
  int32_t key = 0;
  int32_t made = 0;
};

// The copy-order stage (Note [Planning stages] in plan/planner.h): puts the
// copies of *p, a plan in release order whose step s stands at keys[s], in
// the order order_copies_by_deadline() chooses, and writes the plan again
// with its steps sorted on (key, kind, made), each copy taking the key it
// was picked at and the place of the copy it replaces; *picked gets the
// simulation that chose the order, which is what Simulator::run gives for
// the new *p. Returns false, leaving both alone, when that declines.
bool put_copies_in_deadline_order(const Graph& g, std::span<const StepKey> keys,
                                  std::span<const double> op_us, const DeviceProfile& d,
                                  Simulator& sim, Plan* p, SimResult* picked);

}  // namespace sa
