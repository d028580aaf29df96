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
// layout gene (a MemoryLayout; Note [Arena planning]):
//   - placed: the swap planner places every tenancy as it walks;
//   - packed: it counts bytes, then packs the tenancies (greedy by size),
//     which finds the plan that swaps nothing near the peak, where placing
//     online can miss by a sliver of fragmentation (walks with a lowered
//     capacity: kPackedRepairs at most). Packing is slow, so only the seeded
//     orders are packed: their children are placed;
//   - slots (kSizeClass): the pool's objects, from its CLS and CNT, laid out as offsets.
// The search keeps whichever layout is faster, per candidate. Seeds: every
// seeded order in every layout; a child takes a parent's layout and switches
// with probability kLayoutFlip. When even the pool's minimum does not fit
// the budget, there are no slots. A placed candidate also carries a home
// gene (Note [Home offsets] in plan/swap_planner.h): the seeds go without,
// half of generation 0's other candidates (copies of seeds, random orders)
// with, and a child takes it from the parent it takes the layout from,
// switched with probability kHomeFlip.
// (Why: docs/search.md.)
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
// change and mutation_prob per step (schedule) or per gene (allocation):
// small moves refine a good candidate, larger ones explore.
//
// Determinism: child k of generation n draws only from the random stream
// (seed, n, k), writes only to slot k, and every selection is made by one
// thread from the stream (seed, n). The result depends on the seed and the
// evaluation budget, not on the number of threads. With a time budget it
// also depends on timing.
//
// Note [Initial population]
// -------------------------
// The paper starts from random topological orders and random allocations;
// a random order of a training graph keeps activations alive far longer
// than the program order does. Generation 0 is seeded instead
// (SearchOptions::seeded):
//   - the program order with default_allocation() (so the result is never
//     worse than the baseline plan of the program order);
//   - eager_update_order() (optimizer updates right after their gradient)
//     with its default allocation, when the graph has update-phase ops;
//   - variants of both: light ready-set mutations of the order; classes that
//     merge neighbouring sizes within a random ratio; counts that favour the
//     small classes (AllocOps::favour_small); mutated counts and budget moves;
//   - a few (1/16) random orders, for diversity.

// Note [Recompute genes]
// -----------------------
// With SearchOptions::recompute, a candidate also carries:
//   - one gene per op: whether the planner may drop the op's outputs when it
//     evicts them and recompute them before their next use (Note
//     [Recomputation] in plan/swap_planner.h; the planner still checks that
//     it is right to);
//   - an eviction gene: Belady's furthest next use, or the DTR heuristic
//     (cost / (size x staleness), dropping only what may be recomputed:
//     EvictionPolicy::kDtr), with the depth to which recomputes remake dead
//     inputs (Note [Recompute through dead inputs]);
//   - a master gene: off, the candidate is planned swap-only whatever its
//     per-op genes say (they drift unexpressed until it is on again).
// Seeds: each base is swap-only (master off, so the search can always
// reach the swap-only plans) and has twins with the master on: one
// recomputing the cheap ops (those whose time is below kCheapRecompute of
// the time their outputs take out and back in over the link); where the
// graph has batch norms marked recompute_skips_updates, one recomputing the
// cheap ops that update nothing; and DTR twins with every op that may run
// again allowed, 3 deep and at any depth (in program order, the latter is
// the dtr baseline's plan). Children cross the per-op genes at the
// schedule's cut point and flip some (each with a probability drawn as the
// schedule mutation's), and take the eviction and master genes from the
// parent they take the layout from; the master switches with probability
// kMasterFlip. Where no twin plans faster than the fastest swap-only seed,
// the search drops its twins and is the swap-only search (same seeds, same
// random draws: the same plan for the same evaluations). (Why, and the
// twins tried and not kept: docs/search.md.)

// Note [Steady-state passes]
// --------------------------
// The planner's steady state (Note [Swap planning]) starts an iteration with
// the persistent tensors that pass 0 left on the device (R) and copies back
// at the end those of R that were evicted on the way. With no pass between,
// R holds what merely happened to be resident when pass 0 ended, which can
// be written out early and copied back after the last op with nothing left
// to overlap. The search's planner runs one pass between
// (PlannerOptions::max_passes = 1): what it evicts and does not bring back
// to its object (Note [Home offsets]) leaves R, and the last pass copies back
// only what is evicted again. It costs a third walk where R shrinks. The
// baselines plan with no pass between. (Measured: docs/search.md.)

