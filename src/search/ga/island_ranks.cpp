// Note [Islands], across processes: under `mpirun -np N swapadvisor plan`,
// process r runs island r of N (islands.cpp runs them all in one process)
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
#include <cstring>

#include "plan/plan_io.h"
#include "search/ga/search.h"

namespace sa::ga {
namespace {

// A candidate's genes and time as bytes (between processes of one build).
class ByteWriter {
 public:
  template <typename T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const char*>(&v);
    out_.append(p, sizeof(T));
  }
  template <typename T>
  void put_all(const std::vector<T>& v) {
    put(static_cast<int64_t>(v.size()));
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::string& in) : in_(in) {}
  template <typename T>
  T get() {
    T v;
    SA_CHECK(at_ + sizeof(T) <= in_.size(), "a migrant candidate ends early");
    std::memcpy(&v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  template <typename T>
  std::vector<T> get_all() {
    const auto n = get<int64_t>();
    SA_CHECK(n >= 0 && at_ + static_cast<size_t>(n) * sizeof(T) <= in_.size(),
             "a migrant candidate ends early");
    std::vector<T> v(static_cast<size_t>(n));
    if (n > 0) std::memcpy(v.data(), in_.data() + at_, static_cast<size_t>(n) * sizeof(T));
    at_ += static_cast<size_t>(n) * sizeof(T);
    return v;
  }

 private:
  const std::string& in_;
  size_t at_ = 0;
};

std::string pack(const Candidate& c) {
  ByteWriter p;
  p.put_all(c.order);
  p.put_all(c.alloc.cls);
  p.put_all(c.alloc.cnt);
  p.put(c.layout);
  p.put_all(c.recompute);
  p.put(c.recomputes);
  p.put(c.dtr);
  p.put(c.dead_depth);
  p.put(c.time_us);
  return p.take();
}

Candidate unpack(const std::string& text) {
  ByteReader u(text);
  Candidate c;
  c.order = u.get_all<OpId>();
  c.alloc.cls = u.get_all<ClassId>();
  c.alloc.cnt = u.get_all<int32_t>();
  c.layout = u.get<MemoryLayout>();
  c.recompute = u.get_all<uint8_t>();
  c.recomputes = u.get<bool>();
  c.dtr = u.get<bool>();
  c.dead_depth = u.get<int>();
  c.time_us = u.get<double>();
  return c;
}

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
    for (const std::string& t : comm.all_gather(p.take())) {
      ByteReader u(t);
      IslandState st;
      st.stepped = u.get<bool>();
      st.best_us = u.get<double>();
      st.evaluations = u.get<int64_t>();
      st.repeats = u.get<int64_t>();
      all.push_back(st);
    }
    SA_CHECK(static_cast<int>(all.size()) == n, "{} islands answered, not {}", all.size(), n);
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
      const std::vector<std::string> migrants = comm.all_gather(pack(s.best()));
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
  const std::vector<std::string> plans = comm.all_gather(plan_text);
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
