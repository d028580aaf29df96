#include "search/ga.h"

#include <unistd.h>

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
#include "search/alloc_ops.h"
#include "search/rng.h"
#include "search/schedule.h"
#include "util/error.h"

namespace sa {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kLayoutFlip = 0.05;     // chance that an arena child switches layouts
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

// The arena's layouts (Note [Arena search] in search/ga.h).
enum class Layout : uint8_t { kPlaced, kSlots, kPacked };

struct Candidate {
  std::vector<OpId> order;
  Allocation alloc;                 // size classes (the arena's slots layout too)
  Layout layout = Layout::kPlaced;  // arena only
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
  explicit Worker(const Context& c)
      : ctx(c),
        planner(c.pb.graph, c.pb.sizes, c.pb.op_us, c.pb.device),
        sched(c.pb.dataflow),
        alloc_ops(c.pb.graph, c.pb.sizes, c.pb.budget, c.size_cap) {}

  PlanResult plan_candidate(const Candidate& x, Plan* out) {
    const Problem& pb = ctx.pb;
    PlannerOptions o = ctx.opt.planner;
    if (x.recomputes && !x.recompute.empty()) o.recompute = &x.recompute;
    if (x.dtr && o.recompute) o.eviction = EvictionPolicy::kDtr;  // (packs in the arena)
    o.dead_input_depth = x.dead_depth;
    if (ctx.arena() && x.layout != Layout::kSlots) {
      o.layout = x.layout == Layout::kPacked ? ArenaLayout::kPacked : ArenaLayout::kPlaced;
      o.max_repairs = std::min(o.max_repairs, kPackedRepairs);
      return planner.plan_arena(x.order, pb.budget, pb.budget, o, out);
    }
    PlanResult r = planner.plan(x.order, x.alloc, pb.budget, o, out);
    if (r.ok && ctx.arena()) offsets_from_classes(out);
    return r;
  }

  // The candidate's iteration time (kInf when it does not plan); *planned:
  // what the planner said. The fastest plan this worker made is kept with
  // its candidate, so the search need not plan its best again at the end
  // (one evaluation of a big graph takes seconds: Note [Search time]).
  double evaluate(const Candidate& x, PlanResult* planned = nullptr) {
    const auto t0 = Clock::now();
    PlanResult local;
    PlanResult& r = planned ? *planned : local;
    r = plan_candidate(x, &plan);
    double t = kInf;
    if (r.ok && r.simulation) {
      t = r.simulation->ok ? r.simulation->iteration_us : kInf;
    } else if (r.ok) {
      const SimResult sr = sim.run(ctx.pb.graph, plan, ctx.pb.op_us, ctx.pb.device);
      t = sr.ok ? sr.iteration_us : kInf;
    }
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

  const Context& ctx;
  SwapPlanner planner;
  Simulator sim;
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
double log_uniform(Rng& rng, double lo, double hi) {
  if (hi <= lo) return hi;
  return std::exp(std::log(lo) + rng.uniform() * (std::log(hi) - std::log(lo)));
}

// One class per run of neighbouring sizes within ratio x the run's smallest.
std::vector<ClassId> merge_by_ratio(const SizeTable& t, double ratio) {
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
      workers_.push_back(std::make_unique<Worker>(ctx_));
    start_ = last_report_ = Clock::now();
    if (opt_.time_budget_s > 0)
      deadline_ = start_ + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(opt_.time_budget_s));
    for (double t : ctx.pb.op_us)
      ideal_ += t;
    tty_ = isatty(STDERR_FILENO);
  }

  SearchResult run();

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
  void select_survivors(Rng& rng);
  double best_time() const;
  const Candidate& best() const;
  void report(int gen, bool last);