// Note [Search time]
// ------------------
// Two promises: the search returns no plan slower than one it evaluated,
// and it keeps its time budget, though one evaluation of a big graph can
// take seconds and the seeds alone several times the budget. So:
//   - the seeds are planned as tasks over the workers within the time
//     budget, a base's swap-only plan first, then its DTR twins (the dtr
//     baseline's plan among them), then its cheap twin; the first task runs
//     whatever the budget, so there is always a plan;
//   - a seed that generation 0 does not reach keeps the time it was planned
//     with; where the budget ends in the seeds the search says so (one
//     evaluation's time, when that alone is over the budget) and returns the
//     best seed at once;
//   - each worker keeps the fastest plan it made, so the best candidate is
//     not planned again at the end, and the result is the fastest of all
//     evaluations, not only of the last population;
//   - plans made elsewhere (SearchOptions::plans: compare's baselines) are
//     returned instead where one is faster (SearchResult::from names it).
// Without a time budget every seed is planned, in the same order as before,
// so the same seed and evaluations give the same plan.

#include <cstdint>
#include <functional>
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

// What the search tells its caller as it goes (SearchOptions::progress):
// the search prints nothing itself; the CLI and the Python package print
// these lines on stderr (api/progress.h).
struct SearchProgress {
  enum class Kind : uint8_t {
    kSeedsStart,  // the seeds are about to be planned
    kSeeds,       // what the seeds reach, swapping only and recomputing
    kSeedsCut,    // the time budget ended among the seeds: no search
    kGeneration,  // the best after a generation (at most one a second)
  };
  Kind kind = Kind::kGeneration;
  std::string line;  // the line to print, without a newline
  // kGeneration only. last: the search's closing line; unchanged: its
  // numbers are those of the line before (a log need not repeat it; a
  // terminal that overwrote the line before in place needs it to end it).
  bool last = false, unchanged = false;
  int generation = 0;
  int64_t evaluations = 0;
  double seconds = 0;
  double best_us = 0;
  double pct_of_ideal = 0;
};

// Note [Islands]: the processes that search as one, each an island (from
// mpirun: runtime/mpi/ranks.h gives all_gather). size 1: this process alone.
struct IslandComm {
  int rank = 0;
  int size = 1;
  // Every process's text, in rank order, on every process (collective).
  std::function<std::vector<std::string>(const std::string&)> all_gather;
};

struct SearchOptions {
  int population = 144;         // candidates per generation (a multiple of 4)
  double mutation_prob = 0.1;   // the largest per-step / per-gene mutation probability
  double time_budget_s = 0;     // 0 = none
  int64_t max_evaluations = 0;  // 0 = none (then a time budget is needed)
  int threads = 1;
  uint64_t seed = 1;
  std::function<void(const SearchProgress&)> progress;  // null: nothing told
  PlannerOptions planner = {.max_passes = 1};           // Note [Steady-state passes]
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
  // Note [Stall-guided moves]: the share of each generation's children that
  // are the best candidate with one move where it stalls; 0: none.
  double local_share = 1.0 / 16;
  bool cache = true;  // Note [Evaluation cache]; false: every repeat planned again (same plan)
  // Note [Islands]: populations side by side (1: one, as the paper), and
  // the generations between migrations of each island's best.
  int islands = 1;
  int migrate_every = 4;
  // Several processes (comm.size > 1): with islands 1, one population whose
  // evaluations they share (Note [Shared evaluations]); with islands =
  // comm.size, island comm.rank (Note [Islands]).
  IslandComm comm;
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
  // Seconds from the start to the first generation whose best is within
  // 95% of the final plan's throughput (history <= final / 0.95).
  double seconds_to_95 = 0;
  double seed_us = 0;  // iteration time of the program order with the default allocation
  // Note [Search time].
  double best_seed_us = std::numeric_limits<double>::infinity();  // the fastest seed's time
  double seeds_seconds = 0;                                       // time spent planning the seeds
  bool seeds_cut = false;           // the time budget ended before every seed was planned
  double longest_evaluation_s = 0;  // the slowest single evaluation
  int64_t repeats = 0;              // evaluations answered from the cache (Note [Evaluation cache])
  std::string from;                 // a SeedPlan's name when its plan was returned
};

// Searches for the fastest plan of the problem's graph within its budget.
// Throws sa::Error when even the smallest allocation does not fit the
// budget. REQUIRES: a time budget or an evaluation budget.
SearchResult search(const Problem& problem, const SearchOptions& options);

// Throws sa::Error unless `processes` processes may search as `islands`
// islands: one population sharing its evaluations (islands 1: Note [Shared
// evaluations]) or one island each (Note [Islands]).
void check_islands(int processes, int islands);

}  // namespace sa
