#pragma once
// The genetic search over (schedule, allocation) pairs (the paper's genetic
// algorithm, Huang et al. ASPLOS 2020, section 5): each candidate is
// swap-planned (plan/swap_planner.h) and simulated (plan/simulator.h); its
// iteration time is its fitness.
//
//   sa::Problem pb(g, device, budget);
//   sa::SearchOptions o;  o.time_budget_s = 60;  o.threads = 2;
//   sa::SearchResult r = sa::search(pb, o);
//   // r.plan, r.sim.iteration_us, r.history ...
//
// Note [Arena search]
// -------------------
// With the size-class pool, the allocation genes are the paper's (CLS,
// CNT). With planned offsets (Allocator::kArena), a candidate also carries a
// layout gene (Note [Arena planning]):
//   - placed: the swap planner places every tenancy in the arena as it walks;
//   - packed: it counts bytes, then packs the tenancies (greedy by size); at
//     or near the peak, where nothing needs to be swapped, this finds the
//     plan that swaps nothing, which placing online can miss by a sliver of
//     fragmentation (walks with a lowered capacity: kPackedRepairs at most).
//     Packing costs 10-300 ms on the captured models, so only the seeded
//     orders are packed: their children are placed;
//   - slots: the pool's objects, from its CLS and CNT, laid out as offsets.
// Placed often wins where tensor sizes are many (DenseNet's concatenations,
// the LSTM's parameters beside small activations), slots where they are few
// and repeat (a transformer's layers); the search keeps whichever is
// faster, per candidate. Seeds: every seeded order in every layout; a child
// takes a parent's layout and switches with probability kLayoutFlip. When
// even the pool's minimum does not fit the budget, there are no slots.
//
// Note [Search loop]
// ------------------
// A generation holds `population` candidates. Each next generation:
//   1. parents: population/4 pairs drawn by softmax selection (below), except
//      that a share `elite_fraction` of the pairs is the best candidate twice
//      (its crossover is a copy, so its children are pure mutations of the
//      best: a hill-climbing step inside the GA);
//   2. each pair gives 2 schedules (schedule crossover) x 2 allocations
//      (CLS/CNT crossover) = 4 children, each mutated (ready-set mutation of
//      the schedule; CLS and CNT mutation, or a budget move, on the
//      allocation), swap-planned and simulated, in parallel over `threads`;
//   3. survivors: the best of parents and children always survives; the other
//      population - 1 are drawn without replacement from parents and children
//      with probability softmax(t_norm / temperature), where
//      t_norm = (T_best - t) / T_best.
// Mutation strengths are drawn per child, log-uniform between about one
// change and mutation_prob per step (schedule) or per gene (allocation),
// rather than fixed: small in-place moves refine a good candidate, larger
// ones explore.
//
// Determinism: child k of generation n draws only from the random stream
// (seed, n, k), writes only to slot k, and every selection is made by one
// thread from the stream (seed, n). The result depends on the seed and the
// evaluation budget, not on the number of threads. With a time budget it
// also depends on timing.
//
// Note [Initial population]
// -------------------------
// The paper starts from random topological orders and random allocations.
// A random order of a training graph interleaves forward and backward ops
// and keeps activations alive far longer than the program order does, so the
// search wastes its first minutes getting back to where the program order
// starts. We seed generation 0 instead (SearchOptions::seeded):
//   - the program order with default_allocation() (so the result is never
//     worse than the baseline plan of the program order);
//   - eager_update_order() (optimizer updates right after their gradient)
//     with its default allocation, when the graph has update-phase ops;
//   - variants of both: light ready-set mutations of the order; classes that
//     merge neighbouring sizes within a random ratio; counts that favour the
//     small classes (AllocOps::favour_small); mutated counts and budget moves;
//   - a few (1/16) random orders, for diversity.
// The allocation variants matter most: the default allocation (one class per
// size, every count scaled by one factor) can thrash a class that is left at
// its minimum, e.g. rnn-8-8k at batch 256 in 16 GB simulates 4.9x faster
// once its two largest sizes (1.8 and 2.1 GB) share a class.

