#pragma once
// The swap planner: given an op order and a size-class allocation, decides
// every swap and emits a Plan (plan/plan.h).
//
// Note [Swap planning]
// --------------------
// The planner walks the order once per pass. Before op i runs, every item it
// touches (inputs, updates, outputs, workspace) needs an object of its class:
//   - a free object if the class has one (the one freed earliest), else
//   - an evicted one: among the class's residents not used by op i, the one
//     whose next use is furthest (Belady; LRU for the odswap baseline),
//     preferring victims whose last use is long enough ago for the copies the
//     eviction needs to finish before op i (paper: the eviction threshold).
// An evicted tensor whose device copy is newer than its host copy, and that
// is needed again (later in the iteration, or at its end for persistent
// tensors), is swapped out; any other is dropped without a copy.
// A tensor's object is freed right after its last access if it is transient.
//
// Decisions are taken at the op that needs the object, but copies run as
// early as the object allows: a swap-in waits only for the previous tenant of
// its object to be released (its last user, then its swap-out or drop), so it
// is issued right after that release, not when the op needs it:
//     last-user(W1) → swap-out(W1) → swap-in(W3) → op3
// Each copy stream runs in order of release position, which keeps the plan
// free of deadlock (every wait points to an earlier step), or by need
// (Note [Copy order]).
//
// Steady state (two passes and more): pass 0 assumes no tensor starts on the
// device and writes every modified persistent tensor back at the end. The
// persistent tensors still resident at its end become the initial resident
// set R of the next pass, which starts with them in the same objects. A pass
// is consistent when every tensor of R is still in its object at the end.
// The tensors of R evicted on the way either leave R and the pass is repeated
// (up to max_passes times; R only shrinks), or, in the last pass, are copied
// back into their objects at the end of the iteration (their objects' last
// tenants written back or dropped first), as early as those objects allow.
// Tensors of R that are updated during the iteration start dirty (their host
// copy was not written back in the previous iteration).
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
// A swap-in is due at its first user; a swap-out at the first op that uses
// the object it frees, or earlier, when a swap-in due earlier waits for it.
// The plan is then written again with its copies in the order they started,
// so simulating it gives exactly that simulation (SwapPlanner::simulation();
// the search uses it as it is).
// Each stream's order must agree with the step list, where every wait points
// to an earlier step: a copy released at position r and due at d may sit at
// any key in [r', d-1], where r' is r or, for a swap-in, the key of the
// swap-out it waits for if later. Each takes key max(r', the previous copy's
// key on its stream), and a copy is chosen only if r' < d' for every copy d'
// of its stream still to place; otherwise the stream waits for the one with
// the smallest d'.
//
//   d2h                 [= out(v) =]                  (v: the victim x evicts)
//   release order   h2d              [= in(x) =][= in(y) =]   x freed at 1, for op 9
//   deadline order  h2d   [= in(y) =]    [= in(x) =]           y freed at 2, for op 3
//
// On the Fig. 6 configurations the deadline order was faster on every seed
// candidate tried (docs/results.md); the baselines keep release order.

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cost/device.h"
#include "graph/graph.h"
#include "plan/allocation.h"
#include "plan/plan.h"
#include "plan/simulator.h"

namespace sa {

enum class EvictionPolicy : uint8_t { kBelady, kLru };

struct PlannerOptions {
  EvictionPolicy eviction = EvictionPolicy::kBelady;
  bool steady_state = true;  // keep persistent tensors resident across iterations
  // Passes after pass 0 that drop the tensors of R evicted on the way and
  // try again, before the last one, which puts them back at the end.
  int max_passes = 0;
  // A victim is preferred when the time since its last use (in op time along
  // the order) is at least threshold x the copy time its eviction enables.
  double eviction_threshold = 1.0;
  // Order the copy streams by need (Note [Copy order]) instead of by
  // release position. Ignored with directives: the rule-based baselines
  // keep their rules' order.
  bool deadline_copy_order = true;
};

// Rules that override the policy, for the rule-based baselines (vDNN,
// swap-all, TFLMS), indexed by position in the order.
struct Directives {
  // evict_after[i]: tensors evicted right after the op at position i (copied
  // out first when their device copy is newer than the host's and still
  // needed).
  std::vector<std::vector<TensorId>> evict_after;
  // fetch_before[i]: tensors swapped in once the op at position i-1 has run
  // (not earlier), for use at position i or later.
  std::vector<std::vector<TensorId>> fetch_before;
  // Per tensor: never evicted by the policy once on the device.
  std::vector<uint8_t> never_evict;
  // Ignore the allocation's counts: give every class as many objects as the
  // directives make necessary (nothing is evicted by the policy). The plan's
  // pool then says how much memory the rules need; it may exceed the budget.
  bool unbounded = false;
};

class SwapPlanner {
 public:
  // The graph, sizes and times must outlive the planner.
  SwapPlanner(const Graph& g, const SizeTable& sizes, std::span<const double> op_us,
              const DeviceProfile& device);
  ~SwapPlanner();
  SwapPlanner(const SwapPlanner&) = delete;
  SwapPlanner& operator=(const SwapPlanner&) = delete;

  // Plans order (a topological order) with allocation a (well formed, pool
  // within budget). Returns false with *why when some op touches more items
  // of a class at once than the class has objects.
  bool plan(std::span<const OpId> order, const Allocation& a, int64_t budget,
            const PlannerOptions& options, Plan* out, std::string* why = nullptr,
            const Directives* directives = nullptr);

  // When the last plan() put its copies in deadline order: the simulation
  // that chose that order, which is what Simulator::run gives for the plan
  // (without a timeline), so a caller need not simulate it again. Else null.
  const SimResult* simulation() const;

 private:
  class Pass;
  std::unique_ptr<Pass> pass_;  // the walk and its reusable buffers
};

}  // namespace sa
