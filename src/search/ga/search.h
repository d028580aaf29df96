#pragma once
// The genetic search's internals (search/ga.h): candidates, workers and the
// Search, shared by the files of this folder, one role each:
//   seeds.cpp   the seeds: bases (orders, layouts) planned first, repaired;
//   evolve.cpp  new candidates: initial ones, children, mutations, selection;
//   local.cpp   stall-guided moves of the best candidate;
//   islands.cpp several populations side by side, migrating their best;
//   shared.cpp  one population whose evaluations several processes share;
// search/ga.cpp runs the generations and keeps the best (Note [Search time]).
// Only these files include this header.
//
// Note [Stall-guided moves]
// -------------------------
// Crossover and mutation change genes at random; the best candidate's
// simulation says where a change pays. Each generation, a share of the
// children (SearchOptions::local_share) are the best candidate with one
// move, from its stalls (plan/stalls.h), the longest first:
//   - recompute: a tensor whose swap-ins stalled the compute stream has its
//     producer's recompute gene set (and the master gene on), where the op
//     may run again: made once each;
//   - delay: an op that stalled moves later, past the ops after it that do
//     not depend on it, for the time it stalled (its copy gets that much
//     compute to hide behind; the planner also issues the copies of the ops
//     moved before it first). Each time the list runs out the delays double,
//     up to 16x.
// The best is simulated again with a timeline when it changes (one plan per
// new best, not counted as an evaluation). The moves are made by the
// search's thread before the children are evaluated, so the plan still
// depends only on the seed and the evaluations. (Measured: docs/search.md.)

#include "search/ga.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>

#include <fmt/format.h>

#include "cost/op_cost.h"
#include "graph/stats.h"
#include "plan/allocation.h"
#include "plan/planner.h"
#include "search/alloc_ops.h"
#include "search/ga/eval_cache.h"
#include "search/rng.h"
#include "search/schedule.h"
#include "util/error.h"

namespace sa::ga {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kLayoutFlip = 0.05;     // chance that an arena child switches layouts
constexpr double kHomeFlip = 0.05;       // chance that a placed child switches its home gene
constexpr double kMasterFlip = 0.05;     // chance that a child switches recomputation on or off
constexpr int kPackedRepairs = 2;        // packed layouts: walks with a lowered capacity at most
constexpr double kPackedNearPeak = 0.9;  // packed seeds only from this share of the peak live bytes
// Note [Recompute genes]: an op is cheap when running it again takes less
// than this share of the time its outputs take out and back in.
constexpr double kCheapRecompute = 0.5;
constexpr int kSeedRepairs = 4;  // Note [Recompute repair]: plans of a seed's genes
// Note [Recompute through dead inputs]: the DTR twins' depths.
constexpr int kDtrDepths[] = {3, kAnyDepth};
using Clock = std::chrono::steady_clock;

struct Candidate {
  std::vector<OpId> order;
  Allocation alloc;  // size classes (the arena's slots layout too)
  // Arena only (Note [Arena search] in search/ga.h): placed, packed, or
  // slots (kSizeClass: the size classes' objects as offsets).
  MemoryLayout layout = MemoryLayout::kPlaced;
  // Placed only: Note [Home offsets] (PlannerOptions::home_offsets).
  bool home = false;
  // Note [Recompute genes]: per op, whether its outputs may be dropped and
  // recomputed (empty: never).
  std::vector<uint8_t> recompute;
  // Note [Recompute genes]: the master gene; false: swap only, whatever the
  // per-op genes say (they drift unexpressed).
  bool recomputes = false;
  // Note [Recompute genes]: evict by the DTR heuristic, dropping only what
  // may be recomputed (EvictionPolicy::kDtr), instead of Belady's choice.
  bool dtr = false;
  // Note [Recompute through dead inputs]: how deep recomputes may remake
  // dead inputs (PlannerOptions::dead_input_depth).
  int dead_depth = 1;
  double time_us = kInf;
};

// What every worker reads and nobody writes during a generation.
struct Context {
  const Problem& pb;
  const SearchOptions& opt;
  std::vector<int32_t> size_cap;
  bool arena() const { return opt.allocator == Allocator::kArena; }
  bool slots = true;           // the pool's minimum fits the budget: candidates may lay out slots
  std::vector<uint8_t> cheap;  // Note [Recompute genes]: ops cheaper to run again than to copy
  std::vector<uint8_t> stateless;  // of them, those without updates (no batch norm)
  std::vector<uint8_t> eligible;   // ops that may run again at all
};

// Per-thread state: the planner and simulator keep reusable buffers.
struct Worker {
  Worker(const Context& c, EvalCache* shared)
      : ctx(c),
        cache(shared),
        planner(c.pb),
        sched(c.pb.dataflow),
        alloc_ops(c.pb.graph, c.pb.sizes, c.pb.budget, c.size_cap) {}

