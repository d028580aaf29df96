// Note [Shared evaluations]
// -------------------------
// Under `mpirun -np N swapadvisor plan ...` with one island (--islands 1,
// the default), the N processes run one search: every process keeps the
// same population and makes every child (cheap: crossover and mutation are
// linear in the ops), but plans and simulates only its share, candidate k
// of each generation on process k mod N, then all exchange the times (one
// all-gather a generation). The search is the one a single process makes:
// the children depend on the seed and the generation only, and a time on
// the candidate only, so the same seed and evaluations give the same plan
// whatever N (test MpiCli.SharedEvaluationsPlanAsOneProcess); N processes
// make each generation about N times faster, where islands
// (--islands N, Note [Islands]) search N smaller populations instead, which
// at equal evaluations explore less (docs/search.md, "Islands").
//   - The seeds are planned by process 0 alone and sent to the others with
//     what planning them decided (the recompute genes kept or not, whether
//     slot layouts fit, a cut by the time budget): under a time budget the
//     processes could otherwise cut them differently.
//   - A process stops when any process is out of its time budget (one
//     exchange a generation), so that none waits in an exchange the others
//     left; an evaluation budget is the same on every process.
//   - At the end, the process that kept the fastest plan (the lowest rank
//     among equals) sends it; every process returns it.
// Each process keeps its own evaluation cache (Note [Evaluation cache]):
// a repeat planned by another process is planned again, with the same
// result.
#include "plan/plan_io.h"
#include "search/ga/candidate_bytes.h"
#include "search/ga/search.h"

namespace sa::ga {

void Search::share_bases() {
  const IslandComm& c = *share_;
  ByteWriter out;
  if (c.rank == 0) {
    out.put(static_cast<int64_t>(bases_.size()));
    for (const Candidate& b : bases_)
      out.put_text(pack(b));
    out.put(recompute_);
    out.put(ctx_.slots);
    out.put(seeds_cut_);
    out.put(seeds_seconds_);
    out.put(evaluations_);
  }
  const std::vector<std::string> all = gather_all(c, out.take());
  if (c.rank == 0) return;
  ByteReader in(all[0]);
  const auto n = in.get<int64_t>();
  SA_CHECK(n > 0 && n < (int64_t{1} << 20), "process 0 sent {} seeds", n);
  bases_.clear();
  for (int64_t i = 0; i < n; ++i)
    bases_.push_back(unpack(in.get_text()));
  recompute_ = in.get<bool>();
  ctx_.slots = in.get<bool>();
  seeds_cut_ = in.get<bool>();
  seeds_seconds_ = in.get<double>();
  evaluations_ = in.get<int64_t>();
}

void Search::share_times(std::vector<Candidate>& cands, std::vector<uint8_t>& ran) {
  const IslandComm& c = *share_;
  const int count = static_cast<int>(ran.size());
  ByteWriter out;
  for (int k = c.rank; k < count; k += c.size) {
    out.put(static_cast<int32_t>(k));
    out.put(ran[k]);
    out.put(cands[k].time_us);
  }
  const std::vector<std::string> all = gather_all(c, out.take());
  for (int r = 0; r < c.size; ++r) {
    if (r == c.rank) continue;
    ByteReader in(all[r]);
    while (!in.done()) {
      const auto k = in.get<int32_t>();
      SA_CHECK(k >= 0 && k < count && k % c.size == r, "process {} sent candidate {} of {}", r, k,
               count);
      ran[k] = in.get<uint8_t>();
      cands[k].time_us = in.get<double>();
    }
  }
}

bool Search::out_of_budget_anywhere() {
  const bool out = out_of_budget();
  if (!share_) return out;
  const std::vector<std::string> all = gather_all(*share_, std::string(1, out ? '1' : '0'));
  return std::any_of(all.begin(), all.end(), [](const std::string& t) { return t == "1"; });
}

void Search::take_shared_best(SearchResult& result) {
  const IslandComm& c = *share_;
  double mine = kInf;
  for (const auto& w : workers_)
    mine = std::min(mine, w->best_us);
  ByteWriter out;
  out.put(mine);
  out.put(cache_.hits());
  const std::vector<std::string> all = gather_all(c, out.take());
  int b = 0;
  double best_us = kInf;
  int64_t hits = 0;
  for (int r = 0; r < c.size; ++r) {
    ByteReader in(all[r]);
    const auto t = in.get<double>();
    hits += in.get<int64_t>();
    if (t < best_us) best_us = t, b = r;
  }
  ByteWriter plan;
  if (c.rank == b) {
    take_best(result);
    plan.put_text(result.from);
    plan.put_text(plan_to_json(ctx_.pb.graph, result.plan));
  }
  const std::vector<std::string> plans = gather_all(c, plan.take());
  result.repeats = hits;
  if (c.rank == b) return;
  ByteReader in(plans[static_cast<size_t>(b)]);
  result.from = in.get_text();
  result.plan = parse_plan(ctx_.pb.graph, in.get_text(), "the best plan of another process");
  SimOptions so;
  so.record_timeline = true;
  result.sim = workers_[0]->sim.run(ctx_.pb.graph, result.plan, ctx_.pb.op_us, ctx_.pb.device, so);
}

}  // namespace sa::ga
