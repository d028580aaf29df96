#include "search/ga.h"

#include "search/ga/search.h"

namespace sa {
namespace ga {

const Candidate& Search::best() const {
  int b = 0;
  for (int i = 1; i < static_cast<int>(pop_.size()); ++i)
    if (pop_[i].time_us < pop_[b].time_us) b = i;
  return pop_[b];
}
double Search::best_time() const {
  return best().time_us;
}

void Search::report(int gen, bool last) {
  if (!opt_.progress) return;
  const auto now = Clock::now();
  if (!last && reported_ && now - last_report_ < std::chrono::seconds(1)) return;
  SearchProgress p;
  p.kind = SearchProgress::Kind::kGeneration;
  p.last = last;
  p.unchanged = last && reported_ && gen == reported_gen_ && evaluations_ == reported_evaluations_;
  p.generation = gen;
  p.evaluations = evaluations_;
  p.seconds = elapsed();
  p.best_us = best_time();
  p.pct_of_ideal = pct_of_ideal(p.best_us);
  p.line = fmt::format(
      "search: generation {}  {} evaluations  {:.0f}/s  best {:.3f} ms  {:.1f}% of ideal", gen,
      evaluations_, p.seconds > 0 ? evaluations_ / p.seconds : 0.0, p.best_us / 1e3,
      p.pct_of_ideal);
  last_report_ = now;
  reported_ = true;
  reported_gen_ = gen;
  reported_evaluations_ = evaluations_;
  opt_.progress(p);
}

void Search::tell(SearchProgress::Kind kind, std::string line) const {
  SearchProgress p;
  p.kind = kind;
  p.line = std::move(line);
  opt_.progress(p);
}

SearchResult Search::run() {
  begin();
  while (step()) {
  }
  return finish();
}

void Search::begin() {
  if (bases_.empty()) {
    if (!share_ || share_->rank == 0) make_bases();
    if (share_) share_bases();  // Note [Shared evaluations]
  }
  // Generation 0.
  const int n = std::max(4, opt_.population);
  pop_.assign(n, Candidate{});
  const int count = batch_size(n);
  auto make = [&](Worker& w, int k) {
    Rng rng = Rng::derive(opt_.seed, 0, static_cast<uint64_t>(k));
    make_initial(w, k, rng, pop_[k]);
  };
  const std::vector<uint8_t> ran = make_and_plan(pop_, count, make, [&](Worker& w, int k) {
    if (!(pop_[k].time_us < kInf)) pop_[k].time_us = w.evaluate(pop_[k]);
  });
  // A seed that did not run in generation 0 keeps the time it was planned
  // with (Note [Search time]); the program order's was always planned.
  for (int k = 0; k < n; ++k)
    if (k < count && ran[k]) {
      ++evaluations_;
    } else if (k < static_cast<int>(bases_.size())) {
      pop_[k] = bases_[k];
      if (k == 0 && !seeds_cut_ && !adopted_) ++evaluations_;
    } else {
      pop_[k] = bases_[0];
      pop_[k].time_us = kInf;
    }
  history_.push_back(best_time());
  history_s_.push_back(elapsed());
  report(0, false);
}

bool Search::step() {
  if (out_of_budget_anywhere()) return false;
  const int gen = ++gen_;
  Rng rng = Rng::derive(opt_.seed, static_cast<uint64_t>(gen), ~uint64_t{0});
  select_pairs(rng);
  const int want = 4 * static_cast<int>(pairs_.size());
  kids_.assign(want, Candidate{});
  const int count = batch_size(want);
  // The last children are stall-guided moves, made here in order (Note
  // [Stall-guided moves]); where there are fewer, crossover makes the rest.
  const int first_local = want - static_cast<int>(opt_.local_share * want);
  const int local = make_local_moves(*workers_[0], want - first_local, &kids_[first_local]);
  auto make = [&](Worker& w, int k) {
    if (k < first_local || k >= first_local + local) make_child(w, gen, k, kids_[k]);
  };
  const std::vector<uint8_t> ran = make_and_plan(
      kids_, count, make, [&](Worker& w, int k) { kids_[k].time_us = w.evaluate(kids_[k]); });
  kids_.resize(count);
  for (int k = 0; k < count; ++k)
    if (ran[k])
      ++evaluations_;
    else
      kids_[k].time_us = kInf;
  select_survivors(rng);
  history_.push_back(best_time());
  history_s_.push_back(elapsed());
  report(gen, false);
  return true;
}

SearchResult Search::finish() {
  report(gen_, true);
  SearchResult result = summary();
  if (share_)
    take_shared_best(result);
  else
    take_best(result);
  if (!history_.empty()) history_.back() = std::min(history_.back(), result.sim.iteration_us);
  result.seconds_to_95 = seconds_to_95(history_, history_s_, result.sim.iteration_us);
  result.history = std::move(history_);
  result.seconds = elapsed();
  return result;
}

SearchResult Search::summary() {
  SearchResult result;
  result.seed_us = bases_[0].time_us;
  result.evaluations = evaluations_;
  result.generations = gen_;
  result.seconds = elapsed();
  result.seeds_seconds = seeds_seconds_;
  result.seeds_cut = seeds_cut_;
  for (const Candidate& c : bases_)
    result.best_seed_us = std::min(result.best_seed_us, c.time_us);
  for (const auto& w : workers_)
    result.longest_evaluation_s = std::max(result.longest_evaluation_s, w->slowest_s);
  result.repeats = cache_.hits();
  return result;
}

double seconds_to_95(const std::vector<double>& history, const std::vector<double>& seconds,
                     double final_us) {
  for (size_t i = 0; i < history.size() && i < seconds.size(); ++i)
    if (history[i] <= final_us / 0.95) return seconds[i];
  return seconds.empty() ? 0.0 : seconds.back();
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

}  // namespace ga

void check_islands(int processes, int islands) {
  if (processes > 1 && islands != 1 && islands != processes)
    throw Error(fmt::format(
        "{} processes search one population (--islands 1, sharing its evaluations) or {} "
        "islands, one each; not --islands {}",
        processes, processes, islands));
}

SearchResult search(const Problem& pb, const SearchOptions& options) {
  if (!(options.time_budget_s > 0) && options.max_evaluations <= 0)
    throw Error("the search needs a time budget or an evaluation budget");
  if (options.islands < 1 || options.islands > 1024)
    throw Error(fmt::format("islands must be 1 to 1024, not {}", options.islands));
  const int islands = options.islands;
  if (options.max_evaluations > 0 && options.max_evaluations < islands)
    throw Error(fmt::format("{} islands need at least as many evaluations, not {}", islands,
                            options.max_evaluations));
  const Graph& g = pb.graph;
  ga::Context ctx{pb, options, {}, true, {}, {}, {}};
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
      ctx.cheap[o] = pb.op_us[o] < ga::kCheapRecompute * (out_bytes / h2d + out_bytes / d2h);
      ctx.stateless[o] = ctx.cheap[o] && op.updates.empty();
    }
  }
  if (options.comm.size > 1) {
    check_islands(options.comm.size, options.islands);
    if (options.islands > 1) return ga::run_island_ranks(ctx);
  } else if (options.islands > 1) {
    return ga::run_islands(ctx);
  }
  ga::Search s(ctx);
  if (options.comm.size > 1) s.share_evaluations(options.comm);
  return s.run();
}

}  // namespace sa
