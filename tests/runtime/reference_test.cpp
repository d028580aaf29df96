// The reference run is incremental (runtime/reference.h): its set-up does not
// grow with the number of iterations, and iteration i's checksums are those
// of a run of exactly i + 1 iterations.

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "graph/graph_io.h"
#include "runtime/reference.h"
#include "test_util.h"
#include "util/error.h"

namespace sa::runtime {
namespace {

using Sums = std::vector<uint64_t>;

TEST(RuntimeReference, IterationsAreComputedOnDemand) {
  const Graph g = read_graph(testing::data_path("adversarial/mlp3.json"));
  // Before the fix, this precomputed 10^9 iterations' checksums (issue 15,
  // case 12: memory grew by 75 MB/s before the first iteration ran).
  const Reference many = run_reference(g, 1'000'000'000);
  const Reference three = run_reference(g, 3);
  std::vector<Sums> slots, sums;
  for (int it = 0; it < 3; ++it) {
    slots.push_back(three.slots[it]);
    sums.push_back(three.persistent_sums[it]);
    EXPECT_EQ(many.slots[it], slots[it]) << it;
    EXPECT_EQ(many.persistent_sums[it], sums[it]) << it;
    // Asking again for the latest iteration gives it again.
    EXPECT_EQ(many.slots[it], slots[it]) << it;
  }
  ASSERT_FALSE(sums[0].empty());
  // Parameters change every iteration, so the checksums do.
  EXPECT_NE(sums[0], sums[1]);
  EXPECT_NE(slots[1], slots[2]);
}

TEST(RuntimeReference, AnEarlierOrMissingIterationIsABug) {
  const Graph g = read_graph(testing::data_path("adversarial/mlp3.json"));
  const Reference ref = run_reference(g, 3);
  (void)ref.slots[2];
  EXPECT_THROW((void)ref.slots[0], InternalError);
  EXPECT_THROW((void)ref.persistent_sums[3], InternalError);
  EXPECT_THROW((void)Reference().slots[0], InternalError);
}

}  // namespace
}  // namespace sa::runtime
