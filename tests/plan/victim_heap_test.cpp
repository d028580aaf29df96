// The swap planner's victim heaps on their own (plan/swap/victim_heap.h):
// a walk visits the entries from the largest (key, item) down, whatever
// was set, changed, removed or built before it.

#include "plan/swap/victim_heap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>

#include "test_util.h"

namespace sa::swap_plan {
namespace {

using Entry = VictimHeaps::Entry;

std::vector<Entry> walked(VictimHeaps& h, int c, int max_visits, bool* whole = nullptr) {
  std::vector<Entry> seen;
  const bool w = h.walk(c, max_visits, [&](const Entry& e) {
    seen.push_back(e);
    return false;
  });
  if (whole) *whole = w;
  return seen;
}

// By hand: keys move both ways, an item leaves, ties go to the larger item.
TEST(VictimHeaps, WalkVisitsTheLargestKeyFirst) {
  VictimHeaps h;
  h.reset(2, 6);
  h.set(0, 0, 10);
  h.set(0, 1, 30);
  h.set(0, 2, 20);
  h.set(1, 3, 99);  // another class: not in class 0's walk
  h.set(0, 4, 20);
  auto keys = [](const std::vector<Entry>& v) {
    std::vector<std::pair<int64_t, int32_t>> out;
    for (const Entry& e : v)
      out.push_back({e.key, e.item});
    return out;
  };
  using V = std::vector<std::pair<int64_t, int32_t>>;
  EXPECT_EQ(keys(walked(h, 0, 10)), (V{{30, 1}, {20, 4}, {20, 2}, {10, 0}}));
  h.set(0, 0, 40);  // up
  h.set(0, 1, 5);   // down
  h.remove(0, 4);
  h.remove(0, 4);  // twice: nothing
  EXPECT_FALSE(h.contains(4));
  EXPECT_EQ(keys(walked(h, 0, 10)), (V{{40, 0}, {20, 2}, {5, 1}}));
  bool whole = true;
  EXPECT_EQ(keys(walked(h, 0, 2, &whole)), (V{{40, 0}, {20, 2}}));
  EXPECT_FALSE(whole);
  walked(h, 0, 3, &whole);
  EXPECT_TRUE(whole);
  EXPECT_EQ(keys(walked(h, 1, 10)), (V{{99, 3}}));
  // A walk that stops at an entry: visited up to it.
  int visits = 0;
  h.walk(0, 10, [&](const Entry& e) {
    ++visits;
    return e.item == 2;
  });
  EXPECT_EQ(visits, 2);
}

// Against a map of the current keys, on random operations: every walk
// visits the first max_visits entries in (key, item) order, largest first.
TEST(VictimHeaps, MatchesSortedKeysOnRandomOperations) {
  const uint64_t seed = sa::testing::seed_from_env(std::random_device{}());
  std::printf("seed %llu (SA_TEST_SEED reruns it)\n", static_cast<unsigned long long>(seed));
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  constexpr int kItems = 200, kClasses = 3;
  VictimHeaps h;
  for (int round = 0; round < 20; ++round) {
    h.reset(kClasses, kItems);       // reused: nothing leaks between rounds
    std::map<int32_t, int64_t> key;  // item -> key, of the items in a heap
    auto class_of = [](int32_t x) { return x % kClasses; };
    for (int op = 0; op < 3000; ++op) {
      const auto x = static_cast<int32_t>(rng() % kItems);
      const int c = class_of(x);
      switch (rng() % 8) {
        case 0:
        case 1:
          h.remove(c, x);
          key.erase(x);
          break;
        case 2:
          if (rng() % 50 == 0) {  // build a class from scratch
            std::vector<Entry> entries;
            for (auto it = key.begin(); it != key.end();)
              it = class_of(it->first) == c ? key.erase(it) : std::next(it);
            for (int32_t y = c; y < kItems; y += kClasses)
              if (rng() % 2) {
                entries.push_back({static_cast<int64_t>(rng() % 40), y});
                key[y] = entries.back().key;
              }
            h.build(c, std::move(entries));
          }
          break;
        default: {
          const auto k = static_cast<int64_t>(rng() % 40);  // few keys: ties
          h.set(c, x, k);
          key[x] = k;
        }
      }
      ASSERT_EQ(h.contains(x), key.count(x) == 1) << "round " << round << " op " << op;
      if (op % 25 != 0) continue;
      const int max_visits = 1 + static_cast<int>(rng() % 70);
      for (int cc = 0; cc < kClasses; ++cc) {
        std::vector<Entry> want;
        for (const auto& [y, k] : key)
          if (class_of(y) == cc) want.push_back({k, y});
        std::sort(want.begin(), want.end(), [](const Entry& a, const Entry& b) { return b < a; });
        const bool want_whole = static_cast<int>(want.size()) <= max_visits;
        if (!want_whole) want.resize(max_visits);
        bool whole = false;
        const std::vector<Entry> got = walked(h, cc, max_visits, &whole);
        ASSERT_EQ(got.size(), want.size()) << "round " << round << " op " << op;
        for (size_t k = 0; k < got.size(); ++k) {
          ASSERT_EQ(got[k].key, want[k].key) << "round " << round << " op " << op << " at " << k;
          ASSERT_EQ(got[k].item, want[k].item) << "round " << round << " op " << op;
        }
        ASSERT_EQ(whole, want_whole) << "round " << round << " op " << op;
        ASSERT_EQ(h.size(cc),
                  static_cast<size_t>(std::count_if(key.begin(), key.end(), [&](const auto& p) {
                    return class_of(p.first) == cc;
                  })));
      }
    }
  }
}

}  // namespace
}  // namespace sa::swap_plan
