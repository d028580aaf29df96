// The walk's free-memory structures on their own (plan/swap/free_memory.h):
// the size-class pool's rings and the packed arena's bytes by release key.

#include "plan/swap/free_memory.h"

#include <gtest/gtest.h>

namespace sa::swap_plan {
namespace {

// Two classes: class 0 has objects 0..2, class 1 objects 3..4.
TEST(FreeObjects, EachClassGivesBackTheObjectFreedEarliest) {
  FreeObjects f;
  const std::vector<int32_t> first = {0, 3, 5};
  f.reset(first);
  EXPECT_EQ(f.pop(0), kNoObject);  // nothing freed yet
  EXPECT_EQ(f.in_use(0), 3);
  f.push(0, 2);
  f.push(1, 4);
  f.push(0, 0);
  EXPECT_EQ(f.in_use(0), 1);
  EXPECT_EQ(f.in_use(1), 1);
  EXPECT_EQ(f.pop(0), 2);  // freed first
  f.push(0, 1);
  EXPECT_EQ(f.pop(0), 0);
  EXPECT_EQ(f.pop(0), 1);
  EXPECT_EQ(f.pop(0), kNoObject);
  EXPECT_EQ(f.pop(1), 4);
  EXPECT_EQ(f.in_use(1), 2);
}

// The ring wraps around its class's range: three objects pushed and popped
// five times over keep their order.
TEST(FreeObjects, TheRingWrapsAround) {
  FreeObjects f;
  const std::vector<int32_t> first = {0, 3};
  f.reset(first);
  std::vector<ObjectId> got;
  f.push(0, 0);
  f.push(0, 1);
  for (int k = 0; k < 5; ++k) {
    const ObjectId o = f.pop(0);
    got.push_back(o);
    f.push(0, o);
  }
  EXPECT_EQ(got, (std::vector<ObjectId>{0, 1, 0, 1, 0}));
}

TEST(FreeObjects, MoreFreeObjectsThanTheClassHasIsABug) {
  FreeObjects f;
  const std::vector<int32_t> first = {0, 1};
  f.reset(first);
  f.push(0, 0);
  EXPECT_THROW(f.push(0, 0), InternalError);
}

// Keys -1 (the start) .. 3. 10 bytes free from the start, 5 released at 1,
// 7 at 3.
TEST(FreeBytes, TakesTheEarliestOrTheLatestAndSaysWhenTheyWereFreed) {
  FreeBytes f;
  f.reset(5);
  f.add(-1, 10);
  f.add(1, 5);
  f.add(3, 7);
  f.add(2, 0);  // nothing
  EXPECT_EQ(f.total(), 22);
  // A swap-in takes the earliest: 10 from the start and 2 of key 1.
  EXPECT_EQ(f.take(12, true), 1);
  EXPECT_EQ(f.total(), 10);
  // An output takes the latest: 7 of key 3, then 1 of key 1.
  EXPECT_EQ(f.take(8, false), 3);
  EXPECT_EQ(f.total(), 2);
  // What is left was released at 1.
  EXPECT_EQ(f.take(2, true), 1);
  EXPECT_EQ(f.total(), 0);
  EXPECT_THROW(f.take(1, true), InternalError);
}

TEST(FreeBytes, BytesFromTheStartSayMinusOne) {
  FreeBytes f;
  f.reset(3);
  f.add(-1, 4);
  EXPECT_EQ(f.take(4, false), -1);
  f.reset(3);  // empties it
  EXPECT_EQ(f.total(), 0);
}

}  // namespace
}  // namespace sa::swap_plan
