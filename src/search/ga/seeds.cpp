// The search's seeds (Note [Search time] in search/ga.h): the bases (orders
// and layouts) each planned once, the recompute choice kept when it pays,
// seeds repaired.

#include "search/ga/search.h"

namespace sa::ga {

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
    for (MemoryLayout l : {MemoryLayout::kSizeClass, MemoryLayout::kPacked}) {
      if (l == MemoryLayout::kSizeClass && !ctx_.slots) continue;
      for (Candidate* c : {&prog, &eager}) {
        if (c == &eager && !has_eager) continue;
        if (l == MemoryLayout::kPacked &&
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
    if (proto[b].layout == MemoryLayout::kPlaced) tasks.push_back({Kind::kDtr, b});
    if (proto[b].layout != MemoryLayout::kPacked) tasks.push_back({Kind::kCheap, b});
  }
  std::vector<std::vector<Candidate>> twins(swap_only), dtr_twins(swap_only);
  if (opt_.progress)
    tell(SearchProgress::Kind::kSeedsStart,
         fmt::format("search: planning {} seeds on {} threads", tasks.size(), workers_.size()));
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
    const std::string why =
        slowest > opt_.time_budget_s
            ? fmt::format("one evaluation takes {:.1f} s, more than the time budget of {:g} s",
                          slowest, opt_.time_budget_s)
            : fmt::format("planning the seeds took {:.1f} s, the whole time budget of {:g} s",
                          seeds_seconds_, opt_.time_budget_s);
    tell(SearchProgress::Kind::kSeedsCut,
         fmt::format("search: {}: returning the best of the {} seeds that plan, without searching",
                     why, planned));
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
  if (opt_.progress)
    tell(SearchProgress::Kind::kSeeds,
         fmt::format("search: seeds {:.1f}% of ideal swapping only, {:.1f}% recomputing{}",
                     pct_of_ideal(best_swap), pct_of_ideal(best_recompute),
                     pays ? "" : ": recomputation does not pay, searching swap-only plans"));
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

}  // namespace sa::ga
