#pragma once
// The swap planner: given an op order and a size-class allocation or a byte
// capacity, decides every swap (and, in the arena, every offset) and emits a
// Plan (plan/plan.h) in release order: the walk, the first of the stages of
// Note [Planning stages] (plan/planner.h, whose Planner runs them all).
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
// (Note [Copy order] in plan/copy_order.h).
//
// Steady state (two passes and more): pass 0 assumes no tensor starts on the
// device and writes every modified persistent tensor back at the end. The
// persistent tensors still resident at its end become the initial resident
// set R of the next pass, which starts with them in the same objects. A pass
// is consistent when every tensor of R is still in its object at the end
// (placed, with Note [Home offsets]: or back in it, at its offset).
// The tensors of R evicted on the way either leave R and the pass is repeated
// (up to max_passes times; R only shrinks), or, in the last pass, are copied
// back into their objects at the end of the iteration (their objects' last
// tenants written back or dropped first), as early as those objects allow.
// Tensors of R that are updated during the iteration start dirty (their host
// copy was not written back in the previous iteration).
//
// Note [Arena planning]
// ---------------------
// With planned offsets (Allocator::kArena) there are no classes: every item
// is a candidate victim for every other, and each acquisition opens a
// tenancy (the item's stay on the device, from its swap-in or the op that
// creates it to its release) with its own range of the arena. Two layouts:
//
// Placed (MemoryLayout::kPlaced, the default): the walk keeps the arena as
// ranges, each held by a tenancy or free (remembering its last tenant's
// release: position and steps), and free runs indexed by size. Before op i,
// the items it needs that are not on the device get ranges, the largest
// first: of the free runs that fit (up to 32 of them, the smallest first),
// the one released earliest (its previous tenant's copies are the likeliest
// done), so a larger run released earlier beats a smaller later one; else a
// window evicted around the best victims, as Belady would choose (the
// window whose earliest next use is furthest, among those whose victims'
// last use leaves time for their copies, then the one that evicts the
// fewest bytes; a window grows to the right of its victim first). When the
// op's own resident items cut the arena into runs too small for the rest
// (first fit decreasing fails), they move: all of the op's items are laid
// out one after the other from offset 0, the largest first, and whatever
// else is in the way is evicted. A tenancy's first step waits for
// the release of every range it takes (last compute step, swap-out or drop):
//
//   time:     0   1   2   3   4   5  (op positions)
//   offset 0  [== w (param) ===================]
//   offset 4  [= a =][== in(y) ==]      a dies after op 1: in(y) waits for
//   offset 6      [== b ==][= c =]      op 1; c (made by op 3) waits for b's
//                                        swap-out or drop
//
// Nothing ever exceeds the arena, so no repair is needed; fragmentation
// shows as extra evictions instead.
//
// Packed (MemoryLayout::kPacked): the walk runs against a byte capacity C <=
// budget. An item needs bytes_[x] free bytes; victims are evicted until
// enough are. Free bytes are kept by the position at which they were
// released (a victim's bytes are free from its last use on, where its
// swap-out is keyed); a swap-in takes the earliest-released bytes, an op's
// output the latest. The bytes of the tenancies alive at once never exceed
// C. Then the tenancies are packed (plan/packing.h) into offsets, a
// persistent tensor resident at both ends of the iteration keeping one
// offset (its first and last tenancies are one item with two intervals).
// When the packing reaches above the budget, the walk is repeated with C
// lowered by the excess, up to max_repairs times. Each tenancy's first step
// then waits for every earlier tenancy it overlaps in the arena, found by
// sweeping the tenancies in time order over a map of address ranges. Where
// nothing is evicted (at the peak) this finds the plan that swaps nothing,
// which placing online can miss by a sliver of fragmentation; under
// pressure the packing fragments more (bench/bench_packing: 1.06-1.36x the
// live bytes at half the peak), so placed wins there. The baselines' rules
// (unbounded directives) always pack.
//
// In both, a swap-in is keyed at its latest wait, so that the copy order
// (Note [Copy order], plan/copy_order.h) admits it as soon as it can start.
//
// Note [Home offsets]
// -------------------
// Placed, a tensor of R that is evicted on the way and comes back ends the
// iteration wherever its last swap-in found room, so the steady state's
// consistency check (in its object at the end) drops it from R: then it is
// written out after the last op and copied in before the first, where no
// compute overlaps either copy (a 2-layer LSTM LM's embedding and its
// momentum: 10 of the 94 ms of an iteration at 40% of its peak). With
// PlannerOptions::home_offsets, the swap-in for such a tensor's last use
// goes back to its starting offset when that range is free or everything
// in it may go now as an eligible victim; it then ends in its starting
// object (objects_from_placements writes both tenancies as one) and stays
// in R. It is not always better: going home can evict what a free run
// elsewhere would have spared, and a larger R changes the pass's layout
// (test SwapPlanner.HomeOffsetsKeepAResidentThatComesBackForItsUpdate), so
// it is a gene of the search (Note [Arena search] in search/ga.h), off for
// the baselines. (Measured: docs/search.md, "Home offsets".)
//
// Note [Recomputation]
// --------------------
// A transient evicted under pressure is copied out and back in, or, where
// PlannerOptions::recompute allows it for the op that made it, dropped and
// made again by running that op before its next use (a recompute step on
// the compute stream, Note [Plan semantics]). The search's genes say which
// ops may be recomputed (search/ga.h); the planner checks that it is right
// to: the op may run again (no updates; the graph does not forbid it; a
// random op only when PlannerOptions::recompute_random), and the next use
// comes while the op's inputs still hold what it read: no update of an
// input between the op and the next use, and every transient input still
// alive then (recompute_until_). The recompute makes version 1 of the
// outputs; an output updated in place since (batch norm's, by relu_) gets
// the updates that ran before the next use replayed after it, in order
// (Note [Update replay], graph/graph.h), each one on the version it
// updated: so the window also ends where an update's inputs no longer hold
// what it read, and at an update that may not be replayed (one of a
// persistent tensor too, of two tensors, or of something it reads). When the dropped tensor is
// needed, its inputs come back first (swapped in, or recomputed in turn: chains are allowed),
// siblings still on the device are dropped (the step makes them again), and outputs no later op
// reads only pass through their objects.
//
//   op  0: a = f(x)    op 1: relu_(a)    evict a (drop: f may run again)
//   ...
//   op  9: recompute f [x -> a'],  replay relu_ [a'],  then  op 9: g(a')
//
// Recompute steps run before the compute step of the op that needs them,
// keyed at its position; the simulator charges their op time to the compute
// stream. With recompute null the plans are exactly the swap-only ones.
//
// Note [Recompute repair]: a recompute needs its op's inputs, outputs and
// workspace on the device at once, with everything its chain brings back
// pinned; when a chain is long, that may not fit beside what the op at
// that position holds, and the pass stops (NoMemoryToRecompute) with
// drops behind it that cannot be undone. plan() and plan_arena() then plan
// again with that op's recompute turned off (its outputs are swapped, or
// stay), up to kRecomputeRepairs times: a plan of the search's genes minus
// what does not fit, instead of none. Where the op that found no memory
// was not a recompute but the op at that position itself, short of room for
// its own items beside the recomputes of its inputs, the producers of its
// inputs stop recomputing instead (before, the plan was refused: at 20% of
// ShuffleNetV2's and EfficientNet-B0's peaks every plan that recomputed next
// to their largest ops, the search's seeds included, and the search reached
// 1.3x the swap-only plan instead of 2x).
//
// Note [Recompute through dead inputs]: an input of the op past its last
// use is dead (freed, with no host copy). That used to end the op's window:
// a relu whose input, a batch norm's output, is read by nothing else
// (NASNet's relu -> separable convolution -> batch norm) could be recomputed
// only until the relu itself had run, so its output, read again in the
// backward pass, was swapped: 29 GiB of the 35 GiB NASNet-25 moved out at
// batch 32, and dtr could not plan it at all. Now a dead input is made again
// too, by its producer, where that op's own window reaches (which may go
// through dead inputs in turn): relu(batch_norm(z)), with z (the
// convolution's output, alive until the batch norm's backward) brought
// back. What such a chain remakes and no later op reads passes through: it
// holds its memory until the op at that position has run (a later
// recompute there may read it), then is freed. Depth: an op's window that
// goes through a dead input made by an op of depth d has depth d + 1, and
// PlannerOptions::dead_input_depth bounds it (default 1). Belady's eviction
// does not see what a chain will pin when it runs; deeper, the search's
// seeds that recompute the cheap ops ran out of memory at their recomputes
// on NASNet-25 and were refused. The dtr baseline goes any depth, as DTR
// does (it rematerializes evicted parents recursively), and counts a dead
// tensor as an evicted one in its cost (Note [DTR heuristic]). Depth is a
// trade: NASNet-25 at batch 32 in 16 GiB needs chains deeper than 8 for DTR
// to plan at all (81% of ideal), while DenseNet-121 at 40% of its peak falls
// from 84.9% (depth 3 or less) to 75.7% (4 or more): DTR's greedy eviction
// takes dead concatenations' chains for cheap. The search seeds DTR twins
// at both (search/ga.h).
//
// Two baselines recompute without swapping (baselines/checkpoint.h,
// baselines/dtr.h). Directives::drop_only makes a directed eviction a drop
// to be recomputed or nothing: a tensor that may not be dropped (above)
// stays on the device rather than being copied out. EvictionPolicy::kDtr
// evicts on demand only what may be dropped to be recomputed (never
// persistent tensors, inputs, or transients whose producer may not run
// again), the one with the smallest DTR score (Note [DTR heuristic] in
// plan/dtr_cost.h); in the arena it counts bytes and packs afterwards
// (MemoryLayout::kPacked), as DTR counts bytes against its budget.

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cost/device.h"
#include "graph/graph.h"
#include "plan/allocation.h"
#include "plan/copy_order.h"
#include "plan/host_tier.h"
#include "plan/packing.h"
#include "plan/plan.h"