  Context& ctx_;
  const SearchOptions& opt_;
  const int m_;
  bool recompute_;  // Note [Recompute genes]; false also when no seed gains by it
  std::vector<std::unique_ptr<Worker>> workers_;
  Clock::time_point start_, deadline_, last_report_;
  bool tty_ = false, reported_ = false;
  int reported_gen_ = -1;
  int64_t reported_evaluations_ = -1;
  double ideal_ = 0;
  double seeds_seconds_ = 0;  // planning the seeds took
  bool seeds_cut_ = false;    // the time budget ended before every seed was planned
  int64_t evaluations_ = 0;
  std::vector<Candidate> bases_;  // the seeds of generation 0
  std::vector<Candidate> pop_, kids_;
  std::vector<Pair> pairs_;
  std::vector<double> history_;
};

const Candidate& Search::best() const {
  int b = 0;
  for (int i = 1; i < static_cast<int>(pop_.size()); ++i)
    if (pop_[i].time_us < pop_[b].time_us) b = i;
  return pop_[b];
}
double Search::best_time() const {
  return best().time_us;
}

void Search::make_bases() {
  const Graph& g = ctx_.pb.graph;
  const int64_t budget = ctx_.pb.budget;
  std::string why;
  Candidate prog;
  prog.order = program_order(m_);
  OpId op = kNoOp;
  if (const int64_t need = min_budget(g, &op); need > budget)
    throw Error(fmt::format("memory budget of {} bytes too small: op {} ({}) touches {} bytes",
                            budget, op, g.ops[op].type, need));
  if (!default_allocation(g, ctx_.pb.sizes, prog.order, budget, &prog.alloc, &why)) {
    if (!ctx_.arena())
      throw Error(fmt::format("memory budget of {} bytes too small: {}", budget, why));
    ctx_.slots = false;  // only placed layouts fit
  }
  Candidate eager;
  eager.order = eager_update_order(g, ctx_.pb.dataflow);
  const bool has_eager = eager.order != prog.order;
  if (has_eager && ctx_.slots)
    SA_CHECK(default_allocation(g, ctx_.pb.sizes, eager.order, budget, &eager.alloc, &why), "{}",
             why);
  // Note [Recompute genes]: every base swaps only; its twin recomputes the
  // cheap ops.
  // The arena's bases: each order placed, in slots, then packed (these
  // two only, and only near the peak, where little or nothing is swapped:
  // Note [Arena search]).
  bases_.push_back(prog);
  if (has_eager) bases_.push_back(eager);
  if (ctx_.arena()) {
    for (Layout l : {Layout::kSlots, Layout::kPacked}) {
      if (l == Layout::kSlots && !ctx_.slots) continue;
      for (Candidate* c : {&prog, &eager}) {
        if (c == &eager && !has_eager) continue;
        if (l == Layout::kPacked &&
            static_cast<double>(budget) < kPackedNearPeak * peak_live_bytes(g, c->order))
          continue;
        c->layout = l;
        bases_.push_back(*c);
      }
    }
  }
  plan_seeds();
}

// Note [Search time]: the seeds are planned as tasks in this order, each
// base's swap-only plan, then its DTR twins, then its cheap twins, over the
// workers and within the time budget (the first task whatever it is); then
// gathered into bases_ in the order generation 0 takes them (swap-only
// bases, cheap twins, DTR twins), the same whichever tasks ran first.
void Search::plan_seeds() {
  const size_t swap_only = bases_.size();
  if (opt_.recompute)
    for (Candidate& b : bases_)
      b.recompute.assign(m_, 0);
  const std::vector<Candidate> proto = bases_;  // the tasks' twins copy these
  enum class Kind : uint8_t { kSwapOnly, kDtr, kCheap };
  struct Task {
    Kind kind;
    size_t b;
  };
  std::vector<Task> tasks;
  for (size_t b = 0; b < swap_only; ++b) {
    tasks.push_back({Kind::kSwapOnly, b});
    if (!opt_.recompute) continue;
    // Note [Recompute genes]: each base has a twin recomputing the cheap
    // ops (none for packed layouts), and each placed base DTR twins.
    if (proto[b].layout == Layout::kPlaced) tasks.push_back({Kind::kDtr, b});
    if (proto[b].layout != Layout::kPacked) tasks.push_back({Kind::kCheap, b});
  }
  std::vector<std::vector<Candidate>> twins(swap_only), dtr_twins(swap_only);
  if (opt_.progress) {
    std::fprintf(stderr, "search: planning %zu seeds on %zu threads\n", tasks.size(),
                 workers_.size());
    std::fflush(stderr);
  }
  const auto ran = parallel_for(
      workers_, static_cast<int>(tasks.size()), deadline(),
      [&](Worker& w, int k) {
        const Task& t = tasks[k];
        if (t.kind == Kind::kSwapOnly) {
          bases_[t.b].time_us = w.evaluate(bases_[t.b]);
        } else if (t.kind == Kind::kCheap) {
          Candidate twin = proto[t.b];
          twin.recompute = ctx_.cheap;
          twin.recomputes = true;
          if (ctx_.stateless != ctx_.cheap) {  // batch norms marked recompute_skips_updates
            Candidate stateless = twin;
            stateless.recompute = ctx_.stateless;
            repair_seed(w, stateless);
            twins[t.b].push_back(std::move(stateless));
          }
          repair_seed(w, twin);
          twins[t.b].push_back(std::move(twin));
        } else {
          // Every op that may run again allowed (the dtr baseline's plan in
          // program order). Only the twins that plan are seeded (a base
          // that does not plan takes its share of generation 0 from those
          // that do: the RNNs', whose momentum DTR may not evict, fell from
          // 66-68% of ideal to 58-60% with a second such twin); a depth
          // whose plan takes the time of the one before is taken for the
          // same plan and not seeded again.
          Candidate twin = proto[t.b];
          twin.recompute = ctx_.eligible;
          twin.recomputes = true;
          twin.dtr = true;
          double last_us = kInf;
          for (int depth : kDtrDepths) {
            if (out_of_time()) break;
            twin.dead_depth = depth;
            twin.time_us = w.evaluate(twin);
            if (twin.time_us < kInf && twin.time_us != last_us) dtr_twins[t.b].push_back(twin);
            last_us = twin.time_us;
          }
        }
      },
      /*first_always=*/true);
  for (auto& ts : twins)
    for (Candidate& c : ts)
      bases_.push_back(std::move(c));
  for (auto& ts : dtr_twins)
    for (Candidate& c : ts)
      bases_.push_back(std::move(c));
  seeds_seconds_ = elapsed();
  seeds_cut_ = std::count(ran.begin(), ran.end(), 0) > 0 || out_of_time();
  // Cut short, the search ends with the seeds: its evaluations are theirs
  // (twins' repairs and DTR depths included), not generation 0's count.
  if (seeds_cut_)
    for (const auto& w : workers_)
      evaluations_ += w->count;
  if (opt_.recompute) keep_recompute_if_it_pays(swap_only);
  if (seeds_cut_ && opt_.progress) {
    double slowest = 0;
    for (const auto& w : workers_)
      slowest = std::max(slowest, w->slowest_s);
    const auto planned = std::count_if(bases_.begin(), bases_.end(),
                                       [](const Candidate& c) { return c.time_us < kInf; });
    std::fprintf(stderr,
                 "search: %s: returning the best of the %td seeds that plan, without searching\n",
                 slowest > opt_.time_budget_s
                     ? fmt::format("one evaluation takes {:.1f} s, more than the time budget of "
                                   "{:g} s",
                                   slowest, opt_.time_budget_s)
                           .c_str()
                     : fmt::format("planning the seeds took {:.1f} s, the whole time budget of "
                                   "{:g} s",
                                   seeds_seconds_, opt_.time_budget_s)
                           .c_str(),
                 planned);
    std::fflush(stderr);
  }
}

// Note [Recompute genes]: where no twin plans faster than the fastest
// swap-only seed, the search is the swap-only search (same seeds, same
// random draws, so the same plan for the same evaluations). Only decided
// when every seed was planned: seeds cut short by the time budget say
// nothing about the ones that were not.
void Search::keep_recompute_if_it_pays(size_t swap_only) {
  double best_swap = kInf, best_recompute = kInf;
  for (size_t b = 0; b < bases_.size(); ++b) {
    double& best = b < swap_only ? best_swap : best_recompute;
    best = std::min(best, bases_[b].time_us);
  }
  const bool pays = best_recompute < best_swap || seeds_cut_;
  if (opt_.progress) {
    std::fprintf(stderr, "search: seeds %.1f%% of ideal swapping only, %.1f%% recomputing%s\n",
                 pct_of_ideal(best_swap), pct_of_ideal(best_recompute),
                 pays ? "" : ": recomputation does not pay, searching swap-only plans");
  }
  if (pays) return;
  recompute_ = false;
  bases_.resize(swap_only);
  for (Candidate& c : bases_)
    c.recompute.clear();
}

// Note [Recompute repair]: a seed whose recomputes do not fit after the
// planner's repairs keeps the genes they turned off, and is planned again,
// up to kSeedRepairs times, so that the search starts from a recompute plan
// (ShuffleNetV2 at 20% of its peak: the cheap twin was still refused after
// the planner's repairs, and only with some random seeds did a mutated copy
// fit: 22.5% of ideal in 5 s with seed 1, 12.9% with seed 3; now 24.3%
// with both).
void Search::repair_seed(Worker& w, Candidate& c) {
  for (int k = 0; k < kSeedRepairs; ++k) {
    if (k > 0 && out_of_time()) return;
    PlanResult r;
    c.time_us = w.evaluate(c, &r);
    if (r.ok) return;
    bool changed = false;
    for (OpId o : r.not_recomputed)
      if (c.recompute[o]) {
        c.recompute[o] = 0;
        changed = true;
      }
    if (!changed) return;
  }
}

// Flips each recompute gene of an op that may run again with a probability
// drawn as the schedule's is.
void Search::mutate_recompute(Rng& rng, std::vector<uint8_t>& genes) const {
  const double p = log_uniform(rng, 1.0 / m_, opt_.mutation_prob);
  for (OpId o = 0; o < m_; ++o)
    if (ctx_.eligible[o] && rng.chance(p)) genes[o] ^= 1;
}

void Search::mutate_alloc(Worker& w, Rng& rng, Allocation& a) {
  if (rng.chance(opt_.budget_move_prob)) {
    w.alloc_ops.move_budget(a, rng);
  } else {
    const int genes = static_cast<int>(a.cls.size() + a.cnt.size());
    const double p = log_uniform(rng, std::min(1.0, 1.0 / genes), opt_.mutation_prob);
    w.alloc_ops.mutate(a, p, opt_.cnt_sigma, rng);
  }
}

// Note [Initial population].
void Search::make_initial(Worker& w, int k, Rng& rng, Candidate& c) {
  const int n = static_cast<int>(pop_.size());
  const int num_random = opt_.seeded ? n / 16 : n - 1;
  c.time_us = kInf;  // not planned yet
  if (k >= n - num_random) {
    w.sched.random_order(rng, &c.order);
    c.alloc = bases_[0].alloc;
    c.recomputes = recompute_ && rng.chance(0.5);
    if (recompute_) c.recompute = c.recomputes ? ctx_.cheap : std::vector<uint8_t>(m_, 0);
    c.dtr = false;
    c.dead_depth = 1;
    if (!ctx_.slots) {
      c.layout = Layout::kPlaced;
    } else if (opt_.seeded) {
      std::string why;
      SA_CHECK(
          default_allocation(ctx_.pb.graph, ctx_.pb.sizes, c.order, ctx_.pb.budget, &c.alloc, &why),
          "{}", why);
    } else {
      w.alloc_ops.mutate(c.alloc, 0.5, 1.0, rng);
    }
    return;
  }
  const Candidate& base = bases_[k % bases_.size()];
  c.order = base.order;
  c.alloc = base.alloc;
  c.layout = base.layout;
  c.recompute = base.recompute;
  c.recomputes = base.recomputes;
  c.dtr = base.dtr;
  c.dead_depth = base.dead_depth;
  if (k < static_cast<int>(bases_.size())) {
    c.time_us = base.time_us;  // when make_bases() planned it (kInf: not yet)
    return;
  }
  if (!c.recompute.empty() && rng.chance(0.5)) {
    mutate_recompute(rng, c.recompute);
    // A swap-only base's copy recomputes its flipped genes half the time.
    if (!c.recomputes) c.recomputes = rng.chance(0.5);
  }
  if (c.layout == Layout::kPacked) c.layout = Layout::kPlaced;
  if (rng.chance(0.5)) {
    const double p = log_uniform(rng, 1.0 / m_, opt_.mutation_prob);
    w.sched.mutate(base.order, p, rng.chance(0.5), rng, &c.order);
  }
  if (!ctx_.slots) return;
  const double r = rng.uniform();
  if (r < 0.5) {
    // Neighbouring sizes merged (sometimes), small classes favoured (sometimes).
    Allocation a;
    a.cls =
        rng.chance(0.7) ? merge_by_ratio(ctx_.pb.sizes, 1.0 + 3.0 * rng.uniform()) : base.alloc.cls;
    w.alloc_ops.expand(base.alloc, &w.per_size);
    w.alloc_ops.contract(w.per_size, a.cls, &a.cnt);
    if (!w.alloc_ops.repair(a)) return;
    if (rng.chance(0.5)) w.alloc_ops.favour_small(a, rng.between(1, a.num_classes()));
    c.alloc = std::move(a);
  } else {
    mutate_alloc(w, rng, c.alloc);
  }
}

void Search::make_child(Worker& w, int gen, int k, Candidate& c) {
  Rng rng = Rng::derive(opt_.seed, static_cast<uint64_t>(gen), static_cast<uint64_t>(k));
  const Pair& pr = pairs_[k / 4];
  const Candidate& p1 = pop_[pr.p1];
  const Candidate& p2 = pop_[pr.p2];
  // Schedule: crossover, then the ready-set mutation at a random strength.
  w.sched.crossover(p1.order, p2.order, pr.cut, &w.o1, &w.o2);
  const std::vector<OpId>& crossed = (k / 2) % 2 == 0 ? w.o1 : w.o2;
  const double p = log_uniform(rng, 1.0 / m_, opt_.mutation_prob);
  w.sched.mutate(crossed, p, rng.chance(0.5), rng, &c.order);
  // Recompute genes: one-point crossover at the schedule's cut, then flips.
  if (recompute_) {
    const Candidate& first = k % 2 == 0 ? p1 : p2;
    const Candidate& second = k % 2 == 0 ? p2 : p1;
    c.recompute.assign(first.recompute.begin(), first.recompute.begin() + pr.cut);
    c.recompute.insert(c.recompute.end(), second.recompute.begin() + pr.cut,
                       second.recompute.end());
    if (rng.chance(0.5)) mutate_recompute(rng, c.recompute);
  }
  // Arena: one parent's layout (packed ones are seeds only: their children
  // are placed), switched now and then.
  c.layout = k % 2 == 0 ? p1.layout : p2.layout;
  c.dtr = recompute_ && (k % 2 == 0 ? p1.dtr : p2.dtr);
  c.dead_depth = k % 2 == 0 ? p1.dead_depth : p2.dead_depth;
  c.recomputes = recompute_ && (k % 2 == 0 ? p1.recomputes : p2.recomputes);
  if (recompute_ && rng.chance(kMasterFlip)) c.recomputes = !c.recomputes;
  if (c.layout == Layout::kPacked) c.layout = Layout::kPlaced;
  if (ctx_.arena() && ctx_.slots && rng.chance(kLayoutFlip))
    c.layout = c.layout == Layout::kPlaced ? Layout::kSlots : Layout::kPlaced;
  if (!ctx_.slots) return;
  // Allocation: crossover, then a mutation or a budget move.
  w.alloc_ops.crossover(p1.alloc, p2.alloc, pr.cls_cut, pr.cnt_cut, &w.a1, &w.a2);
  c.alloc = k % 2 == 0 ? w.a1 : w.a2;
  mutate_alloc(w, rng, c.alloc);
}

// Softmax selection of parents (with replacement), Note [Search loop].
void Search::select_pairs(Rng& rng) {
  const int n = static_cast<int>(pop_.size());
  const double tb = best_time();
  std::vector<double> cum(n);
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const double t = pop_[i].time_us;
    sum += t < kInf ? std::exp((tb - t) / tb / opt_.temperature) : 0.0;
    cum[i] = sum;
  }
  auto draw = [&]() {
    const double u = rng.uniform() * sum;
    const int i = static_cast<int>(std::upper_bound(cum.begin(), cum.end(), u) - cum.begin());
    return std::min(i, n - 1);
  };
  const int sizes = ctx_.pb.sizes.num_sizes();
  pairs_.resize(n / 4);
  int b = 0;
  for (int i = 1; i < n; ++i)
    if (pop_[i].time_us < pop_[b].time_us) b = i;
  for (Pair& pr : pairs_) {
    if (rng.chance(opt_.elite_fraction)) {
      pr.p1 = pr.p2 = b;
    } else {
      pr.p1 = draw();
      pr.p2 = draw();
      for (int tries = 0; tries < 4 && pr.p2 == pr.p1; ++tries)
        pr.p2 = draw();
    }
    pr.cut = rng.between(0, m_);
    pr.cls_cut = sizes > 0 ? rng.between(1, sizes) : 0;
    pr.cnt_cut = rng.between(0, sizes);
  }
}

