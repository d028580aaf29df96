// Stall-guided moves (Note [Stall-guided moves] in search/ga/search.h): the
// best candidate's simulation names where its compute stream waited and on
// which copy; each move changes one gene there.

#include "plan/stalls.h"
#include "search/ga/search.h"

namespace sa::ga {

// Re-plans b with a timeline and lists its moves, the longest stalls first,
// a recompute move and a delay move in turn.
void Search::analyse_best(Worker& w, const Candidate& b) {
  const Graph& g = ctx_.pb.graph;
  moves_.clear();
  move_cursor_ = 0;
  analysed_ = b;
  if (!w.plan_candidate(b, &w.plan).ok) return;
  const SimResult s =
      w.sim.run(g, w.plan, ctx_.pb.op_us, ctx_.pb.device, {.record_timeline = true});
  if (!s.ok) return;
  const StallReport r = attribute_stalls(g, w.plan, s.timeline);
  std::vector<Move> recompute, delay;
  if (recompute_)
    for (const TensorStall& ts : r.by_tensor) {
      const OpId p = ctx_.pb.dataflow.creator(ts.tensor);
      if (ts.via_swap_in == 0 || p == kNoOp || !ctx_.eligible[p]) continue;
      if (b.recomputes && b.recompute[p]) continue;  // already allowed: the planner declined
      recompute.push_back({Move::kRecompute, p, ts.idle_us});
    }
  std::vector<Stall> stalls = r.stalls;
  std::stable_sort(stalls.begin(), stalls.end(),
                   [](const Stall& a, const Stall& c) { return a.idle_us > c.idle_us; });
  for (const Stall& st : stalls)
    if (const Step& step = w.plan.steps[st.step]; step.kind == StepKind::kCompute)
      delay.push_back({Move::kDelay, step.op(), st.idle_us});
  for (size_t k = 0; k < std::max(recompute.size(), delay.size()); ++k) {
    if (k < recompute.size()) moves_.push_back(recompute[k]);
    if (k < delay.size()) moves_.push_back(delay[k]);
  }
}

// The order with op o moved later, past the ops after it that do not
// depend on it, until they take `us` of compute or the next op depends on
// it (which keeps the order topological: an op that depends on o through
// others comes after one of o's successors). False when o cannot move.
bool Search::delay_op(std::vector<OpId>& order, OpId o, double us) {
  const Dataflow& df = ctx_.pb.dataflow;
  ++succ_stamp_;
  succ_mark_.resize(m_, 0);
  for (OpId s : df.succs(o))
    succ_mark_[s] = succ_stamp_;
  const auto at = std::find(order.begin(), order.end(), o);
  auto end = std::next(at);
  double passed = 0;
  for (; end != order.end() && succ_mark_[*end] != succ_stamp_ && passed < us; ++end)
    passed += ctx_.pb.op_us[*end];
  if (end == std::next(at)) return false;
  std::rotate(at, std::next(at), end);
  return true;
}

// Up to `want` children of the best candidate, each one move from the list
// (analysed again when the best changed; where the list runs out, it starts
// over with twice the delays). Made by the search's own thread, in order, so
// the plan does not depend on the threads (Note [Search loop]).
int Search::make_local_moves(Worker& w, int want, Candidate* out) {
  const Candidate& b = best();
  if (!(b.time_us < kInf) || want <= 0) return 0;
  if (!same_genes(b, analysed_)) analyse_best(w, b);
  if (moves_.empty()) return 0;
  int made = 0;
  for (size_t tried = 0; made < want && tried < moves_.size(); ++tried) {
    const size_t k = move_cursor_++;
    const Move& mv = moves_[k % moves_.size()];
    const double stretch = static_cast<double>(1 << std::min<size_t>(k / moves_.size(), 4));
    Candidate c = b;
    c.time_us = kInf;
    if (c.layout == MemoryLayout::kPacked) c.layout = MemoryLayout::kPlaced;  // as children
    if (mv.kind == Move::kRecompute) {
      if (k >= moves_.size()) continue;  // made once already
      c.recompute[mv.op] = 1;
      c.recomputes = true;
    } else if (!delay_op(c.order, mv.op, stretch * mv.idle_us)) {
      continue;
    }
    out[made++] = std::move(c);
  }
  return made;
}

}  // namespace sa::ga