// Note [Recompute genes]
// -----------------------
// With SearchOptions::recompute, a candidate also carries one gene per op:
// whether the planner may drop the op's outputs when it evicts them and
// recompute them before their next use (Note [Recomputation] in
// plan/swap_planner.h; the planner still checks that it is right to). The
// seeds swap only (all genes 0), so the search can always reach the
// swap-only plans, and each has a twin whose genes say yes for the cheap
// ops: those whose time is below kCheapRecompute of the time their outputs
// take out and back in over the link (batch norm, activations, additions,
// concatenations: memory-bound, 10-100x cheaper to recompute than to copy
// over PCIe). Where the graph has batch norms marked
// recompute_skips_updates (Note [Recompute without updates]), one more twin
// with the cheap ops that update nothing: the cheap twin recomputes the
// batch norms and the convolutions between them (cheap on BF16 tensor
// cores) in chains back to the start of the net that no 25% budget holds,
// and the search, seeded without the twin the graph had before the mark,
// fell (captured BF16 ResNet-50 at 25% on a100-40gb, 2 s: 34.4% of ideal
// unmarked, 16.1% marked; 36.7% with this twin). A twin recomputing only
// cheap ops that never feed each other lifted EfficientNet-B0 and
// ShuffleNetV2 at 20% (1.32x -> 1.64x the swap-only search) but cut the
// evaluations of WResNet-152-10 in a 10 s search from 4,271 to 682 (60.5%
// -> 55.3% of ideal), so it is not seeded; nor is a population split half
// swap-only (the same slowdown). What held those two back was the repair:
// their cheap twins were refused outright (Note [Recompute repair] in
// plan/swap_planner.h); repaired, the search reaches 2x there, with or
// without that twin (seeded only where it planned faster than the cheap
// twin, it changed nothing measurable, so it is not kept either).
// One more gene says how victims are chosen: Belady's furthest
// next use (swap or drop, as above), or the DTR heuristic (cost / (size x
// staleness), dropping only what may be recomputed: EvictionPolicy::kDtr);
// each order also has DTR twins with every op that may run again allowed,
// one of which is the dtr baseline's plan in program order, so the search
// starts from it too (two twins: recomputes remake dead inputs 3 deep, or
// any depth as the baseline does; Note [Recompute through dead inputs] in
// plan/swap_planner.h; children take the depth with the eviction gene) (on MobileNetV2 at 70% of
// its peak, DTR alone reached 86.9% of ideal where the Belady seeds' search reached 58.6% in 5 s).
// Children cross the per-op genes at the schedule's cut point and flip some (each with a
// probability drawn as the schedule mutation's), and take the eviction gene from the parent they
// take the arena layout from.
//
// A master gene says whether the candidate recomputes at all: off, it is
// planned swap-only whatever its per-op genes say (they drift unexpressed
// until the gene is switched on again). The swap-only seeds have it off, their
// twins on; a child takes it from the parent it takes the layout from and
// switches it with probability kMasterFlip. Without it, every child of a
// swap-only parent recomputed the ops its mutation flipped on, so where
// recomputation does not pay (GPT at 40% of its peak: 0.97x of the
// swap-only search in bench/recompute) the search spent most of its
// evaluations on worse variants of swap-only plans, and evaluated each
// more slowly (a recompute plan may be planned again to repair it).
//
// Where no twin plans faster than the fastest swap-only seed, the search
// drops its twins and is the swap-only search (same seeds, same random
// draws: the same plan for the same evaluations), since a search that
// still explored recomputation there spent its evaluations on what the
// seeds already said does not pay: on the captured LSTM LM at 40% of its
// peak (nothing in an LSTM step runs again cheaply), bench/recompute's
// 5 s searches with recomputation were 0.1 and 1.2 points of ideal under
// the swap-only ones on v100 and H100 (seed 1), and are now level with
// them. Of bench/recompute's graphs only that one falls back; of Fig. 6's,
// brnn-4-8k (its best twin 0.5 and 1.5 points under its best seed at batch
// 128 and 64; at 64, 30 s searches, seeds 1-6: 63.7% of ideal on average
// with the twins, 64.1% without).

// Note [Steady-state passes]
// --------------------------
// The planner's steady state (Note [Swap planning]) starts an iteration with
// the persistent tensors that pass 0 left on the device (R) and copies back
// at the end those of R that were evicted on the way. With no pass between, R
// holds what merely happened to be resident when pass 0 ended: on the LSTMs,
// the first layer's momentum, which is not read until that layer's update at
// the very end, so it was written out at the start of the forward pass (whose
// outbound link the activations already fill) and copied in again after the
// last op, with nothing left to overlap (0.74 s after the last compute step
// of a 17.9 s iteration of brnn-4-8k at batch 128). The search's planner runs
// one pass between (PlannerOptions::max_passes = 1): what it evicts leaves R,
// and the last pass copies back only what is evicted again (0.27 s there). It
// costs a third walk where R shrinks (the LSTMs: 1.2-1.5x the time per
// evaluation), and it can move the search to slower candidates: on
// WResNet-152-10 at batch 16, placed ones now win over slot layouts and plan
// in 30 ms against 4, so a 20 s search evaluates 8x fewer (1,341 against
// 10,885: 58.1% of ideal against 63.0%; with 600 evaluations each, 58.0
// against 56.8%). With the same evaluations, seed 1, rnn-8-8k at batch 128
// went from 77.6% to 81.2% of ideal (seeds 2 and 3: 78.2 -> 82.2, 78.6 ->
// 81.7), brnn-4-8k at 64 63.5 -> 68.6 (seeds 2 and 3: 64.6 -> 60.5, 61.5 ->
// 62.8), captured ResNet-50 at 20% 56.0 -> 58.7, BERT-large at 40% 88.3 ->
// 89.4; NASNet-25, Inception-v4 and EfficientNet-B0 the same; WResNet-152-10
// at 32 within its seeds' spread (-4.9 to +2.8 points over four seeds,
// 72-81%). The baselines plan with no pass between, as before.