namespace sa {

// kDtr: drop-to-recompute only, by DTR's score (Note [Recomputation]); it
// needs PlannerOptions::recompute.
enum class EvictionPolicy : uint8_t { kBelady, kLru, kDtr };
inline constexpr int kAnyDepth = 1 << 30;  // PlannerOptions::dead_input_depth

struct PlannerOptions {
  EvictionPolicy eviction = EvictionPolicy::kBelady;
  bool steady_state = true;  // keep persistent tensors resident across iterations
  // Passes after pass 0 that drop the tensors of R evicted on the way and
  // try again, before the last one, which puts them back at the end (the
  // search uses 1: Note [Steady-state passes] in search/ga.h).
  int max_passes = 0;
  // A victim is preferred when the time since its last use (in op time along
  // the order) is at least threshold x the copy time its eviction enables.
  double eviction_threshold = 1.0;
  // Order the copy streams by need (Note [Copy order]) instead of by
  // release position: the copy-order stage that Planner runs after the walk
  // (Note [Planning stages]). Ignored with directives: the rule-based
  // baselines keep their rules' order.
  bool deadline_copy_order = true;
  // Arena: walks with a lowered capacity when the packing exceeds the budget
  // (Note [Arena planning]).
  // Arena: place as the walk goes, or count bytes and pack afterwards
  // (Note [Arena planning]): kPlaced or kPacked (plan() lays out size
  // classes whatever this says).
  MemoryLayout layout = MemoryLayout::kPlaced;
  // kPlaced: Note [Home offsets] (the search's home gene).
  bool home_offsets = false;
  // Note [Host tier] (plan/host_tier.h): which host slots go to NVMe first
  // when the Problem's host budget is short (the planner's stage 2a).
  HostTierPolicy host_policy = HostTierPolicy::kLeastStall;
  // Note [Recomputation]: per op, 1 where the outputs may be dropped when
  // evicted and made again by running the op before their next use (null:
  // never); whether ops that draw random numbers may run again too (the
  // runtime replays their random state).
  const std::vector<uint8_t>* recompute = nullptr;
  bool recompute_random = true;
  // Note [Recompute through dead inputs]: how many dead inputs deep a
  // recompute may remake what it reads (0: none; kAnyDepth: any).
  int dead_input_depth = 1;
  int max_repairs = 6;                             // kPacked
  PackPolicy packing = PackPolicy::kGreedyBySize;  // kPacked (plan/packing.h)
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
  // evict_after only drops tensors to be recomputed; one that may not be
  // (Note [Recomputation]) stays on the device instead of being copied out.
  bool drop_only = false;
};

// What plan() and plan_arena() say besides the plan.
struct PlanResult {
  bool ok = false;
  std::string why;          // when !ok
  int64_t capacity = 0;     // arena: the byte capacity the walk used (after repairs)
  int64_t arena_bytes = 0;  // the plan's arena_bytes(): the pool's, or the packing's peak
  // Note [Recompute repair]: the ops whose recomputes found no memory (or
  // fed an op that found none), in the passes before this plan, and were
  // then not recomputed; when !ok for that reason, last the op that found
  // no memory.
  std::vector<OpId> not_recomputed;
};

class SwapPlanner {
 public:
  // The graph, sizes and times must outlive the planner.
  SwapPlanner(const Graph& g, const SizeTable& sizes, std::span<const double> op_us,
              const DeviceProfile& device);
  ~SwapPlanner();
  SwapPlanner(const SwapPlanner&) = delete;
  SwapPlanner& operator=(const SwapPlanner&) = delete;