  // Plans x (Note [Planning stages]); *sim, when given, gets its simulation.
  PlanResult plan_candidate(const Candidate& x, Plan* out, SimResult* sim = nullptr) {
    PlannerOptions o = ctx.opt.planner;
    if (x.recomputes && !x.recompute.empty()) o.recompute = &x.recompute;
    if (x.dtr && o.recompute) o.eviction = EvictionPolicy::kDtr;  // (packs in the arena)
    o.dead_input_depth = x.dead_depth;
    if (ctx.arena() && x.layout != MemoryLayout::kSizeClass) {
      o.layout = x.layout;
      o.home_offsets = x.home && x.layout == MemoryLayout::kPlaced;
      o.max_repairs = std::min(o.max_repairs, kPackedRepairs);
      return planner.plan(x.order, nullptr, o, out, sim);
    }
    PlanResult r = planner.plan(x.order, &x.alloc, o, out, sim);
    if (r.ok && ctx.arena()) offsets_from_classes(out);
    return r;
  }

  // The candidate's iteration time (kInf when it does not plan); *planned:
  // what the planner said. The fastest plan this worker made is kept with
  // its candidate, so the search need not plan its best again at the end
  // (one evaluation of a big graph takes seconds: Note [Search time]).
  // A candidate planned before is answered from the cache (Note
  // [Evaluation cache]) unless the caller wants what the planner said.
  double evaluate(const Candidate& x, PlanResult* planned = nullptr) {
    const auto t0 = Clock::now();
    const GeneKey key = ctx.opt.cache ? expressed_key(x) : GeneKey{};
    if (!planned && ctx.opt.cache)
      if (const std::optional<double> t = cache->find(key)) {
        ++count;
        return *t;
      }
    PlanResult local;
    PlanResult& r = planned ? *planned : local;
    r = plan_candidate(x, &plan, &simulated);
    const double t = r.ok && simulated.ok ? simulated.iteration_us : kInf;
    if (ctx.opt.cache) cache->put(key, t);
    if (t < best_us) {
      best_us = t;
      best_plan = plan;
      best_candidate = x;
      best_candidate.time_us = t;
    }
    slowest_s = std::max(slowest_s, std::chrono::duration<double>(Clock::now() - t0).count());
    ++count;
    return t;
  }

  // Note [Evaluation cache]: the genes plan_candidate reads, hashed.
  GeneKey expressed_key(const Candidate& x) const {
    GeneHasher h;
    h.add_all<OpId>(x.order);
    const bool placed = ctx.arena() && x.layout != MemoryLayout::kSizeClass;
    h.add(ctx.arena() ? static_cast<uint64_t>(x.layout) + 1 : 0);
    if (ctx.arena() && x.layout == MemoryLayout::kPlaced) h.add(x.home);
    if (!placed) {
      h.add_all<ClassId>(x.alloc.cls);
      h.add_all<int32_t>(x.alloc.cnt);
    }
    const bool own = x.recomputes && !x.recompute.empty();
    h.add(own);
    if (own) h.add_all<uint8_t>(x.recompute);
    if (own || ctx.opt.planner.recompute) {  // what else recomputation reads
      h.add(x.dtr);
      h.add(static_cast<uint64_t>(x.dead_depth));
    }
    return h.key();
  }