// Note [Search time]
// ------------------
// Two promises: the search returns no plan slower than one it evaluated,
// and it keeps its time budget. One evaluation of a big graph takes seconds
// (NASNet-25 at batch 64: about 7 s for a swap-only seed), and the seeds
// alone (each base's swap-only plan, its DTR twins and its repaired cheap
// twin) can take several times the budget, after which generation 0 used
// to plan the program order's seed once more and return it, at 35% of
// ideal where a twin it had planned reached 90%. So:
//   - the seeds are planned as tasks over the workers within the time
//     budget, a base's swap-only plan first, then its DTR twins (the dtr
//     baseline's plan among them), then its cheap twin; the first task runs
//     whatever the budget, so there is always a plan;
//   - a seed that generation 0 does not reach keeps the time it was planned
//     with; where the budget ends in the seeds the search says so (one
//     evaluation's time, when that alone is over the budget) and returns the
//     best seed at once;
//   - each worker keeps the fastest plan it made, so the best candidate is
//     not planned again at the end (a second 7 s there), and the result is
//     the fastest of all evaluations, not only of the last population;
//   - plans made elsewhere (SearchOptions::plans: compare's baselines) are
//     returned instead where one is faster (SearchResult::from names it).
// Without a time budget every seed is planned, in the same order as before,
// so the same seed and evaluations give the same plan.

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "cost/device.h"
#include "graph/dataflow.h"
#include "graph/graph.h"
#include "plan/plan.h"
#include "plan/problem.h"
#include "plan/simulator.h"
#include "plan/swap_planner.h"

namespace sa {

// A plan made elsewhere (a baseline's) that the search returns when it is
// faster than every candidate it evaluated (Note [Search time]).
struct SeedPlan {
  std::string name;            // the method that made it
  const Plan* plan = nullptr;  // must outlive the search
  double iteration_us = 0;     // its simulated iteration time
};

struct SearchOptions {
  int population = 144;         // candidates per generation (a multiple of 4)
  double mutation_prob = 0.1;   // the largest per-step / per-gene mutation probability
  double time_budget_s = 0;     // 0 = none
  int64_t max_evaluations = 0;  // 0 = none (then a time budget is needed)
  int threads = 1;
  uint64_t seed = 1;
  bool progress = false;                       // a progress line on stderr
  PlannerOptions planner = {.max_passes = 1};  // Note [Steady-state passes]
  Allocator allocator = kDefaultAllocator;
  bool recompute = true;  // Note [Recompute genes]; false: swap-only plans

  // Beyond the paper.
  bool seeded = true;  // Note [Initial population]; false: random
  // Softmax temperature on t_norm (the paper gives none; at 1, as t_norm is in
  // (-1, 0] for candidates within 2x of the best, selection is nearly uniform).
  double temperature = 0.02;
  double cnt_sigma = 0.2;         // CNT mutation: relative standard deviation
  double budget_move_prob = 0.5;  // chance that a child's allocation gets a budget move
  double elite_fraction = 0.5;    // share of pairs that are the best twice (pure mutation)
  // Plans the search returns instead of its own where one is faster (the
  // baselines' in compare: Note [Search time]).
  std::vector<SeedPlan> plans;
};

struct SearchResult {
  Plan plan;                // the best plan found (method "swapadvisor")
  SimResult sim;            // its simulation, with the timeline
  int64_t evaluations = 0;  // plans simulated (generation 0 included)
  double seconds = 0;
  int generations = 0;          // generations after generation 0
  std::vector<double> history;  // best iteration time (us) after each generation, 0 first
  double seed_us = 0;           // iteration time of the program order with the default allocation
  // Note [Search time].
  double best_seed_us = std::numeric_limits<double>::infinity();  // the fastest seed's time
  double seeds_seconds = 0;                                       // time spent planning the seeds
  bool seeds_cut = false;           // the time budget ended before every seed was planned
  double longest_evaluation_s = 0;  // the slowest single evaluation
  std::string from;                 // a SeedPlan's name when its plan was returned
};

// Searches for the fastest plan of the problem's graph within its budget.
// Throws sa::Error when even the smallest allocation does not fit the
// budget. REQUIRES: a time budget or an evaluation budget.
SearchResult search(const Problem& problem, const SearchOptions& options);

}  // namespace sa
