#pragma once
// Offsets in one arena for items with known lifetimes (dynamic storage
// allocation): no two items alive at the same time may overlap in the arena,
// and the highest end (the peak) should be as low as possible.
//
//   PackItem items[] = {{.bytes = 4, .life = {{0, 9}}}, {.bytes = 2, .life = {{0, 3}}},
//                       {.bytes = 2, .life = {{5, 9}}}};
//   Packer packer;
//   std::vector<int64_t> offset;
//   int64_t peak = packer.pack(items, &offset);  // 6: offsets 0, 4, 4
//
// Note [Packing]
// --------------
// Greedy by size with best fit, as XLA's GlobalDecreasingSizeBestFitHeap and
// TFLite's arena planner do: items are placed largest first (ties: the longer
// lifetime first, then the lower index); each goes into the smallest gap that
// fits it among the items already placed that overlap it in time, the lowest
// such gap on ties, or on top of them all when no gap fits.
//
//   address
//     6 |        .....                    items placed so far that
//     4 |  [ b ]      [ c ]   <- d goes   overlap d in time: a, b, c;
//       |             here if it fits     gaps: [4, 6) between b and c's
//     0 |[========== a ==========]        tops, and everything above 6
//       +--------------------------------> time
//
// The lower bound is the largest sum of bytes alive at one time; on the
// captured models' plans the packing is within a few percent of it
// (docs/results.md, "Planned offsets"). A lifetime is one or two inclusive
// intervals of time (two for a tensor that stays on the device across the
// end of the iteration: from the start until its eviction, then from its
// return until the end, at the same offset).
//
// Cost: placing an item needs the union of the arena ranges of the placed
// items that overlap it in time. Collecting those items one by one is
// quadratic where many live at once (an unrolled RNN keeps every step's
// activations until its backward: `stats` on the zoo's rnn-2-1k b8 took
// 3.6 s at 9,625 ops and 147 s at 38,425, nearly all of it here), so the
// placed ranges are indexed by time as merged blocks (Note [Packing
// index]): placing an item costs O(log T) index updates and a scan of the
// blocks of O(log T) lists, T the distinct times.
//
// Note [Packing index]
// --------------------
// A segment tree over the elementary time intervals (the distinct begins
// and ends + 1, compressed). Each interval of a placed item has its
// canonical nodes (disjoint, covering it exactly); node v keeps, merged
// into sorted disjoint blocks of addresses:
//   cover[v]: the ranges of the intervals with v among their canonical nodes;
//   part[v]:  the ranges of the intervals with a canonical node in v's
//             subtree (v included).
// The tree's node sets are laminar, so an interval meets the times of a
// node c iff one of its canonical nodes lies in c's subtree or is an
// ancestor of c. The ranges alive at some time of a window W are therefore
// the part of W's canonical nodes and the cover of their ancestors. Merging
// keeps touching blocks together, which gives the same gaps as the items'
// ranges (a gap is where the next range begins above all ranges below it),
// so the offsets are those of the plain algorithm (tests/plan/packing_test:
// against it on random items). A list's length is the number of blocks (how
// fragmented the arena is), not of items.

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace sa {

struct Interval {
  int32_t begin = 0;  // inclusive
  int32_t end = -1;   // inclusive; empty when end < begin
  bool empty() const { return end < begin; }
  bool overlaps(const Interval& o) const {
    return !empty() && !o.empty() && begin <= o.end && o.begin <= end;
  }
};

struct PackItem {
  int64_t bytes = 0;
  std::array<Interval, 2> life;  // the second may be empty
  bool overlaps(const PackItem& o) const {
    for (const Interval& a : life)
      for (const Interval& b : o.life)
        if (a.overlaps(b)) return true;
    return false;
  }
};

enum class PackPolicy : uint8_t {
  kGreedyBySize,  // Note [Packing]
  // Items in order of their start, each into the smallest free gap that
  // fits (best fit), as an allocator that knows every lifetime would: fast
  // (O(n log n)) and a little looser. An item with two intervals is held
  // from the start of the first to the end of the second.
  kSweepBestFit,
};

class Packer {
 public:
  // Fills (*offset)[i] for every item and returns the peak: the highest
  // offset + bytes (0 without items). Items of 0 bytes get offset 0.
  // REQUIRES: times >= 0; bytes >= 0.
  int64_t pack(std::span<const PackItem> items, std::vector<int64_t>* offset,
               PackPolicy policy = PackPolicy::kGreedyBySize);

 private:
  int64_t greedy_by_size(std::span<const PackItem> items, std::vector<int64_t>* offset);
  int64_t sweep_best_fit(std::span<const PackItem> items, std::vector<int64_t>* offset);

  struct Range {
    int64_t begin, end;
  };
  // Note [Packing index]: per node, merged blocks.
  struct Node {
    std::vector<Range> cover, part;
  };
  // Calls f(node) for the canonical nodes of leaves [l, r).
  template <class F>
  void for_each_canonical(int32_t l, int32_t r, F&& f) const;
  // Calls f(node) once per strict ancestor of the canonical nodes of
  // leaves [l, r) not yet marked with mark (then marks it).
  template <class F>
  void for_each_ancestor(int32_t l, int32_t r, int32_t mark, F&& f);
  int32_t leaf(int64_t time) const;

  std::vector<int32_t> order_;
  std::vector<int64_t> times_;  // the compressed times: leaf k is [times_[k], times_[k + 1])
  std::vector<Node> nodes_;     // the tree: nodes_[1] the root, leaf k at nodes_[num_leaves_ + k]
  std::vector<int32_t> mark_;   // per node: the last visit that reached it
  int32_t num_leaves_ = 0;
  std::vector<Range> ranges_;
};

// The largest sum of bytes alive at one time: no packing's peak is lower.
int64_t max_live_bytes(std::span<const PackItem> items);

// True when no two items alive at the same time overlap in the arena.
bool packing_is_valid(std::span<const PackItem> items, std::span<const int64_t> offset);

}  // namespace sa
