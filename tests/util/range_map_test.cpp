// RangeMap (util/range_map.h), which the planner's placed arena, the
// verifier and the executor all use: a bug here would make the planner and
// its checker agree on a wrong answer, so it is checked on its own, by hand
// and against a map of every address.

#include "util/range_map.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.h"

namespace sa {
namespace {

using Pieces = std::vector<std::tuple<int64_t, int64_t, int>>;

Pieces pieces_of(const RangeMap<int>& m, int64_t begin = INT64_MIN / 2,
                 int64_t end = INT64_MAX / 2) {
  Pieces out;
  m.visit(begin, end, [&](int64_t b, int64_t e, int v) { out.emplace_back(b, e, v); });
  return out;
}

TEST(RangeMap, TheHeaderExample) {
  RangeMap<int> m;
  m.assign(0, 10, 1);
  Pieces seen;
  m.assign(4, 6, 2, [&](int64_t b, int64_t e, int v) { seen.emplace_back(b, e, v); });
  EXPECT_EQ(seen, (Pieces{{4, 6, 1}}));
  EXPECT_EQ(pieces_of(m), (Pieces{{0, 4, 1}, {4, 6, 2}, {6, 10, 1}}));
  EXPECT_EQ(m.size(), 3u);
}

TEST(RangeMap, AnAssignmentSeesEachOverlappedPieceClipped) {
  RangeMap<int> m;
  m.assign(0, 4, 1);
  m.assign(6, 8, 2);
  m.assign(8, 12, 3);
  Pieces seen;
  m.assign(2, 10, 9, [&](int64_t b, int64_t e, int v) { seen.emplace_back(b, e, v); });
  // The gap [4, 6) holds nothing and is not shown.
  EXPECT_EQ(seen, (Pieces{{2, 4, 1}, {6, 8, 2}, {8, 10, 3}}));
  EXPECT_EQ(pieces_of(m), (Pieces{{0, 2, 1}, {2, 10, 9}, {10, 12, 3}}));
}

TEST(RangeMap, EmptyRangesChangeAndSeeNothing) {
  RangeMap<int> m;
  m.assign(0, 10, 1);
  int calls = 0;
  m.assign(5, 5, 7, [&](int64_t, int64_t, int) { ++calls; });
  m.assign(6, 2, 7, [&](int64_t, int64_t, int) { ++calls; });
  m.visit(3, 3, [&](int64_t, int64_t, int) { ++calls; });
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(pieces_of(m), (Pieces{{0, 10, 1}}));
}

TEST(RangeMap, VisitIsUnclippedAndFindHoldsTheAddress) {
  RangeMap<int> m;
  m.assign(10, 20, 1);
  m.assign(30, 40, 2);
  EXPECT_EQ(pieces_of(m, 15, 31), (Pieces{{10, 20, 1}, {30, 40, 2}}));
  EXPECT_EQ(pieces_of(m, 20, 30), Pieces{});  // ends are exclusive
  ASSERT_NE(m.find(10), nullptr);
  EXPECT_EQ(*m.find(19), 1);
  EXPECT_EQ(m.find(20), nullptr);
  EXPECT_EQ(m.find(9), nullptr);
  EXPECT_EQ(*m.find(39), 2);
  m.update(0, 100, [](int& v) { v *= 10; });
  EXPECT_EQ(pieces_of(m), (Pieces{{10, 20, 10}, {30, 40, 20}}));
  m.clear();
  EXPECT_EQ(m.size(), 0u);
  EXPECT_EQ(m.find(15), nullptr);
}

// Random assignments over a small address space, against a value per
// address: the same contents, what each assignment sees is exactly the
// addresses it overwrites, and the piece count stays within twice the
// assignments (the header's bound).
TEST(RangeMap, AgreesWithAMapOfEveryAddress) {
  const uint64_t seed = testing::seed_from_env(20261206);
  SCOPED_TRACE("seed " + std::to_string(seed) + " (SA_TEST_SEED to repeat)");
  std::printf("RangeMap.AgreesWithAMapOfEveryAddress: seed %llu\n",
              static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  constexpr int kSpace = 64;
  for (int round = 0; round < 50; ++round) {
    RangeMap<int> m;
    std::vector<int> model(kSpace, -1);  // -1: nothing
    for (int i = 1; i <= 40; ++i) {
      const int64_t b = static_cast<int64_t>(rng() % kSpace);
      const int64_t e = b + static_cast<int64_t>(rng() % 12);
      const int64_t end = std::min<int64_t>(e, kSpace);
      std::vector<int> seen(kSpace, -1);
      m.assign(b, end, i, [&](int64_t pb, int64_t pe, int v) {
        ASSERT_LE(b, pb);
        ASSERT_LE(pe, end);
        for (int64_t a = pb; a < pe; ++a) {
          ASSERT_EQ(seen[a], -1) << "address " << a << " seen twice";
          seen[a] = v;
        }
      });
      for (int64_t a = b; a < end; ++a) {
        ASSERT_EQ(seen[a], model[a]) << "round " << round << " step " << i << " address " << a;
        model[a] = i;
      }
      for (int64_t a = 0; a < kSpace; ++a) {
        const int* v = m.find(a);
        ASSERT_EQ(v ? *v : -1, model[a]) << "round " << round << " step " << i << " address " << a;
      }
      ASSERT_LE(m.size(), 2u * static_cast<size_t>(i));
    }
  }
}

}  // namespace
}  // namespace sa
