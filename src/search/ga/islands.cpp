// Note [Islands]
// --------------
// With SearchOptions::islands = N > 1 the search runs N populations
// ("islands") side by side, each of 1/N of the population (in multiples of
// 4). Island 0 plans the
// seeds; the others start from its bases (adopt_bases) with seeds of their
// own (island_seed), so their generation 0 and every child differ. The
// evaluation budget is split evenly (island i gets E / N, the first E % N
// one more; island 0's share includes the seeds), each island stops at the
// time budget, and every migrate_every generations each island's best
// replaces the slowest candidate of the next island in the ring (0 -> 1 ->
// ... -> N-1 -> 0). Islands run in lockstep, one generation each in turn,
// each on all the search's threads: the plan depends on the seed, N and the
// evaluation budget only, not on the threads. The result is the best
// island's (every island's evaluations counted; its history is the best of
// all islands after each generation).
#include "search/ga/search.h"

namespace sa::ga {

uint64_t island_seed(uint64_t seed, int island) {
  if (island == 0) return seed;
  uint64_t s = seed ^ (0xD1B54A32D192ED03ull * static_cast<uint64_t>(island));
  return splitmix64(s);
}

void Search::take_migrant(const Candidate& c) {
  int worst = 0;
  for (int i = 1; i < static_cast<int>(pop_.size()); ++i)
    if (pop_[i].time_us >= pop_[worst].time_us) worst = i;
  pop_[worst] = c;
}

SearchOptions island_options(const SearchOptions& opt, int island, int n) {
  SearchOptions o = opt;
  o.seed = island_seed(opt.seed, island);
  // The population is shared out too (in multiples of 4), so that N
  // islands on E evaluations run as many generations as one population.
  o.population = std::max(4, opt.population / n / 4 * 4);
  if (opt.max_evaluations > 0)
    o.max_evaluations = opt.max_evaluations / n + (island < opt.max_evaluations % n ? 1 : 0);
  // Island 0 tells the seeds' lines; the generations are told by the
  // driver (IslandHistory).
  o.progress = nullptr;
  if (island == 0 && opt.progress)
    o.progress = [&opt](const SearchProgress& p) {
      if (p.kind != SearchProgress::Kind::kGeneration) opt.progress(p);
    };
  return o;
}

IslandHistory::IslandHistory(const SearchOptions& opt, const Problem& pb, int islands)
    : opt_(opt), islands_(islands), start_(Clock::now()), last_told_(start_) {
  for (double t : pb.op_us)
    ideal_ += t;
}

void IslandHistory::record(int gen, double best_us, int64_t evaluations) {
  gen_ = gen;
  evaluations_ = evaluations;
  history_.push_back(best_us);
  history_s_.push_back(std::chrono::duration<double>(Clock::now() - start_).count());
  tell(false, evaluations);
}

void IslandHistory::close(SearchResult* r) {
  tell(true, evaluations_);
  r->generations = gen_;
  if (!history_.empty()) history_.back() = std::min(history_.back(), r->sim.iteration_us);
  r->seconds_to_95 = seconds_to_95(history_, history_s_, r->sim.iteration_us);
  r->history = std::move(history_);
  r->seconds = std::chrono::duration<double>(Clock::now() - start_).count();
}

void IslandHistory::tell(bool last, int64_t evaluations) {
  if (!opt_.progress || (opt_.comm.size > 1 && opt_.comm.rank != 0)) return;
  const auto now = Clock::now();
  if (!last && now - last_told_ < std::chrono::seconds(1)) return;
  last_told_ = now;
  const double best_us = history_.empty() ? kInf : history_.back();
  SearchProgress p;
  p.last = last;
  p.generation = gen_;
  p.evaluations = evaluations;
  p.seconds = std::chrono::duration<double>(now - start_).count();
  p.best_us = best_us;
  p.pct_of_ideal = best_us < kInf ? 100 * ideal_ / best_us : 0.0;
  p.line = fmt::format(
      "search: generation {}  {} evaluations  {:.0f}/s  best {:.3f} ms  {:.1f}% of ideal  ({} "
      "islands{})",
      gen_, evaluations, p.seconds > 0 ? static_cast<double>(evaluations) / p.seconds : 0.0,
      best_us / 1e3, p.pct_of_ideal, islands_, opt_.comm.size > 1 ? ", one per process" : "");
  opt_.progress(p);
}

SearchResult run_islands(const Context& ctx) {
  const SearchOptions& opt = ctx.opt;
  const int n = opt.islands;
  std::vector<std::unique_ptr<SearchOptions>> opts;
  std::vector<std::unique_ptr<Context>> ctxs;
  std::vector<std::unique_ptr<Search>> islands;
  for (int i = 0; i < n; ++i) {
    auto o = std::make_unique<SearchOptions>(island_options(opt, i, n));
    auto c = std::make_unique<Context>(
        Context{ctx.pb, *o, ctx.size_cap, ctx.slots, ctx.cheap, ctx.stateless, ctx.eligible});
    islands.push_back(std::make_unique<Search>(*c));
    opts.push_back(std::move(o));
    ctxs.push_back(std::move(c));
  }
  auto total_evaluations = [&] {
    int64_t e = 0;
    for (const auto& s : islands)
      e += s->evaluations();
    return e;
  };
  auto overall_best = [&] {
    double b = kInf;
    for (const auto& s : islands)
      b = std::min(b, s->best_time());
    return b;
  };
  IslandHistory history(opt, ctx.pb, n);

  islands[0]->begin();
  for (int i = 1; i < n; ++i) {
    islands[i]->adopt_bases(*islands[0]);
    islands[i]->begin();
  }
  history.record(0, overall_best(), total_evaluations());
  for (int gen = 1;; ++gen) {
    bool any = false;
    for (auto& s : islands)
      any |= s->step();
    if (!any) break;
    if (opt.migrate_every > 0 && gen % opt.migrate_every == 0) {
      std::vector<Candidate> best;
      for (const auto& s : islands)
        best.push_back(s->best());
      for (int i = 0; i < n; ++i)
        islands[(i + 1) % n]->take_migrant(best[i]);
    }
    history.record(gen, overall_best(), total_evaluations());
  }

  int b = 0;
  for (int i = 1; i < n; ++i)
    if (islands[i]->best_time() < islands[b]->best_time()) b = i;
  // Only the best island plans its best again (with a timeline).
  SearchResult r = islands[b]->finish();
  r.evaluations = total_evaluations();
  const SearchResult first = islands[0]->summary();  // the island that planned the seeds
  r.seeds_seconds = first.seeds_seconds;
  r.seeds_cut = first.seeds_cut;
  r.repeats = 0;
  for (const auto& s : islands)
    r.repeats += s->repeats();
  history.close(&r);
  return r;
}

}  // namespace sa::ga