// The best survives; the others are drawn without replacement with
// probability proportional to exp(t_norm / temperature) (Gumbel top-k).
void Search::select_survivors(Rng& rng) {
  const int n = static_cast<int>(pop_.size());
  std::vector<Candidate*> all;
  for (auto& c : pop_)
    all.push_back(&c);
  for (auto& c : kids_)
    all.push_back(&c);
  double tb = kInf;
  for (Candidate* c : all)
    tb = std::min(tb, c->time_us);
  std::vector<std::pair<double, int>> keys(all.size());
  int best = -1;
  for (int i = 0; i < static_cast<int>(all.size()); ++i) {
    const double t = all[i]->time_us;
    const double u = 1.0 - rng.uniform();  // (0, 1]
    const double gumbel = -std::log(-std::log(u) + 1e-300);
    keys[i] = {t < kInf ? (tb - t) / tb / opt_.temperature + gumbel : -kInf, i};
    if (best < 0 && t == tb) best = i;
  }
  keys[best].first = kInf;
  std::partial_sort(keys.begin(), keys.begin() + n, keys.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<Candidate> next(n);
  for (int i = 0; i < n; ++i)
    next[i] = std::move(*all[keys[i].second]);
  pop_ = std::move(next);
}

void Search::report(int gen, bool last) {
  if (!opt_.progress) return;
  const auto now = Clock::now();
  if (!last && reported_ && now - last_report_ < std::chrono::seconds(1)) return;
  // The closing line repeats nothing a log already has.
  if (last && !tty_ && reported_ && gen == reported_gen_ && evaluations_ == reported_evaluations_)
    return;
  last_report_ = now;
  reported_ = true;
  reported_gen_ = gen;
  reported_evaluations_ = evaluations_;
  const double secs = elapsed();
  const double t = best_time();
  std::string line = fmt::format(
      "search: generation {}  {} evaluations  {:.0f}/s  best {:.3f} ms  {:.1f}% of ideal", gen,
      evaluations_, secs > 0 ? evaluations_ / secs : 0.0, t / 1e3, pct_of_ideal(t));
  if (tty_)
    std::fprintf(stderr, "\r%s\x1b[K%s", line.c_str(), last ? "\n" : "");
  else
    std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

SearchResult Search::run() {
  SearchResult result;
  make_bases();
  {
    // Generation 0.
    const int n = std::max(4, opt_.population);
    pop_.assign(n, Candidate{});
    const int count = batch_size(n);
    const auto ran = parallel_for(workers_, count, deadline(), [&](Worker& w, int k) {
      Rng rng = Rng::derive(opt_.seed, 0, static_cast<uint64_t>(k));
      make_initial(w, k, rng, pop_[k]);
      if (!(pop_[k].time_us < kInf)) pop_[k].time_us = w.evaluate(pop_[k]);
    });
    // A seed that did not run in generation 0 keeps the time it was planned
    // with (Note [Search time]); the program order's was always planned.
    for (int k = 0; k < n; ++k)
      if (k < count && ran[k]) {
        ++evaluations_;
      } else if (k < static_cast<int>(bases_.size())) {
        pop_[k] = bases_[k];
        if (k == 0 && !seeds_cut_) ++evaluations_;
      } else {
        pop_[k] = bases_[0];
        pop_[k].time_us = kInf;
      }
    result.seed_us = bases_[0].time_us;
    history_.push_back(best_time());
    report(0, false);
  }
  int gen = 0;
  while (!out_of_budget()) {
    ++gen;
    Rng rng = Rng::derive(opt_.seed, static_cast<uint64_t>(gen), ~uint64_t{0});
    select_pairs(rng);
    const int want = 4 * static_cast<int>(pairs_.size());
    kids_.assign(want, Candidate{});
    const int count = batch_size(want);
    const auto ran = parallel_for(workers_, count, deadline(), [&](Worker& w, int k) {
      make_child(w, gen, k, kids_[k]);
      kids_[k].time_us = w.evaluate(kids_[k]);
    });
    kids_.resize(count);
    for (int k = 0; k < count; ++k)
      if (ran[k])
        ++evaluations_;
      else
        kids_[k].time_us = kInf;
    select_survivors(rng);
    history_.push_back(best_time());
    report(gen, false);
  }
  report(gen, true);

  take_best(result);
  if (!history_.empty()) history_.back() = std::min(history_.back(), result.sim.iteration_us);
  result.evaluations = evaluations_;
  result.generations = gen;
  result.history = std::move(history_);
  result.seconds = elapsed();
  result.seeds_seconds = seeds_seconds_;
  result.seeds_cut = seeds_cut_;
  for (const Candidate& c : bases_)
    result.best_seed_us = std::min(result.best_seed_us, c.time_us);
  for (const auto& w : workers_)
    result.longest_evaluation_s = std::max(result.longest_evaluation_s, w->slowest_s);
  return result;
}

bool same_genes(const Candidate& a, const Candidate& b) {
  return a.order == b.order && a.alloc.cls == b.alloc.cls && a.alloc.cnt == b.alloc.cnt &&
         a.layout == b.layout && a.recompute == b.recompute && a.recomputes == b.recomputes &&
         a.dtr == b.dtr && a.dead_depth == b.dead_depth;
}

// Note [Search time]: the fastest plan of every evaluation the search made
// (its workers keep theirs), or of the plans the caller gave it; planned
// again only when no worker kept it.
void Search::take_best(SearchResult& result) {
  const Candidate* b = &best();
  const Worker* kept = nullptr;
  for (const auto& w : workers_) {
    if (w->best_us < b->time_us && (!kept || w->best_us < kept->best_us)) kept = w.get();
  }
  if (kept) b = &kept->best_candidate;
  for (const auto& w : workers_)
    if (!kept && w->best_us == b->time_us && same_genes(w->best_candidate, *b)) kept = w.get();
  const SeedPlan* given = nullptr;
  for (const SeedPlan& p : opt_.plans)
    if (p.iteration_us < b->time_us && (!given || p.iteration_us < given->iteration_us)) given = &p;
  Worker& w = *workers_[0];
  if (given) {
    result.plan = *given->plan;
    result.from = given->name;
  } else if (!(b->time_us < kInf)) {
    const PlanResult seed = w.plan_candidate(bases_[0], &result.plan);
    throw Error(fmt::format("no plan found within the budget of {} bytes in {} evaluations{}",
                            ctx_.pb.budget, evaluations_,
                            seed.ok ? "" : ": the program order's: " + seed.why));
  } else if (kept) {
    result.plan = kept->best_plan;
  } else {
    const PlanResult planned = w.plan_candidate(*b, &result.plan);
    SA_CHECK(planned.ok, "the best candidate no longer plans: {}", planned.why);
  }
  result.plan.method = "swapadvisor";
  SimOptions so;
  so.record_timeline = true;
  result.sim = w.sim.run(ctx_.pb.graph, result.plan, ctx_.pb.op_us, ctx_.pb.device, so);
}

}  // namespace

SearchResult search(const Problem& pb, const SearchOptions& options) {
  if (!(options.time_budget_s > 0) && options.max_evaluations <= 0)
    throw Error("the search needs a time budget or an evaluation budget");
  const Graph& g = pb.graph;
  Context ctx{pb, options, {}, true, {}, {}, {}};
  // The most objects of each size that could be used at once, in the orders
  // the search starts from (the size classes' genes).
  std::vector<ClassId> identity(pb.sizes.num_sizes());
  std::iota(identity.begin(), identity.end(), 0);
  ctx.size_cap = demand_counts(g, pb.sizes, identity, program_order(g.num_ops()));
  const auto eager = demand_counts(g, pb.sizes, identity, eager_update_order(g, pb.dataflow));
  for (size_t i = 0; i < eager.size(); ++i)
    ctx.size_cap[i] = std::max(ctx.size_cap[i], eager[i]);
  if (options.recompute) {
    const int m = g.num_ops();
    ctx.cheap.assign(m, 0);
    ctx.stateless.assign(m, 0);
    ctx.eligible.assign(m, 0);
    const double h2d = pb.device.h2d_bytes_per_us(), d2h = pb.device.d2h_bytes_per_us();
    for (OpId o = 0; o < m; ++o) {
      const Op& op = g.ops[o];
      if (!may_recompute(op) || (op.random && !options.planner.recompute_random)) continue;
      ctx.eligible[o] = 1;
      double out_bytes = 0;
      for (TensorId t : op.outputs)
        out_bytes += static_cast<double>(g.tensors[t].bytes);
      ctx.cheap[o] = pb.op_us[o] < kCheapRecompute * (out_bytes / h2d + out_bytes / d2h);
      ctx.stateless[o] = ctx.cheap[o] && op.updates.empty();
    }
  }
  Search s(ctx);
  return s.run();
}

}  // namespace sa
