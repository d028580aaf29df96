#include "baselines/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "baselines/run_planner.h"
#include "baselines/saved_activations.h"
#include "plan/packing.h"
#include "plan/planner.h"
#include "plan/simulator.h"
#include "util/error.h"
#include "util/units.h"

namespace sa {
namespace {

// The saved activations and, per position of the order, the bytes of them
// its op creates (the weights the segments balance).
struct Saved {
  std::vector<SavedActivation> list;
  std::vector<int64_t> weight;
  std::vector<int32_t> made_at;  // per tensor: its producer's position, or -1
};

Saved find_saved(const Graph& g, std::span<const OpId> order) {
  Saved s;
  s.list = saved_activations(g, order);
  s.weight.assign(order.size(), 0);
  s.made_at.assign(g.num_tensors(), -1);
  for (int i = 0; i < static_cast<int>(order.size()); ++i)
    for (TensorId t : g.ops[order[i]].outputs)
      s.made_at[t] = i;
  for (const SavedActivation& a : s.list)
    s.weight[s.made_at[a.tensor]] += g.tensors[a.tensor].bytes;
  return s;
}

// The number of forward ops that create saved activations (F).
int saving_ops(const Saved& s) {
  return static_cast<int>(
      std::count_if(s.weight.begin(), s.weight.end(), [](int64_t w) { return w > 0; }));
}

// Note [Segment checkpointing]: the saved activations k segments drop.
std::vector<SavedActivation> drops_of(const Graph& g, std::span<const OpId> order, const Saved& s,
                                      int k) {
  const int m = static_cast<int>(order.size());
  __int128 total = 0;
  for (int64_t w : s.weight)
    total += w;
  // Each forward position's segment: the saved bytes made before it, in
  // k-ths of the total.
  std::vector<int32_t> seg(m, -1);
  __int128 before = 0;
  for (int i = 0; i < m; ++i) {
    if (g.ops[order[i]].phase != Phase::kForward) continue;
    // (128 bits: the bytes of a graph times k may not fit in 64.)
    seg[i] = total > 0 ? static_cast<int32_t>(std::min<__int128>(k - 1, before * k / total)) : 0;
    before += s.weight[i];
  }
  // The latest segment whose forward ops read each tensor.
  std::vector<int32_t> read_by(g.num_tensors(), -1);
  for (int i = 0; i < m; ++i)
    if (seg[i] >= 0)
      for (TensorId t : g.ops[order[i]].inputs)
        read_by[t] = std::max(read_by[t], seg[i]);
  std::vector<SavedActivation> drops;
  for (const SavedActivation& a : s.list) {
    const int32_t made_in = seg[s.made_at[a.tensor]];
    if (made_in >= 0 && made_in < k - 1 && read_by[a.tensor] <= made_in) drops.push_back(a);
  }
  return drops;
}

// In increasing id order (saved_activations() lists them so).
std::vector<TensorId> ids_of(std::span<const SavedActivation> drops) {
  std::vector<TensorId> ids;
  for (const SavedActivation& a : drops)
    ids.push_back(a.tensor);
  return ids;
}

void check_segments(int segments) {
  if (segments < 1)
    throw Error(fmt::format("checkpoint needs 1 segment or more, not {}", segments));
}

// Plans the drops with room for what they keep (in the arena, packed by
// `packing`).
Plan plan_drops(Planner& planner, const Problem& pb, std::span<const OpId> order,
                Allocator allocator, std::span<const SavedActivation> drops,
                const std::vector<uint8_t>& forward_ops, PackPolicy packing) {
  Directives d;
  d.unbounded = true;
  d.drop_only = true;
  d.evict_after.resize(order.size());
  for (const SavedActivation& a : drops)
    d.evict_after[a.last_forward_pos].push_back(a.tensor);
  PlannerOptions opt;
  opt.recompute = &forward_ops;
  opt.packing = packing;
  Plan p;
  plan_unbounded(planner, pb, order, allocator, opt, d, "checkpoint", &p);
  return p;
}

std::vector<uint8_t> forward_ops(const Graph& g) {
  std::vector<uint8_t> f(g.num_ops(), 0);
  for (OpId o = 0; o < g.num_ops(); ++o)
    f[o] = g.ops[o].phase == Phase::kForward;
  return f;
}

// The least memory some k needs: planned (exact), or no packing's (at least).
struct Need {
  int64_t bytes = INT64_MAX;
  int segments = 0;
  bool exact = false;
};

std::string over_budget(const Need& need, int64_t budget) {
  std::string n = format_bytes(need.bytes), b = format_bytes(budget);
  if (n == b) {  // too close to tell apart when rounded
    n += fmt::format(" ({} B)", need.bytes);
    b += fmt::format(" ({} B)", budget);
  }
  return fmt::format("{} segment{} keep{} {} {} on the device, over the budget of {}",
                     need.segments, need.segments == 1 ? "" : "s", need.segments == 1 ? "s" : "",
                     need.exact ? "up to" : "at least", n, b);
}

// Plans k segments for each k of [lo, hi] (hi 0: up to 2 sqrt(F)) and keeps
// the fastest plan within the budget.
CheckpointPlan choose(const Problem& pb, Allocator allocator, int lo, int hi) {
  CheckpointPlan c;
  const Graph& g = pb.graph;
  if (!has_backward(g)) {
    c.result.why = "the graph has no backward phase, which checkpointing needs";
    return c;
  }
  const auto order = program_order(g.num_ops());
  Planner planner(pb);
  Simulator sim;
  const Saved saved = find_saved(g, order);
  const std::vector<uint8_t> fwd = forward_ops(g);
  const int f = saving_ops(saved);
  c.max_segments =
      hi > 0 ? hi : std::max(1, std::min(f, static_cast<int>(std::ceil(2 * std::sqrt(f)))));
  std::set<std::vector<TensorId>> tried;
  double best_us = 0;
  Need least[2];  // the least floor, the least planned need
  auto needs = [&](int k, int64_t bytes, bool exact) {
    if (bytes < least[exact].bytes) least[exact] = {bytes, k, exact};
    return bytes <= pb.budget;
  };
  for (int k = lo; k <= c.max_segments; ++k) {
    const std::vector<SavedActivation> drops = drops_of(g, order, saved, k);
    if (!tried.insert(ids_of(drops)).second) continue;  // the same plan as a smaller k
    // In the arena, the fast packing first (packing the greedy way is most
    // of the time here); the greedy one only when the fast one is over the
    // budget and the most bytes alive at once are not.
    Plan p = plan_drops(planner, pb, order, allocator, drops, fwd, PackPolicy::kSweepBestFit);
    if (allocator == Allocator::kArena && p.arena_bytes() > pb.budget) {
      if (!needs(k, max_live_bytes(planner.walk().last_packing()), false)) continue;
      p = plan_drops(planner, pb, order, allocator, drops, fwd, PackPolicy::kGreedyBySize);
    }
    if (!needs(k, p.arena_bytes(), true)) continue;
    const SimResult s = sim.run(g, p, pb.op_us, pb.device);
    SA_CHECK(s.ok, "checkpoint plan with {} segments does not simulate: {}", k, s.error);
    if (c.segments == 0 || s.iteration_us < best_us) {
      best_us = s.iteration_us;
      c.segments = k;
      c.result.plan = std::move(p);
    }
  }
  const Need& closest = least[1].segments > 0 ? least[1] : least[0];
  if (c.segments > 0) {
    c.result.feasible = true;
  } else if (lo == c.max_segments) {
    c.result.why = over_budget(closest, pb.budget);
  } else {
    c.result.why = fmt::format("no number of segments from {} to {} fits: at best, {}", lo,
                               c.max_segments, over_budget(closest, pb.budget));
  }
  return c;
}

}  // namespace

BaselinePlan plan_checkpoint_segments(const Problem& pb, Allocator allocator, int segments) {
  check_segments(segments);
  return choose(pb, allocator, segments, segments).result;
}

CheckpointPlan plan_checkpoint(const Problem& pb, Allocator allocator) {
  return choose(pb, allocator, 1, 0);
}

std::vector<TensorId> checkpoint_drops(const Graph& g, std::span<const OpId> order, int segments) {
  check_segments(segments);
  return ids_of(drops_of(g, order, find_saved(g, order), segments));
}

}  // namespace sa
