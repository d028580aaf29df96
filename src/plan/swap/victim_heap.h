// The swap planner's residents of each class by victim key, the largest on
// top: indexed binary heaps (Note [Victim heaps]).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace sa::swap_plan {

// Note [Victim heaps]
// Victims are chosen by walking a class's residents from the furthest next
// use down (the first eligible one, or the best few to grow windows around).
// A lazy heap, where a changed key pushes a new entry and the old one stays
// until it surfaces, left most of a recurrent net's walk on stale entries:
// the victims just evicted sat on top, with their old keys, and the walk
// stepped over about three of them for every resident it looked at. Here
// each listed item has exactly one entry and its index is kept, so a changed
// key moves that entry and an unlisted item leaves at once. The order of a
// walk is the same as before, (key, item) from the largest down, whatever
// the layout, since no two entries are equal.
class VictimHeaps {
 public:
  using ItemId = int32_t;  // an item of the pass (plan/swap/pass.h)
  struct Entry {
    int64_t key;
    ItemId item;
    bool operator<(const Entry& o) const { return key != o.key ? key < o.key : item < o.item; }
  };

  // Empty heaps for `classes` classes of `items` items.
  void reset(int classes, int items) {
    heaps_.resize(classes);
    for (auto& heap : heaps_)
      heap.clear();
    pos_.assign(items, -1);
  }
  bool contains(ItemId x) const { return pos_[x] >= 0; }
  size_t size(int c) const { return heaps_[c].size(); }

  // x's entry in class c's heap gets `key` (x enters when it is not there).
  void set(int c, ItemId x, int64_t key) {
    auto& heap = heaps_[c];
    int32_t k = pos_[x];
    if (k < 0) {
      k = static_cast<int32_t>(heap.size());
      heap.push_back({key, x});
      pos_[x] = k;
      sift_up(heap, k);
      return;
    }
    const int64_t old = heap[k].key;
    heap[k].key = key;
    if (key > old) {
      sift_up(heap, k);
    } else if (key < old) {
      sift_down(heap, k);
    }
  }

  // x leaves class c's heap (nothing when it is not there).
  void remove(int c, ItemId x) {
    const int32_t k = pos_[x];
    if (k < 0) return;
    auto& heap = heaps_[c];
    pos_[x] = -1;
    const Entry last = heap.back();
    heap.pop_back();
    if (k == static_cast<int32_t>(heap.size())) return;
    place(heap, k, last);
    sift_up(heap, k);
    sift_down(heap, pos_[last.item]);
  }

  // Class c's heap holds exactly `entries` (distinct items).
  void build(int c, std::vector<Entry>&& entries) {
    auto& heap = heaps_[c];
    for (const Entry& e : heap)
      pos_[e.item] = -1;
    heap = std::move(entries);
    std::make_heap(heap.begin(), heap.end());
    for (int32_t k = 0; k < static_cast<int32_t>(heap.size()); ++k)
      pos_[heap[k].item] = k;
  }

  // Visits class c's entries in order, the largest first, without changing
  // the heap (a frontier of its indices), until f returns true or
  // max_visits were visited. Returns whether the whole heap was visited.
  template <class F>
  bool walk(int c, int max_visits, F&& f) {
    const auto& heap = heaps_[c];
    frontier_.clear();
    if (!heap.empty()) frontier_.push_back(0);
    const auto heap_size = static_cast<int32_t>(heap.size());
    auto later_entry = [&](int32_t a, int32_t b) { return heap[a] < heap[b]; };
    for (int visits = 0; !frontier_.empty(); ++visits) {
      if (visits == max_visits) return false;
      std::pop_heap(frontier_.begin(), frontier_.end(), later_entry);
      const int32_t k = frontier_.back();
      frontier_.pop_back();
      for (int32_t ch = 2 * k + 1; ch <= 2 * k + 2 && ch < heap_size; ++ch) {
        frontier_.push_back(ch);
        std::push_heap(frontier_.begin(), frontier_.end(), later_entry);
      }
      if (f(heap[k])) return frontier_.empty();
    }
    return true;
  }

 private:
  void place(std::vector<Entry>& heap, int32_t k, const Entry& e) {
    heap[k] = e;
    pos_[e.item] = k;
  }
  void sift_up(std::vector<Entry>& heap, int32_t k) {
    const Entry e = heap[k];
    while (k > 0) {
      const int32_t parent = (k - 1) / 2;
      if (!(heap[parent] < e)) break;
      place(heap, k, heap[parent]);
      k = parent;
    }
    place(heap, k, e);
  }
  void sift_down(std::vector<Entry>& heap, int32_t k) {
    const Entry e = heap[k];
    const auto n = static_cast<int32_t>(heap.size());
    for (;;) {
      int32_t child = 2 * k + 1;
      if (child >= n) break;
      if (child + 1 < n && heap[child] < heap[child + 1]) ++child;
      if (!(e < heap[child])) break;
      place(heap, k, heap[child]);
      k = child;
    }
    place(heap, k, e);
  }

  std::vector<std::vector<Entry>> heaps_;
  std::vector<int32_t> pos_;       // per item: its index in its class's heap (-1: none)
  std::vector<int32_t> frontier_;  // walk()'s heap indices still to visit
};

}  // namespace sa::swap_plan
