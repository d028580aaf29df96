// New candidates: the initial population, children by crossover and
// mutation, the pairs chosen to mate and the survivors.

#include "search/ga/search.h"

namespace sa::ga {

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
    c.home = ctx_.arena() && rng.chance(0.5);  // (the pool's search draws no home gene)
    if (!ctx_.slots) {
      c.layout = MemoryLayout::kPlaced;
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
  c.home = base.home;
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
  if (c.layout == MemoryLayout::kPacked) c.layout = MemoryLayout::kPlaced;
  c.home = ctx_.arena() && rng.chance(0.5);  // Note [Home offsets]: half the copies try it
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
  if (c.layout == MemoryLayout::kPacked) c.layout = MemoryLayout::kPlaced;
  if (ctx_.arena() && ctx_.slots && rng.chance(kLayoutFlip))
    c.layout = c.layout == MemoryLayout::kPlaced ? MemoryLayout::kSizeClass : MemoryLayout::kPlaced;
  c.home = k % 2 == 0 ? p1.home : p2.home;
  if (ctx_.arena() && rng.chance(kHomeFlip)) c.home = !c.home;
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

}  // namespace sa::ga
