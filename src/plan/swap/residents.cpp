// The evictable residents of each class and the choice of a victim:
// Belady's furthest next use (LRU for odswap), DTR's cost (Note [Swap planning]).

#include "plan/swap/pass.h"

namespace sa {
using namespace swap_plan;  // this folder's types (pass.h)

int64_t SwapPlanner::Pass::victim_key(ItemId x) const {
  if (opt_.eviction == EvictionPolicy::kLru) return -static_cast<int64_t>(last_pos_[x]);
  if (needed_later(x)) return uses_[use_begin_[x] + cursor_[x]];
  // Persistent tensors are next used in the next iteration.
  return num_uses(x) > 0 ? static_cast<int64_t>(m_) + uses_[use_begin_[x]] : INT64_MAX / 2;
}

void SwapPlanner::Pass::list_resident(ItemId x) {
  auto& list = residents_[class_[x]];
  listed_at_[x] = static_cast<int32_t>(list.size());
  list.push_back(x);
  heap_touch(x);
  if (dtr() && bytes_[x] > 0 && may_drop_to_recompute(x)) {
    auto& d = droppable_[class_[x]];
    droppable_at_[x] = static_cast<int32_t>(d.size());
    d.push_back(x);
  }
}

namespace {

// Takes x out of list, where index_of[x] says it is (-1: not there); the
// last item takes its place.
void swap_remove(std::vector<ItemId>& list, std::vector<int32_t>& index_of, ItemId x) {
  const int32_t at = index_of[x];
  if (at < 0) return;
  const ItemId moved = list.back();
  list[at] = moved;
  index_of[moved] = at;
  list.pop_back();
  index_of[x] = -1;
}

}  // namespace

void SwapPlanner::Pass::unlist_droppable(ItemId x) {
  swap_remove(droppable_[class_[x]], droppable_at_, x);
}

// Class c's heap from its residents' current keys.
void SwapPlanner::Pass::build_heap(ClassId c) {
  std::vector<VictimHeaps::Entry> entries;
  entries.reserve(residents_[c].size());
  for (ItemId v : residents_[c])
    entries.push_back({victim_key(v), v});
  heaps_.build(c, std::move(entries));
}

// Where use_heap(): x's victim key may have changed; its entry moves.
void SwapPlanner::Pass::heap_touch(ItemId x) {
  if (!use_heap() || listed_at_[x] < 0) return;
  const ClassId c = class_[x];
  if (!placed() && !heap_built_[c]) return;
  heaps_.set(c, x, victim_key(x));
}

void SwapPlanner::Pass::unlist_resident(ItemId x) {
  if (listed_at_[x] < 0) return;
  if (use_heap()) heaps_.remove(class_[x], x);
  swap_remove(residents_[class_[x]], listed_at_, x);
  if (dtr()) unlist_droppable(x);
}

void SwapPlanner::Pass::ensure_heap(ClassId c) {
  if (!placed() && !heap_built_[c]) {
    build_heap(c);
    heap_built_[c] = 1;
  }
}

// The resident to evict so that x (needed before position i) gets memory:
// the one with the furthest next use (Belady; LRU: the oldest last use),
// among those whose eviction leaves time for its copies when there are any
// (ties: the larger item id, for determinism). -1 if none may go.
ItemId SwapPlanner::Pass::pick_victim(ItemId x, int i, bool swap_in) {
  if (dtr()) return pick_dtr_victim(x, i);
  auto excluded = [&](ItemId v) {
    return pinned_[v] == i || (dir_ && !dir_->never_evict.empty() && dir_->never_evict[v]);
  };
  if (use_heap()) {
    // The residents by key, the largest first: the first eligible one is
    // the scan's answer below, and the first of all is its fall-back. Most
    // evictions find one among the first few; past kWalked the scan costs
    // less than walking on.
    constexpr int kWalked = 64;
    ItemId first = -1, found = -1;
    ensure_heap(class_[x]);
    const bool whole = heaps_.walk(class_[x], kWalked, [&](const VictimHeaps::Entry& e) {
      if (excluded(e.item)) return false;
      if (first < 0) first = e.item;
      if (!eligible_victim(e.item, x, i, swap_in)) return false;
      found = e.item;
      return true;
    });
    if (found >= 0) return found;
    if (whole) return first;
  }
  ItemId best = -1, best_eligible = -1;
  int64_t best_key = 0, best_eligible_key = 0;
  for (ItemId v : residents_[class_[x]]) {
    if (excluded(v)) continue;
    const int64_t key = victim_key(v);
    if (best < 0 || key > best_key || (key == best_key && v > best)) {
      best = v;
      best_key = key;
    }
    if (best_eligible >= 0 &&
        (key < best_eligible_key || (key == best_eligible_key && v < best_eligible)))
      continue;
    if (eligible_victim(v, x, i, swap_in)) {
      best_eligible = v;
      best_eligible_key = key;
    }
  }
  return best_eligible >= 0 ? best_eligible : best;
}

// EvictionPolicy::kDtr: of the residents that may be dropped to be
// recomputed, the one with the smallest DTR score (Note [DTR heuristic]),
// staleness counted in op time from the start of its last access to
// position i (ties: the larger item id). -1 if none may go.
ItemId SwapPlanner::Pass::pick_dtr_victim(ItemId x, int i) {
  ItemId best = -1;
  double best_h = 0;
  auto& list = droppable_[class_[x]];
  for (size_t k = 0; k < list.size();) {
    const ItemId v = list[k];
    if (!may_drop_to_recompute(v)) {  // for good: list[k] is another item now
      unlist_droppable(v);
      continue;
    }
    ++k;
    if (pinned_[v] == i) continue;
    const double stale = prefix_[i] - prefix_[last_pos_[v]];
    // cost(v) is v's own op time plus non-negative class sums, so the score
    // of its own time is a lower bound (rounding keeps the order): a
    // resident whose bound already loses is not costed (the neighbourhood
    // walk was most of a NASNet evaluation's DTR time).
    if (best >= 0 && DtrCost::score(dtr_cost_->own_cost(v), bytes_[v], stale) > best_h) continue;
    const double h = DtrCost::score(dtr_cost_->cost(v), bytes_[v], stale);
    if (best < 0 || h < best_h || (h == best_h && v > best)) {
      best = v;
      best_h = h;
    }
  }
  return best;
}

// Whether v's last use is long enough ago, in op time before position i,
// for the copies its eviction for x needs (the paper's eviction threshold).
bool SwapPlanner::Pass::eligible_victim(ItemId v, ItemId x, int i, bool swap_in) const {
  const double need = (swap_in ? h2d_us_[x] : 0.0) + (needs_copy(v) ? d2h_us_[v] : 0.0);
  const double elapsed = prefix_[i] - prefix_[last_pos_[v] + 1];
  return elapsed >= opt_.eviction_threshold * need;
}

}  // namespace sa
