// Per graph and per plan: the items (tensors, then workspaces), their uses
// in order, their classes, the ops' positions and recompute windows.

#include "plan/swap/pass.h"

namespace sa {
using namespace swap_plan;  // this folder's types (pass.h)

SwapPlanner::Pass::Pass(const Graph& g, const SizeTable& sizes, std::span<const double> op_us,
                        const DeviceProfile& device)
    : g_(g),
      sizes_(sizes),
      op_us_(op_us),
      device_(device),
      n_(g.num_tensors()),
      m_(g.num_ops()),
      num_items_(n_ + m_) {
  kind_.assign(num_items_, ItemKind::kTransient);
  bytes_.assign(num_items_, 0);
  updated_.assign(num_items_, 0);
  for (TensorId x = 0; x < n_; ++x) {
    const TensorKind k = g.tensors[x].kind;
    kind_[x] = is_persistent(k)          ? ItemKind::kPersistent
               : k == TensorKind::kInput ? ItemKind::kInput
                                         : ItemKind::kTransient;
    bytes_[x] = g.tensors[x].bytes;
  }
  access_begin_.assign(m_ + 1, 0);
  op_bytes_.assign(m_, 0);
  producer_.assign(n_, kNoOp);
  for (OpId o = 0; o < m_; ++o)
    for (TensorId t : g.ops[o].outputs)
      producer_[t] = o;
  h2d_us_.resize(num_items_);
  d2h_us_.resize(num_items_);
  for (OpId o = 0; o < m_; ++o) {
    bytes_[n_ + o] = g.ops[o].workspace_bytes;
    for (TensorId x : g.ops[o].updates)
      updated_[x] = 1;
    access_begin_[o + 1] = access_begin_[o] + num_access_slots(g.ops[o]);
    // Each item once: an op may read one tensor twice.
    std::vector<TensorId> items;
    for_each_access(g.ops[o], [&](TensorId x, Access) { items.push_back(x); });
    std::sort(items.begin(), items.end());
    items.erase(std::unique(items.begin(), items.end()), items.end());
    for (TensorId x : items)
      op_bytes_[o] += bytes_[x];
    op_bytes_[o] += g.ops[o].workspace_bytes;
  }
  for (ItemId x = 0; x < num_items_; ++x) {
    h2d_us_[x] = static_cast<double>(bytes_[x]) / device_.h2d_bytes_per_us();
    d2h_us_[x] = static_cast<double>(bytes_[x]) / device_.d2h_bytes_per_us();
  }
}

void SwapPlanner::Pass::bind_ops(std::span<const OpId> order, const PlannerOptions& opt,
                                 const Directives* directives) {
  order_ = order;
  opt_ = opt;
  dir_ = directives;
  SA_CHECK(!dtr() || opt.recompute, "EvictionPolicy::kDtr without PlannerOptions::recompute");
  if (dtr() && !dtr_cost_) dtr_cost_ = std::make_unique<DtrCost>(g_, op_us_);
  // The op-time prefix and every item's uses in position order.
  prefix_.assign(m_ + 1, 0);
  for (int i = 0; i < m_; ++i)
    prefix_[i + 1] = prefix_[i] + op_us_[order[i]];
  use_begin_.assign(num_items_ + 1, 0);
  for (OpId o = 0; o < m_; ++o) {
    for_each_access(g_.ops[o], [&](TensorId x, Access) { ++use_begin_[x + 1]; });
    if (g_.ops[o].workspace_bytes > 0) ++use_begin_[n_ + o + 1];
  }
  for (int x = 0; x < num_items_; ++x)
    use_begin_[x + 1] += use_begin_[x];
  uses_.resize(use_begin_[num_items_]);
  std::vector<int32_t>& fill = cursor_;  // borrowed as fill pointers
  fill.assign(use_begin_.begin(), use_begin_.end() - 1);
  for (int i = 0; i < m_; ++i) {
    const OpId o = order[i];
    for_each_access(g_.ops[o], [&](TensorId x, Access) { uses_[fill[x]++] = i; });
    if (g_.ops[o].workspace_bytes > 0) uses_[fill[n_ + o]++] = i;
  }
  // Note [Recomputation]: op p may run again at position q while every
  // input still holds what p read (no update of it at a position in
  // (pos(p), q)) and every transient input is still alive (its last use >=
  // q) or may itself be made again at q (Note [Recompute through dead
  // inputs]).
  recompute_until_.assign(m_, -1);
  drop_until_.assign(n_, -1);
  replays_.assign(m_, {});
  pos_of_.resize(m_);
  for (int i = 0; i < m_; ++i)
    pos_of_[order[i]] = i;
  if (!opt.recompute) return;
  std::vector<std::vector<int32_t>> updated_at(n_);
  for (int i = 0; i < m_; ++i)
    for (TensorId t : g_.ops[order[i]].updates)
      updated_at[t].push_back(i);
  // A dead input's producer's window counts once it is final: producers
  // come first in the order, and the last loop below goes in position order.
  std::vector<int32_t> depth(m_, 0);  // Note [Recompute through dead inputs]
  const int max_depth = std::max(0, opt.dead_input_depth);
  auto until_of = [&](OpId p) {
    int32_t until = m_;
    for (TensorId u : g_.ops[p].inputs) {
      const auto& at = updated_at[u];
      auto next = std::upper_bound(at.begin(), at.end(), pos_of_[p]);
      if (next != at.end()) until = std::min(until, *next);
      if (!is_transient(g_.tensors[u].kind) || num_uses(u) == 0) continue;
      int32_t alive = uses_[use_begin_[u + 1] - 1];
      const OpId q = producer_[u];
      if (q != kNoOp && (*opt.recompute)[q] && depth[q] < max_depth &&
          recompute_until_[q] > alive) {
        alive = recompute_until_[q];
        depth[p] = std::max(depth[p], depth[q] + 1);
      }
      until = std::min(until, alive);
    }
    return until;
  };
  auto may_run_again = [&](const Op& op) { return !op.random || opt.recompute_random; };
  for (OpId p = 0; p < m_; ++p)
    if (may_recompute(g_.ops[p]) && may_run_again(g_.ops[p])) recompute_until_[p] = m_;
  // Note [Update replay]: an update u of p's outputs at position i is
  // replayed after a recompute of p at q > i, which is then right while u's
  // inputs hold what u read (until_of(u) >= i: it never limits a recompute
  // before i). An update that may not be replayed ends p's window at i.
  for (int i = 0; i < m_; ++i) {
    const OpId u = order[i];
    const Op& uo = g_.ops[u];
    if (uo.updates.empty()) continue;
    const OpId p = producer_[uo.updates.front()];
    bool replay =
        p != kNoOp && uo.updates.size() == 1 && may_replay_update(g_, uo) && may_run_again(uo);
    for (TensorId t : uo.updates)
      replay = replay && producer_[t] == p;
    // Only updates that read nothing else (relu_, not the residual add_): a
    // replay's inputs must be there, so replays of updates that read other
    // recomputable tensors chain recomputes from block to block, back to
    // the start of the net, and no budget holds all they pin at once.
    replay = replay && uo.inputs.empty();
    for (TensorId t : uo.updates) {
      const OpId q = producer_[t];
      if (q == kNoOp || recompute_until_[q] < 0) continue;
      if (replay) {
        if (replays_[q].empty() || replays_[q].back() != u) replays_[q].push_back(u);
        recompute_until_[q] = std::min(recompute_until_[q], until_of(u));
      } else {
        recompute_until_[q] = std::min(recompute_until_[q], i);
      }
    }
  }
  for (int i = 0; i < m_; ++i)
    if (const OpId p = order[i]; recompute_until_[p] >= 0)
      recompute_until_[p] = std::min(recompute_until_[p], until_of(p));
  for (TensorId t = 0; t < n_; ++t)
    if (const OpId p = producer_[t];
        is_transient(g_.tensors[t].kind) && p != kNoOp && (*opt.recompute)[p])
      drop_until_[t] = recompute_until_[p];
}

bool SwapPlanner::Pass::prepare(std::span<const OpId> order, const Allocation& a,
                                const PlannerOptions& opt, const Directives* directives,
                                bool check_counts, std::string* why) {
  mode_ = MemoryLayout::kSizeClass;
  nc_ = a.num_classes();
  class_bytes_ = sa::class_bytes(sizes_, a.cls);
  class_.assign(num_items_, -1);
  for (TensorId x = 0; x < n_; ++x)
    class_[x] = a.cls[sizes_.tensor_size[x]];
  for (OpId o = 0; o < m_; ++o)
    if (sizes_.workspace_size[o] >= 0) class_[n_ + o] = a.cls[sizes_.workspace_size[o]];
  if (check_counts) {
    const auto need = min_counts(g_, sizes_, a.cls);
    for (int c = 0; c < nc_; ++c)
      if (need[c] > a.cnt[c]) {
        if (why)
          *why = fmt::format(
              "class {} ({}) has {} objects but some op touches {} of its items at once", c,
              format_bytes(class_bytes_[c]), a.cnt[c], need[c]);
        return false;
      }
  }
  bind_ops(order, opt, directives);
  return true;
}

bool SwapPlanner::Pass::prepare_arena(std::span<const OpId> order, int64_t capacity, bool placed,
                                      const PlannerOptions& opt, const Directives* directives,
                                      std::string* why) {
  mode_ = placed ? MemoryLayout::kPlaced : MemoryLayout::kPacked;
  capacity_ = capacity;
  nc_ = 1;  // one list of residents: every item is a candidate victim for every other
  class_.assign(num_items_, 0);
  class_bytes_.clear();
  for (OpId o = 0; o < m_; ++o)
    if (op_bytes_[o] > capacity) {
      if (why)
        *why = fmt::format("op {} ({}) touches {} at once, more than the capacity of {}", o,
                           g_.ops[o].type, format_bytes(op_bytes_[o]), format_bytes(capacity));
      return false;
    }
  bind_ops(order, opt, directives);
  return true;
}

}  // namespace sa
