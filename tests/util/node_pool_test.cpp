// NodePool (util/node_pool.h): a freed node is handed out again, and a map
// on the pool holds what a plain map holds under random inserts and erases.

#include "util/node_pool.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>

#include "test_util.h"

namespace sa {
namespace {

TEST(NodePool, AFreedNodeIsHandedOutAgain) {
  NodePool pool;
  void* a = pool.allocate(40, 8);
  void* b = pool.allocate(40, 8);
  EXPECT_NE(a, b);
  pool.deallocate(a, 40, 8);
  EXPECT_EQ(pool.allocate(40, 8), a);  // the free list's head
  // Larger than the node size: from the heap, and back to it.
  void* big = pool.allocate(4096, 8);
  ASSERT_NE(big, nullptr);
  pool.deallocate(big, 4096, 8);
  pool.deallocate(a, 40, 8);
  pool.deallocate(b, 40, 8);
}

TEST(NodePool, MapOnThePoolHoldsWhatAPlainMapHolds) {
  const uint64_t seed = sa::testing::seed_from_env(std::random_device{}());
  std::printf("seed %llu (SA_TEST_SEED reruns it)\n", static_cast<unsigned long long>(seed));
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  NodePool pool;
  std::pmr::map<int64_t, int64_t> pooled{&pool};
  std::map<int64_t, int64_t> plain;
  for (int op = 0; op < 20000; ++op) {
    const auto k = static_cast<int64_t>(rng() % 2000);
    if (rng() % 3 == 0) {
      pooled.erase(k);
      plain.erase(k);
    } else {
      const auto v = static_cast<int64_t>(rng());
      pooled[k] = v;
      plain[k] = v;
    }
    if (op % 5000 == 4999) pooled.clear(), plain.clear();
  }
  ASSERT_EQ(pooled.size(), plain.size());
  EXPECT_TRUE(std::equal(pooled.begin(), pooled.end(), plain.begin(), plain.end()));
}

}  // namespace
}  // namespace sa