  const Context& ctx;
  EvalCache* cache;  // shared by the workers
  Planner planner;
  SimResult simulated;  // the last evaluation's simulation
  Simulator sim;        // the best plan's, with its timeline
  Plan plan;
  double best_us = kInf;  // the fastest of this worker's evaluations
  Plan best_plan;         // its plan
  Candidate best_candidate;
  double slowest_s = 0;  // the longest of this worker's evaluations, in seconds
  int64_t count = 0;     // this worker's evaluations
  Scheduler sched;
  AllocOps alloc_ops;
  std::vector<OpId> o1, o2;
  Allocation a1, a2;
  std::vector<double> per_size;
};

// Runs f(worker, k) for k in [0, count) on one thread per worker; stops
// taking new items after the deadline. Returns which items ran.
// With first_always, item 0 runs whatever the deadline.
template <typename F>
std::vector<uint8_t> parallel_for(std::vector<std::unique_ptr<Worker>>& workers, int count,
                                  const Clock::time_point* deadline, F&& f,
                                  bool first_always = false) {
  std::vector<uint8_t> ran(count, 0);
  std::atomic<int> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  auto body = [&](Worker& w) {
    for (;;) {
      const int k = next.fetch_add(1);
      if (k >= count) return;
      if (deadline && Clock::now() >= *deadline && !(first_always && k == 0)) return;
      try {
        f(w, k);
        ran[k] = 1;
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
        next.store(count);
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 1; i < workers.size() && static_cast<int>(i) < count; ++i)
    threads.emplace_back(body, std::ref(*workers[i]));
  body(*workers[0]);
  for (auto& t : threads)
    t.join();
  if (error) std::rethrow_exception(error);
  return ran;
}

// Log-uniform in [lo, hi].
inline double log_uniform(Rng& rng, double lo, double hi) {
  if (hi <= lo) return hi;
  return std::exp(std::log(lo) + rng.uniform() * (std::log(hi) - std::log(lo)));
}

// One class per run of neighbouring sizes within ratio x the run's smallest.
inline std::vector<ClassId> merge_by_ratio(const SizeTable& t, double ratio) {
  std::vector<ClassId> cls(t.num_sizes(), 0);
  if (cls.empty()) return cls;
  int64_t first = t.sizes[0];
  for (int i = 1; i < t.num_sizes(); ++i) {
    if (static_cast<double>(t.sizes[i]) <= ratio * static_cast<double>(first)) {
      cls[i] = cls[i - 1];
    } else {
      cls[i] = cls[i - 1] + 1;
      first = t.sizes[i];
    }
  }
  return cls;
}

class Search {
 public:
  explicit Search(Context& ctx)
      : ctx_(ctx), opt_(ctx.opt), m_(ctx.pb.graph.num_ops()), recompute_(opt_.recompute) {
    for (int i = 0; i < std::max(1, opt_.threads); ++i)
      workers_.push_back(std::make_unique<Worker>(ctx_, &cache_));
    start_ = last_report_ = Clock::now();
    if (opt_.time_budget_s > 0)
      deadline_ = start_ + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(opt_.time_budget_s));
    for (double t : ctx.pb.op_us)
      ideal_ += t;
  }

  SearchResult run();  // begin(); step() until it returns false; finish()

  // Note [Islands] (islands.cpp): the search in parts.
  void begin();           // the bases (unless adopted) and generation 0
  bool step();            // one generation; false (and nothing done) when out of budget
  SearchResult finish();  // the best plan, with its timeline
  // This island starts from another's bases instead of planning its own
  // (their evaluations are the other's).
  // The bases planned here, as another island's copy (its evaluations are
  // island 0's: the processes of island_ranks.cpp).
  void plan_bases_as_copy() {
    make_bases();
    adopted_ = true;
  }
  // finish() without planning the best again: the counts and the seeds.
  SearchResult summary();
  void adopt_bases(const Search& from) {
    bases_ = from.bases_;
    recompute_ = from.recompute_;
    ctx_.slots = from.ctx_.slots;  // make_bases may have found that slots do not fit
    adopted_ = true;
  }
  const Candidate& best() const;
  double best_time() const;
  int64_t evaluations() const { return evaluations_; }
  int64_t repeats() const { return cache_.hits(); }
  // Migration: c replaces this island's slowest candidate.
  void take_migrant(const Candidate& c);
  // Note [Shared evaluations] (shared.cpp): this process evaluates its
  // share of every generation (comm.rank of comm.size); the processes
  // exchange the times and keep one population. Before begin().
  void share_evaluations(const IslandComm& comm) { share_ = &comm; }

 private:
  struct Pair {
    int p1, p2;
    int cut, cls_cut, cnt_cut;
  };

  const Clock::time_point* deadline() const {
    return opt_.time_budget_s > 0 ? &deadline_ : nullptr;
  }
  bool out_of_budget() const {
    if (opt_.max_evaluations > 0 && evaluations_ >= opt_.max_evaluations) return true;
    return opt_.time_budget_s > 0 && Clock::now() >= deadline_;
  }
  int batch_size(int want) const {
    if (opt_.max_evaluations <= 0) return want;
    return static_cast<int>(std::min<int64_t>(want, opt_.max_evaluations - evaluations_));
  }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  // An iteration time as % of ideal (0 for a candidate that does not plan).
  double pct_of_ideal(double t_us) const { return t_us < kInf ? 100 * ideal_ / t_us : 0.0; }

  // Candidates [0, count) of cands made by make(w, k) and planned by
  // eval(w, k) until the deadline; returns which ran. Under Note [Shared
  // evaluations] every process makes them all (their genes are needed
  // wherever they were planned) and plans its own, then the times are
  // exchanged.
  template <typename Make, typename Eval>
  std::vector<uint8_t> make_and_plan(std::vector<Candidate>& cands, int count, Make make,
                                     Eval eval) {
    if (!share_)
      return parallel_for(workers_, count, deadline(), [&](Worker& w, int k) {
        make(w, k);
        eval(w, k);
      });
    parallel_for(workers_, count, nullptr, make);
    std::vector<uint8_t> ran = parallel_for(workers_, count, deadline(), [&](Worker& w, int k) {
      if (owns(k)) eval(w, k);
    });
    share_times(cands, ran);
    return ran;
  }
  // Note [Shared evaluations] (shared.cpp).
  bool owns(int k) const { return !share_ || k % share_->size == share_->rank; }
  void share_bases();
  void share_times(std::vector<Candidate>& cands, std::vector<uint8_t>& ran);
  bool out_of_budget_anywhere();
  void take_shared_best(SearchResult& result);

  void make_bases();
  void plan_seeds();
  void keep_recompute_if_it_pays(size_t swap_only);
  void repair_seed(Worker& w, Candidate& c);
  bool out_of_time() const { return opt_.time_budget_s > 0 && Clock::now() >= deadline_; }
  void take_best(SearchResult& result);
  void make_initial(Worker& w, int k, Rng& rng, Candidate& c);
  void make_child(Worker& w, int gen, int k, Candidate& c);
  void mutate_alloc(Worker& w, Rng& rng, Allocation& a);
  void mutate_recompute(Rng& rng, std::vector<uint8_t>& genes) const;
  void select_pairs(Rng& rng);
  // Note [Stall-guided moves] (local.cpp).
  struct Move {
    enum Kind : uint8_t { kRecompute, kDelay } kind;
    OpId op;         // the producer to recompute, or the op to delay
    double idle_us;  // the stall behind the move
  };
  int make_local_moves(Worker& w, int want, Candidate* out);
  void analyse_best(Worker& w, const Candidate& b);
  bool delay_op(std::vector<OpId>& order, OpId o, double us);
  void select_survivors(Rng& rng);
  void report(int gen, bool last);
  // One line of another kind than kGeneration to opt_.progress. REQUIRES:
  // opt_.progress set (callers check first, so that a silent search does
  // not format its lines).
  void tell(SearchProgress::Kind kind, std::string line) const;

  Context& ctx_;
  const SearchOptions& opt_;
  const int m_;
  bool recompute_;   // Note [Recompute genes]; false also when no seed gains by it
  EvalCache cache_;  // Note [Evaluation cache]; before workers_, which point to it
  std::vector<std::unique_ptr<Worker>> workers_;
  Clock::time_point start_, deadline_, last_report_;
  bool reported_ = false;
  int reported_gen_ = -1;
  int64_t reported_evaluations_ = -1;
  double ideal_ = 0;
  double seeds_seconds_ = 0;  // planning the seeds took
  bool seeds_cut_ = false;    // the time budget ended before every seed was planned
  int64_t evaluations_ = 0;
  int gen_ = 0;                   // generations after generation 0
  bool adopted_ = false;          // the bases are another island's (adopt_bases)
  std::vector<Candidate> bases_;  // the seeds of generation 0
  std::vector<Candidate> pop_, kids_;
  std::vector<Pair> pairs_;
  std::vector<double> history_;
  std::vector<double> history_s_;   // elapsed() at each history_ entry
  Candidate analysed_;              // the candidate whose stalls moves_ lists
  std::vector<Move> moves_;         // Note [Stall-guided moves]
  size_t move_cursor_ = 0;          // the next move to make
  std::vector<int32_t> succ_mark_;  // delay_op: the op's successors, by stamp
  int32_t succ_stamp_ = 0;
  const IslandComm* share_ = nullptr;  // Note [Shared evaluations]; null: this process alone
};

bool same_genes(const Candidate& a, const Candidate& b);
// SearchResult::seconds_to_95 from the best after each generation and when.
double seconds_to_95(const std::vector<double>& history, const std::vector<double>& seconds,
                     double final_us);

// Note [Islands] (islands.cpp): the search as ctx.opt.islands islands in
// this process, or (island_ranks.cpp) as island ctx.opt.comm.rank of
// comm.size processes.
SearchResult run_islands(const Context& ctx);
SearchResult run_island_ranks(const Context& ctx);
uint64_t island_seed(uint64_t seed, int island);
// Island i of n's options: its seed, its share of the evaluations, and
// island 0 alone telling the seeds' lines.
SearchOptions island_options(const SearchOptions& opt, int island, int n);
// The islands' best after each generation, kept as a search's history and
// told as its generation lines (on process 0 only): what both drivers
// share.
class IslandHistory {
 public:
  IslandHistory(const SearchOptions& opt, const Problem& pb, int islands);
  // The best of all islands after generation gen, and their evaluations.
  void record(int gen, double best_us, int64_t evaluations);
  // The closing line, and r's history, seconds_to_95, generations and
  // seconds, r's plan being the search's result.
  void close(SearchResult* r);

 private:
  void tell(bool last, int64_t evaluations);

  const SearchOptions& opt_;
  int islands_;
  Clock::time_point start_, last_told_;
  double ideal_ = 0;
  int gen_ = 0;
  int64_t evaluations_ = 0;
  std::vector<double> history_, history_s_;
};

}  // namespace sa::ga
