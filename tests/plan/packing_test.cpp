// plan/packing.h: hand-checked packings, and greedy-by-size's index (Note
// [Packing index]) against the plain quadratic algorithm of Note [Packing]
// on random items.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "plan/packing.h"

namespace sa {
namespace {

// Note [Packing] as written there: largest first (ties: longer lifetime,
// then lower index); each item into the smallest gap (the lowest on ties)
// among the items placed so far that overlap it in time, else on top of
// them; items alive throughout go below the rest, in index order. O(n^2).
int64_t reference_greedy(const std::vector<PackItem>& items, std::vector<int64_t>* offset) {
  const int n = static_cast<int>(items.size());
  offset->assign(n, 0);
  auto empty = [&](int i) {
    return items[i].bytes == 0 || (items[i].life[0].empty() && items[i].life[1].empty());
  };
  int32_t start = std::numeric_limits<int32_t>::max(), horizon = 0;
  for (int i = 0; i < n; ++i) {
    if (empty(i)) continue;
    for (const Interval& v : items[i].life)
      if (!v.empty()) {
        start = std::min(start, v.begin);
        horizon = std::max(horizon, v.end + 1);
      }
  }
  // Alive at every time of [start, horizon).
  auto throughout = [&](int i) {
    for (int32_t t = start; t < horizon; ++t) {
      bool alive = false;
      for (const Interval& v : items[i].life)
        alive = alive || (!v.empty() && v.begin <= t && t <= v.end);
      if (!alive) return false;
    }
    return true;
  };
  auto length = [&](int i) {
    int64_t len = 0;
    for (const Interval& v : items[i].life)
      if (!v.empty()) len += int64_t{v.end} - v.begin + 1;
    return len;
  };
  int64_t base = 0;
  std::vector<int> order;
  for (int i = 0; i < n; ++i) {
    if (empty(i)) continue;
    if (throughout(i)) {
      (*offset)[i] = base;
      base += items[i].bytes;
    } else {
      order.push_back(i);
    }
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if (items[a].bytes != items[b].bytes) return items[a].bytes > items[b].bytes;
    if (length(a) != length(b)) return length(a) > length(b);
    return a < b;
  });
  int64_t peak = base;
  std::vector<int> placed;
  for (int i : order) {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (int j : placed)
      if (items[i].overlaps(items[j]))
        ranges.push_back({(*offset)[j], (*offset)[j] + items[j].bytes});
    std::sort(ranges.begin(), ranges.end());
    int64_t cur = base, best = -1, best_size = std::numeric_limits<int64_t>::max();
    for (const auto& [b, e] : ranges) {
      if (b > cur && b - cur >= items[i].bytes && b - cur < best_size) {
        best = cur;
        best_size = b - cur;
      }
      cur = std::max(cur, e);
    }
    if (best < 0) best = cur;
    (*offset)[i] = best;
    peak = std::max(peak, best + items[i].bytes);
    placed.push_back(i);
  }
  return peak;
}

// The doc comment's example in plan/packing.h.
TEST(Packing, HeaderExample) {
  const std::vector<PackItem> items = {{.bytes = 4, .life = {{{0, 9}}}},
                                       {.bytes = 2, .life = {{{0, 3}}}},
                                       {.bytes = 2, .life = {{{5, 9}}}}};
  Packer packer;
  std::vector<int64_t> offset;
  EXPECT_EQ(packer.pack(items, &offset), 6);
  EXPECT_EQ(offset, (std::vector<int64_t>{0, 4, 4}));
}

// a [0,9] alive throughout: offset 0, the base of the rest (4). Then by
// size, ties the longer first: c [6,9] at 4; b [0,2] (apart from c) at 4;
// d [1,7] meets b and c [4,7): on top, 7; f [8,9] meets c only: 7; e [3,5]
// meets d [7,9) only: the gap [4,7) below it, 4. Peak 9.
TEST(Packing, HandCheckedGaps) {
  const std::vector<PackItem> items = {
      {.bytes = 4, .life = {{{0, 9}}}}, {.bytes = 3, .life = {{{0, 2}}}},
      {.bytes = 3, .life = {{{6, 9}}}}, {.bytes = 2, .life = {{{1, 7}}}},
      {.bytes = 1, .life = {{{3, 5}}}}, {.bytes = 2, .life = {{{8, 9}}}}};
  Packer packer;
  std::vector<int64_t> offset;
  EXPECT_EQ(packer.pack(items, &offset), 9);
  EXPECT_EQ(offset, (std::vector<int64_t>{0, 4, 4, 7, 4, 7}));
  EXPECT_TRUE(packing_is_valid(items, offset));
}

// The smallest gap that fits wins over a lower, larger one.
//   A 6 B [0,0] at 0; B 5 B [0,2] on A: 6; C 4 B [0,0] on B: 11; D 3 B
//   [0,2] on C: 15. At times 1-2 only B [6,11) and D [15,18) are alive:
//   gaps [0,6) and [11,15).
//   E 2 B [1,1]: the smaller gap, 11. F 2 B [2,2] (apart from E): 11.
//   G 1 B [1,2] meets B, D, E and F [11,13): gaps [0,6) and [13,15): 13.
//   H 1 B [3,3] meets nothing: 0 (and makes B and D not alive throughout).
TEST(Packing, SmallestGapWins) {
  const std::vector<PackItem> items = {
      {.bytes = 6, .life = {{{0, 0}}}}, {.bytes = 5, .life = {{{0, 2}}}},
      {.bytes = 4, .life = {{{0, 0}}}}, {.bytes = 3, .life = {{{0, 2}}}},
      {.bytes = 2, .life = {{{1, 1}}}}, {.bytes = 2, .life = {{{2, 2}}}},
      {.bytes = 1, .life = {{{1, 2}}}}, {.bytes = 1, .life = {{{3, 3}}}}};
  Packer packer;
  std::vector<int64_t> offset;
  EXPECT_EQ(packer.pack(items, &offset), 18);
  EXPECT_EQ(offset, (std::vector<int64_t>{0, 6, 11, 15, 11, 11, 13, 0}));
  EXPECT_TRUE(packing_is_valid(items, offset));
}

std::vector<PackItem> random_items(std::mt19937_64& rng, int n, int32_t horizon, bool two_lives) {
  auto uniform = [&](int64_t lo, int64_t hi) {  // [lo, hi]
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  const int64_t sizes[] = {0, 1, 2, 3, 4, 8, 16, 24, 32, 100};
  std::vector<PackItem> items(n);
  for (PackItem& it : items) {
    it.bytes = sizes[uniform(0, 9)];
    const auto b = static_cast<int32_t>(uniform(0, horizon - 1));
    const auto len = static_cast<int32_t>(uniform(0, uniform(0, 3) == 0 ? horizon : horizon / 8));
    it.life[0] = {b, std::min(horizon - 1, b + len)};
    if (uniform(0, 9) == 0) it.life[0] = {0, horizon - 1};  // throughout
    if (uniform(0, 19) == 0) it.life[0] = {5, 4};           // empty
    if (two_lives && horizon >= 2 && uniform(0, 3) == 0) {
      // From the start until an eviction, back from a return until the end.
      const auto evict = static_cast<int32_t>(uniform(0, (horizon - 2) / 2));
      const auto back = static_cast<int32_t>(uniform(evict + 1, horizon - 1));
      it.life = {Interval{0, evict}, Interval{back, horizon - 1}};
    }
  }
  return items;
}

// Greedy by size with the index against the reference: the same offsets
// and peak on random items (sizes from a small set, so ties in size and
// length occur; some alive throughout, some empty, some with two lives).
TEST(Packing, GreedyMatchesReferenceOnRandomItems) {
  const uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  Packer packer;  // reused: the index must not leak between calls
  for (int round = 0; round < 300; ++round) {
    const int n = 1 + static_cast<int>(rng() % 120);
    const auto horizon = static_cast<int32_t>(1 + rng() % 60);
    const std::vector<PackItem> items = random_items(rng, n, horizon, round % 2 == 1);
    std::vector<int64_t> want, got;
    const int64_t want_peak = reference_greedy(items, &want);
    ASSERT_EQ(packer.pack(items, &got), want_peak) << "round " << round;
    ASSERT_EQ(got, want) << "round " << round;
    ASSERT_TRUE(packing_is_valid(items, got)) << "round " << round;
  }
}

// Times far apart (the index compresses them): the same as times 0, 1, 2.
TEST(Packing, SparseTimes) {
  const std::vector<PackItem> items = {{.bytes = 4, .life = {{{0, 1000000}}}},
                                       {.bytes = 2, .life = {{{2000000000, 2000000001}}}},
                                       {.bytes = 2, .life = {{{999999, 2000000000}}}}};
  Packer packer;
  std::vector<int64_t> offset, want;
  EXPECT_EQ(packer.pack(items, &offset), reference_greedy(items, &want));
  EXPECT_EQ(offset, want);
  EXPECT_EQ(offset, (std::vector<int64_t>{0, 0, 4}));
}

}  // namespace
}  // namespace sa
