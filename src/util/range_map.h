#pragma once
// A map from disjoint half-open ranges [begin, end) of int64 keys (arena
// addresses) to values: assigning a range replaces whatever it overlaps and
// first shows the caller each overlapped piece.
//
//   RangeMap<int> m;
//   m.assign(0, 10, 1);                      // [0,10)=1
//   m.assign(4, 6, 2, [](int64_t b, int64_t e, int v) { ... });  // sees [4,6)=1
//   // now [0,4)=1 [4,6)=2 [6,10)=1
//
// O(log n + pieces overlapped) per call; the number of pieces stays at most
// twice the number of assignments.

#include <cstdint>
#include <iterator>
#include <map>

namespace sa {

template <typename V>
class RangeMap {
 public:
  struct Piece {
    int64_t end;
    V value;
  };

  // Calls seen(begin, end, value) for every stored piece overlapping
  // [begin, end), clipped to it, in address order; then maps [begin, end)
  // to v. An empty range changes nothing and sees nothing.
  template <typename F>
  void assign(int64_t begin, int64_t end, const V& v, F&& seen) {
    if (begin >= end) return;
    auto it = first_overlap(begin);
    if (it != pieces_.end() && it->first < begin) {  // split off the part before begin
      const Piece right = it->second;
      it->second.end = begin;
      it = pieces_.emplace_hint(std::next(it), begin, right);
    }
    while (it != pieces_.end() && it->first < end) {
      if (it->second.end > end) {  // split off the part after end
        pieces_.emplace_hint(std::next(it), end, it->second);
        it->second.end = end;
      }
      seen(it->first, it->second.end, static_cast<const V&>(it->second.value));
      it = pieces_.erase(it);
    }
    pieces_.emplace_hint(it, begin, Piece{end, v});
  }
  void assign(int64_t begin, int64_t end, const V& v) {
    assign(begin, end, v, [](int64_t, int64_t, const V&) {});
  }

  // Calls seen(begin, end, value) for every stored piece overlapping
  // [begin, end), unclipped, in address order.
  template <typename F>
  void visit(int64_t begin, int64_t end, F&& seen) const {
    if (begin >= end) return;
    for (auto it = first_overlap(begin); it != pieces_.end() && it->first < end; ++it)
      seen(it->first, it->second.end, it->second.value);
  }

  // Calls f(value) for every stored piece overlapping [begin, end), unclipped.
  template <typename F>
  void update(int64_t begin, int64_t end, F&& f) {
    if (begin >= end) return;
    for (auto it = first_overlap(begin); it != pieces_.end() && it->first < end; ++it)
      f(it->second.value);
  }

  // The value of the piece that holds address a, or null.
  V* find(int64_t a) {
    auto it = first_overlap(a);
    return it != pieces_.end() && it->first <= a ? &it->second.value : nullptr;
  }

  void clear() { pieces_.clear(); }
  size_t size() const { return pieces_.size(); }

 private:
  using Map = std::map<int64_t, Piece>;
  // The first piece that ends after a.
  typename Map::iterator first_overlap(int64_t a) {
    auto it = pieces_.upper_bound(a);
    if (it != pieces_.begin() && std::prev(it)->second.end > a) --it;
    return it;
  }
  typename Map::const_iterator first_overlap(int64_t a) const {
    auto it = pieces_.upper_bound(a);
    if (it != pieces_.begin() && std::prev(it)->second.end > a) --it;
    return it;
  }

  Map pieces_;
};

}  // namespace sa
