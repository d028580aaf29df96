// Note [Islands], across processes: under `mpirun -np N swapadvisor plan
// --islands N`, process r runs island r of N (islands.cpp runs them all in one process)
// and the islands meet through SearchOptions::comm: each generation every
// island says whether it stepped, its best and its evaluations (one gather:
// the islands stop together, so none waits in a gather the others left);
// every migrate_every generations each sends its best candidate and takes
// the one of the island before it in the ring. Every process plans the
// bases itself (the same on each, so that a process need not wait for
// another's) and only island 0 counts them as islands.cpp does. At the end
// the best island (its rank the lowest among equals) plans its best again
// and sends the plan file's text; every process returns that plan, so any
// of them may write it. The same seed, N and evaluations give the plan
// that `--islands N` gives in one process.
#include "plan/plan_io.h"
#include "search/ga/candidate_bytes.h"
#include "search/ga/search.h"

namespace sa::ga {
namespace {

struct IslandState {
  bool stepped = false;
  double best_us = kInf;
  int64_t evaluations = 0;
  int64_t repeats = 0;
};

}  // namespace

SearchResult run_island_ranks(const Context& ctx) {
  const IslandComm& comm = ctx.opt.comm;
  const int n = comm.size, me = comm.rank;
  SearchOptions o = island_options(ctx.opt, me, n);
  Context c{ctx.pb, o, ctx.size_cap, ctx.slots, ctx.cheap, ctx.stateless, ctx.eligible};
  Search s(c);
  auto gather = [&](bool stepped) {
    ByteWriter p;
    p.put(stepped);
    p.put(s.best_time());
    p.put(s.evaluations());
    p.put(s.repeats());
    std::vector<IslandState> all;
    for (const std::string& t : gather_all(comm, p.take())) {
      ByteReader u(t);
      IslandState st;
      st.stepped = u.get<bool>();
      st.best_us = u.get<double>();
      st.evaluations = u.get<int64_t>();
      st.repeats = u.get<int64_t>();
      all.push_back(st);
    }
    return all;
  };
  // The islands' sums, and the best island (the lowest rank among equals).
  int64_t evaluations = 0, repeats = 0;
  int b = 0;
  auto sum_up = [&](const std::vector<IslandState>& state) {
    evaluations = repeats = 0;
    b = 0;
    for (int r = 0; r < n; ++r) {
      evaluations += state[r].evaluations;
      repeats += state[r].repeats;
      if (state[r].best_us < state[b].best_us) b = r;
    }
    return state[b].best_us;
  };
  IslandHistory history(ctx.opt, ctx.pb, n);
  if (me != 0) s.plan_bases_as_copy();
  s.begin();
  history.record(0, sum_up(gather(false)), evaluations);
  for (int gen = 1;; ++gen) {
    const std::vector<IslandState> state = gather(s.step());
    const double best = sum_up(state);
    if (std::none_of(state.begin(), state.end(), [](const IslandState& st) { return st.stepped; }))
      break;
    if (o.migrate_every > 0 && gen % o.migrate_every == 0) {
      const std::vector<std::string> migrants = gather_all(comm, pack(s.best()));
      s.take_migrant(unpack(migrants[static_cast<size_t>((me + n - 1) % n)]));
    }
    history.record(gen, best, evaluations);
  }
  // The best island plans its best again; every process takes its plan.
  SearchResult mine;
  std::string plan_text;
  if (me == b) {
    mine = s.finish();
    plan_text = plan_to_json(ctx.pb.graph, mine.plan);
  } else {
    mine = s.summary();
  }
  const std::vector<std::string> plans = gather_all(comm, plan_text);
  SearchResult r = std::move(mine);
  if (me != b) {
    r.plan = parse_plan(ctx.pb.graph, plans[static_cast<size_t>(b)], "the best island's plan");
    SimOptions so;
    so.record_timeline = true;
    r.sim = Simulator().run(ctx.pb.graph, r.plan, ctx.pb.op_us, ctx.pb.device, so);
  }
  r.evaluations = evaluations;
  r.repeats = repeats;
  history.close(&r);
  return r;
}

}  // namespace sa::ga
