// The placed arena (Note [Arena planning]): ranges held or free, free runs by
// size, and the window to evict when no run fits.

#include <algorithm>

#include "plan/swap/pass.h"

namespace sa {
using namespace swap_plan;  // this folder's types (pass.h)

// Placed mode: splits the range that holds address `at` there (a free one:
// both parts keep its release).
void SwapPlanner::Pass::split_range(int64_t at) {
  auto it = ranges_.upper_bound(at);
  if (it == ranges_.begin()) return;
  --it;
  if (it->first == at || it->second.end <= at) return;
  SA_CHECK(it->second.tenancy < 0, "splitting held range [{}, {}) at {}", it->first, it->second.end,
           at);
  Range right = it->second;
  it->second.end = at;
  ranges_.emplace_hint(std::next(it), at, right);
}

// Placed mode: a new tenancy of x at [at, at + bytes), which must be free;
// taken_* get the releases of the ranges it covers.
ObjectId SwapPlanner::Pass::take_range(ItemId x, int64_t at) {
  const int64_t bytes = bytes_[x];
  taken_compute_.clear();
  taken_copy_.clear();
  taken_pieces_.clear();
  int32_t key = -1;
  if (bytes > 0) {
    split_range(at);
    split_range(at + bytes);
    auto it = ranges_.find(at);
    while (it != ranges_.end() && it->first < at + bytes) {
      const Range& r = it->second;
      SA_CHECK(r.tenancy < 0, "item {} placed at [{}, {}) over tenancy {}", x, at, at + bytes,
               r.tenancy);
      key = std::max(key, r.key);
      if (r.rel_compute >= 0) taken_compute_.push_back(r.rel_compute);
      if (r.rel_copy >= 0) taken_copy_.push_back(r.rel_copy);
      taken_pieces_.push_back({it->first, r});
      it = ranges_.erase(it);
    }
  }
  const ObjectId t = open_tenancy(x, key);
  tenancies_[t].offset = at;
  if (bytes > 0) {
    ranges_.emplace(at, Range{at + bytes, t, -1, -1, -1});
    run_remove(at, at + bytes);
  }
  return t;
}

void SwapPlanner::Pass::by_size_insert(const SizedRun& run) {
  runs_by_size_.insert(std::lower_bound(runs_by_size_.begin(), runs_by_size_.end(), run), run);
}

void SwapPlanner::Pass::by_size_erase(const SizedRun& run) {
  auto it = std::lower_bound(runs_by_size_.begin(), runs_by_size_.end(), run);
  SA_CHECK(
      it != runs_by_size_.end() && it->at == run.at && it->size == run.size && it->key == run.key,
      "free run of {} bytes at {} not listed", run.size, run.at);
  runs_by_size_.erase(it);
}

// Placed mode: the first free run that starts at or after `at`.
auto SwapPlanner::Pass::run_at_or_after(int64_t at)
    -> std::vector<std::pair<int64_t, FreeRun>>::iterator {
  return std::lower_bound(runs_.begin(), runs_.end(), at,
                          [](const auto& run, int64_t a) { return run.first < a; });
}

// Placed mode: [at, end) has become free; it joins the runs around it.
void SwapPlanner::Pass::run_add(int64_t at, int64_t end, int32_t key) {
  auto next = run_at_or_after(at);
  if (next != runs_.end() && next->first == end) {
    const FreeRun n = next->second;
    by_size_erase({n.end - next->first, next->first, n.key});
    end = n.end;
    key = std::max(key, n.key);
    next = runs_.erase(next);
  }
  if (next != runs_.begin()) {
    auto prev = std::prev(next);
    if (prev->second.end == at) {
      by_size_erase({prev->second.end - prev->first, prev->first, prev->second.key});
      at = prev->first;
      key = std::max(key, prev->second.key);
      next = runs_.erase(prev);
    }
  }
  runs_.insert(next, {at, FreeRun{end, key}});
  by_size_insert({end - at, at, key});
}

// Placed mode: [at, end), inside one free run, is taken. What is left of the
// run keeps its key (an upper bound of its ranges' release positions).
void SwapPlanner::Pass::run_remove(int64_t at, int64_t end) {
  auto it = run_at_or_after(at + 1);  // the first run that starts after at
  SA_CHECK(it != runs_.begin(), "no free run holds [{}, {})", at, end);
  --it;
  const int64_t run_at = it->first;
  const FreeRun run = it->second;
  SA_CHECK(run_at <= at && end <= run.end, "[{}, {}) is not inside free run [{}, {})", at, end,
           run_at, run.end);
  by_size_erase({run.end - run_at, run_at, run.key});
  it = runs_.erase(it);
  if (end < run.end) {
    it = runs_.insert(it, {end, FreeRun{run.end, run.key}});
    by_size_insert({run.end - end, end, run.key});
  }
  if (run_at < at) {
    runs_.insert(it, {run_at, FreeRun{at, run.key}});
    by_size_insert({at - run_at, run_at, run.key});
  }
}

// Placed mode: the residents that hold part of [at, at + bytes), appended
// to *victims; returns the first that may not go before position i (-1:
// none). What a recompute made for nobody holds its range until the op ran;
// what a recompute used may go only after it.
ItemId SwapPlanner::Pass::tenants_of(int64_t at, int64_t bytes, int i,
                                     std::vector<ItemId>* victims) const {
  auto it = ranges_.upper_bound(at);
  if (it != ranges_.begin()) --it;
  for (; it != ranges_.end() && it->first < at + bytes; ++it) {
    const ObjectId t = it->second.tenancy;
    if (t < 0 || it->second.end <= at) continue;
    const ItemId v = tenancies_[t].item;
    if (obj_of_[v] != t || last_pos_[v] >= i) return v;
    victims->push_back(v);
  }
  return -1;
}

// Placed mode: the residents that hold part of [at, at + bytes), which the
// caller evicts to clear it.
std::vector<ItemId> SwapPlanner::Pass::range_tenants(int64_t at, int64_t bytes, int i) const {
  std::vector<ItemId> victims;
  if (const ItemId stuck = tenants_of(at, bytes, i, &victims); stuck >= 0) throw NoRoom{stuck, i};
  return victims;
}

// Placed mode: memory for x, needed before position i. Of the kFitsTried
// smallest free runs that fit it, the one released earliest (a swap-in into
// memory freed long ago can start at once; one into memory whose swap-out is
// still running waits: the pool's rings take the object freed first for the
// same reason); else a window of the
// arena whose residents may all go, chosen as Belady would choose a victim:
// windows around the residents whose next use is furthest (kCandidates of
// them, preferring those whose last use leaves time for their copies), each
// grown over its neighbours (free ones first, then the one used last) until
// it holds x; the window whose earliest next use is furthest wins (among
// those whose victims all leave time for their copies, when there are any),
// then the one that evicts the fewest bytes. The layout only chooses: the
// walk evicts the victims and takes the range (make_room(), Note [Memory policies]).
Window SwapPlanner::Pass::find_window(ItemId x, int i, bool swap_in) {
  const int64_t need = bytes_[x];
  best_victims_.clear();
  if (need == 0) return {0, {}};
  // Note [Home offsets]: an initial resident back for its last use goes home.
  if (swap_in && home_[x] >= 0 && cursor_[x] + 1 >= num_uses(x) && home_window(x, i, swap_in))
    return {home_[x], best_victims_};
  if (const int64_t at = free_run_for(need); at >= 0) return {at, {}};
  WindowScore best;
  int64_t best_at = -1;
  window_around_victims(x, i, swap_in, &best, &best_at);
  if (best_at < 0) window_anywhere(x, i, swap_in, &best, &best_at);
  return {best_at, best_victims_};
}

// Placed mode: of the few smallest free runs that fit `need` bytes, the one
// whose memory was released earliest (its last tenant's copies are the
// likeliest done); -1 when none fits.
int64_t SwapPlanner::Pass::free_run_for(int64_t need) const {
  constexpr int kFitsTried = 32;  // free runs looked at, the smallest first
  int64_t best_run = -1;
  int32_t best_key = INT32_MAX;
  int tried = 0;
  for (auto fit = std::lower_bound(runs_by_size_.begin(), runs_by_size_.end(),
                                   SizedRun{need, INT64_MIN, 0});
       fit != runs_by_size_.end() && tried < kFitsTried; ++fit, ++tried) {
    const auto [size, at, key] = *fit;
    if (key < best_key) {
      best_key = key;
      best_run = at;
      if (key < 0) break;  // never used: none is older
    }
  }
  return best_run;
}

// Placed mode: whether x's home range is free, or every resident that holds
// part of it may go now as an eligible victim (left in best_victims_).
bool SwapPlanner::Pass::home_window(ItemId x, int i, bool swap_in) {
  const bool all_go = tenants_of(home_[x], bytes_[x], i, &best_victims_) < 0 &&
                      std::all_of(best_victims_.begin(), best_victims_.end(), [&](ItemId v) {
                        return movable(v, i) && eligible_victim(v, x, i, swap_in);
                      });
  if (!all_go) best_victims_.clear();
  return all_go;
}

// Placed mode: whether resident v may be evicted for op i's items.
bool SwapPlanner::Pass::movable(ItemId v, int i) const {
  return listed_at_[v] >= 0 && pinned_[v] != i &&
         !(dir_ && !dir_->never_evict.empty() && dir_->never_evict[v]);
}

// Placed mode: the candidates for make_room(x): the best residents by
// (eligible, next use), and the best of those about x's size (one of them
// alone makes room for x), into top (2 * kWindowCandidates entries);
// returns how many.
int SwapPlanner::Pass::victim_candidates(ItemId x, int i, bool swap_in,
                                         std::pair<WindowScore, ItemId>* top) {
  constexpr int kCandidates = kWindowCandidates;
  constexpr int kScanned = 64;  // residents looked at as victims, the furthest next use first
  const int64_t need = bytes_[x];
  int num_top = 0, num_sized = 0;
  std::pair<WindowScore, ItemId>* sized = top + kCandidates;
  auto keep_best = [](std::pair<WindowScore, ItemId>* list, int* n, const WindowScore& sc,
                      ItemId v) {
    if (*n == kCandidates && !(sc < list[*n - 1].first)) return;
    int k = *n < kCandidates ? (*n)++ : *n - 1;
    for (; k > 0 && sc < list[k - 1].first; --k)
      list[k] = list[k - 1];
    list[k] = {sc, v};
  };
  // The kScanned residents with the furthest next use, best first
  // (VictimHeaps::walk). The walk stops once both lists hold kCandidates eligible
  // victims: later entries have no later next use, so none could enter
  // either list (popping 64 entries and pushing them back took most of the
  // arena walk's time).
  auto full = [](const std::pair<WindowScore, ItemId>* list, int n) {
    return n == kCandidates && list[n - 1].first.eligible;
  };
  heaps_.walk(0, kScanned, [&](const VictimHeaps::Entry& e) {
    const ItemId v = e.item;
    if (!movable(v, i) || bytes_[v] == 0) return false;
    const WindowScore sc{eligible_victim(v, x, i, swap_in), e.key, 0};
    keep_best(top, &num_top, sc, v);
    if (bytes_[v] >= need && bytes_[v] <= 2 * need) keep_best(sized, &num_sized, sc, v);
    return full(top, num_top) && full(sized, num_sized);
  });
  for (int k = 0; k < num_sized; ++k)
    top[num_top++] = sized[k];
  return num_top;
}

// Placed mode: the best window to evict for x grown around each candidate
// victim (victim_candidates) until it holds x, into *best, *best_at and
// best_victims_ (unchanged when no window is better).
void SwapPlanner::Pass::window_around_victims(ItemId x, int i, bool swap_in, WindowScore* best,
                                              int64_t* best_at) {
  const int64_t need = bytes_[x];
  std::pair<WindowScore, ItemId> top[2 * kWindowCandidates];
  const int num_top = victim_candidates(x, i, swap_in, top);
  std::vector<ItemId>& victims = window_victims_;
  for (int c = 0; c < num_top; ++c) {
    const ItemId v0 = top[c].second;
    auto lo = ranges_.find(tenancies_[obj_of_[v0]].offset);
    auto hi = std::next(lo);  // the window is [lo, hi)
    WindowScore sc = top[c].first;
    sc.evicted = bytes_[v0];
    victims.assign(1, v0);
    int64_t covered = lo->second.end - lo->first;
    bool ok = true;
    while (ok && covered < need) {
      // A neighbour's worth: free beats any resident; else the later next use.
      auto worth = [&](const Range& r, WindowScore* s) {
        if (r.tenancy < 0) return 2;
        const ItemId v = tenancies_[r.tenancy].item;
        if (!movable(v, i)) return 0;
        *s = {eligible_victim(v, x, i, swap_in), victim_key(v), bytes_[v]};
        return 1;
      };
      WindowScore sl, sr;
      const int wl = lo != ranges_.begin() ? worth(std::prev(lo)->second, &sl) : 0;
      const int wr = hi != ranges_.end() ? worth(hi->second, &sr) : 0;
      const bool left = wl > wr || (wl == wr && wl == 1 && sl < sr);
      if (std::max(wl, wr) == 0) {
        ok = false;
      } else if (left) {
        --lo;
        covered += lo->second.end - lo->first;
        if (wl == 1) {
          sc = {sc.eligible && sl.eligible, std::min(sc.next_use, sl.next_use),
                sc.evicted + sl.evicted};
          victims.push_back(tenancies_[lo->second.tenancy].item);
        }
      } else {
        covered += hi->second.end - hi->first;
        if (wr == 1) {
          sc = {sc.eligible && sr.eligible, std::min(sc.next_use, sr.next_use),
                sc.evicted + sr.evicted};
          victims.push_back(tenancies_[hi->second.tenancy].item);
        }
        ++hi;
      }
    }
    if (!ok) continue;
    if (*best_at < 0 || sc < *best) {
      *best = sc;
      *best_at = lo->first;
      best_victims_ = victims;
    }
  }
}

// Placed mode, when no window around a good victim holds x: every window of
// the arena, and the op's own inputs not handled yet may go too (they come
// back before it runs), scored as needed now.
void SwapPlanner::Pass::window_anywhere(ItemId x, int i, bool swap_in, WindowScore* best,
                                        int64_t* best_at) {
  const int64_t need = bytes_[x];
  std::vector<ItemId>& victims = window_victims_;
  std::vector<std::pair<int64_t, int64_t>> span;  // (at, end) per range
  std::vector<ItemId> who;                        // -1 free, -2 wall, else the victim
  for (const auto& [at, r] : ranges_) {
    ItemId v = -1;
    if (r.tenancy >= 0) {
      v = tenancies_[r.tenancy].item;
      const bool pending = pinned_[v] == i && handled_[v] != i;
      if (!(movable(v, i) || (pending && listed_at_[v] >= 0))) v = -2;
    }
    span.push_back({at, r.end});
    who.push_back(v);
  }
  const int np = static_cast<int>(span.size());
  for (int a = 0; a < np; ++a) {
    if (who[a] == -2) continue;
    WindowScore sc;
    victims.clear();
    int64_t covered = 0;
    for (int b = a; b < np && covered < need && who[b] != -2; ++b) {
      if (who[b] >= 0) {
        const ItemId v = who[b];
        sc = {sc.eligible && eligible_victim(v, x, i, swap_in),
              std::min(sc.next_use, pinned_[v] == i ? int64_t{i} : victim_key(v)),
              sc.evicted + bytes_[v]};
        victims.push_back(v);
      }
      covered += span[b].second - span[b].first;
    }
    if (covered < need) continue;
    if (*best_at < 0 || sc < *best) {
      *best = sc;
      *best_at = span[a].first;
      best_victims_ = victims;
    }
  }
}

// Placed mode: the memory for everything op i needs that is not on the
// device, the largest first, so that small items do not cut up the room the
// large ones need. When they cannot all fit around the op's own resident
// items (first fit decreasing into the runs between them), those leave too
// and the op's items are laid out one after the other from offset 0 (op i
// touches at most the capacity, so they fit): the op's inputs are moved.
void SwapPlanner::Pass::preplace(int i) {
  const OpId o = order_[i];
  const Op& op = g_.ops[o];
  // (The buffers are the pass's: no allocation per op once they have grown.)
  auto& items = pre_.items;  // (item, created by op i)
  items.clear();
  for_each_access(op, [&](TensorId x, Access a) { items.push_back({x, a == Access::kCreate}); });
  if (op.workspace_bytes > 0) items.push_back({n_ + o, true});
  std::sort(items.begin(), items.end());
  items.erase(std::unique(items.begin(), items.end(),
                          [](const auto& a, const auto& b) { return a.first == b.first; }),
              items.end());
  auto by_size = [&](const auto& a, const auto& b) {
    return bytes_[a.first] != bytes_[b.first] ? bytes_[a.first] > bytes_[b.first]
                                              : a.first < b.first;
  };
  std::sort(items.begin(), items.end(), by_size);
  for (const auto& it : items)
    handled_[it.first] = i;  // walls for make_room(): none of them may go now
  auto& needed = pre_.needed;
  auto& walls = pre_.walls;  // the op's residents, by offset
  needed.clear();
  walls.clear();
  for (const auto& it : items) {
    if (obj_of_[it.first] == kNoObject)
      needed.push_back(it);
    else if (bytes_[it.first] > 0)
      walls.push_back({tenancies_[obj_of_[it.first]].offset, bytes_[it.first]});
  }
  if (needed.empty()) return;
  std::sort(walls.begin(), walls.end());
  auto& room = pre_.room;  // the runs between walls
  room.clear();
  int64_t at = 0;
  for (const auto& [w, b] : walls) {
    room.push_back(w - at);
    at = w + b;
  }
  room.push_back(capacity_ - at);
  bool fits = true;
  for (const auto& [x, created] : needed) {
    const int64_t need = bytes_[x];  // (clang cannot capture the structured binding)
    auto r = std::find_if(room.begin(), room.end(), [need](int64_t left) { return left >= need; });
    if (r == room.end()) {
      fits = false;
      break;
    }
    *r -= bytes_[x];
  }
  auto settle = [&](ItemId x, bool created, ObjectId obj) {
    if (created) {
      pre_obj_[x] = obj;
      scratch_.insert(scratch_.end(), taken_copy_.begin(), taken_copy_.end());
    } else {
      arrival_[x] = swap_in(x, obj, -1, -1);
    }
  };
  if (fits) {
    // Reserve every range first; the copies come once all have one.
    auto& reserved = pre_.reserved;
    size_t num_reserved = 0;
    for (const auto& [x, created] : needed) {
      const ObjectId obj = make_room(x, i, !created);
      if (obj == kNoObject) {
        // The windows went elsewhere than first fit would have: give the
        // ranges back as they were, and move the op's inputs.
        for (size_t k = num_reserved; k-- > 0;) {  // the last reserved first
          const PreplaceBuffers::Reserved& r = reserved[k];
          if (bytes_[r.x] == 0) continue;
          const int64_t at = tenancies_[r.t].offset;
          ranges_.erase(at);
          for (const auto& [p_at, piece] : r.pieces) {
            ranges_.emplace(p_at, piece);
            if (piece.tenancy < 0) run_add(p_at, piece.end, piece.key);
          }
        }
        fits = false;
        break;
      }
      if (num_reserved == reserved.size()) reserved.emplace_back();
      PreplaceBuffers::Reserved& r = reserved[num_reserved++];
      r.x = x;
      r.created = created;
      r.t = obj;
      r.compute = taken_compute_;  // (copies into the buffers they had)
      r.copy = taken_copy_;
      r.pieces = taken_pieces_;
    }
    if (fits) {
      for (size_t k = 0; k < num_reserved; ++k) {
        PreplaceBuffers::Reserved& r = reserved[k];
        std::swap(taken_compute_, r.compute);
        std::swap(taken_copy_, r.copy);
        settle(r.x, r.created, r.t);
      }
      return;
    }
  }
  for (const auto& it : items)
    if (obj_of_[it.first] != kNoObject) {
      // Touched by a recompute before op i: it may only go after op i.
      if (last_pos_[it.first] >= i) throw NoRoom{it.first, i};
      evict(it.first);
    }
  int64_t total = 0;
  for (const auto& it : items)
    total += bytes_[it.first];
  for (ItemId v : range_tenants(0, total, i))
    evict(v);
  at = 0;
  for (const auto& [x, created] : items) {
    settle(x, created, take_range(x, at));
    at += bytes_[x];
  }
}

}  // namespace sa
