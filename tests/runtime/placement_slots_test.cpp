// The placing allocators' bookkeeping (runtime/aten/placement_slots.h), shared by
// the ATen kernels on the CPU and on CUDA.

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "runtime/aten/placement_slots.h"

namespace sa::runtime {
namespace {

TEST(PlacementSlots, AnOutputsSizeGetsItsObjectOnce) {
  PlacementSlots s;
  int a = 0, b = 0;
  s.arm({{&a, 64}, {&b, 64}});
  EXPECT_EQ(s.take(64), &a);
  EXPECT_EQ(s.take(64), &b);
  EXPECT_EQ(s.take(64), nullptr);  // both taken: the caller allocates scratch
  EXPECT_EQ(s.take(32), nullptr);
}

TEST(PlacementSlots, AReleasedObjectCanBeTakenAgainAndIsNeverFreed) {
  PlacementSlots s;
  int a = 0;
  s.arm({{&a, 16}});
  EXPECT_EQ(s.take(16), &a);
  EXPECT_FALSE(s.release(&a));  // a temporary of the output's size died
  EXPECT_EQ(s.take(16), &a);    // the output itself gets the object
  s.disarm();
  EXPECT_EQ(s.take(16), nullptr);  // outside the op, everything is scratch
  EXPECT_FALSE(s.release(&a));
}

TEST(PlacementSlots, ScratchIsCountedWithItsPeak) {
  PlacementSlots s;
  int x = 0, y = 0;
  s.note_scratch(&x, 100);
  s.note_scratch(&y, 50);
  EXPECT_EQ(s.scratch_live_bytes(), 150);
  EXPECT_TRUE(s.release(&x));
  EXPECT_EQ(s.scratch_live_bytes(), 50);
  EXPECT_FALSE(s.release(&x));  // already given back
  s.note_scratch(&x, 10);
  EXPECT_EQ(s.scratch_live_bytes(), 60);
  EXPECT_EQ(s.scratch_peak_bytes(), 150);
}

// A thread that neither runs the op nor works for its kernel (the
// Trainer's own, computing the next step's values while the step runs)
// never takes an output's object: before, it could, and wrote its own
// values there.
TEST(PlacementSlots, AnotherThreadNeverTakesAnOutputsObject) {
  PlacementSlots s;
  int a = 0;
  s.arm({{&a, 4}});
  void* other = &a;
  std::thread([&] { other = s.take(4); }).join();
  EXPECT_EQ(other, nullptr);  // it allocates scratch instead
  EXPECT_EQ(s.take(4), &a);   // the op's own allocation still gets the object
}

// Kernels allocate from their worker threads (TSan runs this).
TEST(PlacementSlots, ThreadsTakeEachObjectOnce) {
  PlacementSlots s;
  std::vector<int> objects(64);
  std::vector<PlacementSlots::Slot> slots;
  for (int& o : objects)
    slots.push_back({&o, 8});
  s.arm(slots);
  std::vector<std::vector<void*>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 16; ++i)
        got[t].push_back(s.take(8, /*kernel_worker=*/true));
    });
  for (auto& t : threads)
    t.join();
  std::vector<void*> all;
  for (const auto& g : got)
    all.insert(all.end(), g.begin(), g.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  EXPECT_EQ(std::count(all.begin(), all.end(), nullptr), 0);
}

}  // namespace
}  // namespace sa::runtime