  // Plans order (a topological order) with the size-class allocation a (well
  // formed, pool within budget). Not ok, with why, when some op touches more
  // items of a class at once than the class has objects.
  [[nodiscard]] PlanResult plan(std::span<const OpId> order, const Allocation& a, int64_t budget,
                                const PlannerOptions& options, Plan* out,
                                const Directives* directives = nullptr);

  // Plans order with planned offsets (Note [Arena planning]) against a byte
  // capacity of at most `budget` (lowered as the packing needs). Not ok, with
  // why, when some op touches more bytes at once than the capacity, or the
  // packing stays above the budget. With unbounded directives the capacity
  // is ignored and the plan takes what the rules need (its arena_bytes()).
  [[nodiscard]] PlanResult plan_arena(std::span<const OpId> order, int64_t capacity, int64_t budget,
                                      const PlannerOptions& options, Plan* out,
                                      const Directives* directives = nullptr);

  // The items the last plan_arena() packed (its plan's objects), for
  // measuring packings (bench/bench_packing.cpp).
  std::span<const PackItem> last_packing() const;
  // Where each step of the last plan stands (its release key, and the order
  // the walk made it in), for the copy-order stage (copy_order.h).
  std::span<const StepKey> last_keys() const;

  // Note [Recompute repair]: how often a plan is made again without the
  // recompute of an op that found no memory.
  static constexpr int kRecomputeRepairs = 4;

 private:
  PlanResult plan_once(std::span<const OpId> order, const Allocation& a, int64_t budget,
                       const PlannerOptions& options, Plan* out, const Directives* directives);
  PlanResult plan_arena_once(std::span<const OpId> order, int64_t capacity, int64_t budget,
                             const PlannerOptions& options, Plan* out,
                             const Directives* directives);
  // Runs `once` with options.recompute, and again without the recompute of
  // each op that found no memory (or of the producers of its inputs),
  // up to kRecomputeRepairs times.
  template <class F>
  PlanResult with_repairs(const PlannerOptions& options, F&& once);
  class Pass;
  std::unique_ptr<Pass> pass_;  // the walk and its reusable buffers
};

}  // namespace sa
