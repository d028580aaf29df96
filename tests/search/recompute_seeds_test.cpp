// The unchained seed of the recompute genes (search/recompute_seeds.h) on a
// hand-checkable chain.

#include <gtest/gtest.h>

#include <vector>

#include "search/recompute_seeds.h"
#include "test_util.h"

namespace sa {
namespace {

// x -> conv0 -> a -> bn1 -> b -> conv2 -> c -> bn3 -> d, every op cheap.
Graph chain() {
  testing::GraphBuilder b;
  for (int t = 0; t < 5; ++t)
    b.tensor(100, t == 0 ? TensorKind::kInput : TensorKind::kActivation);
  for (int o = 0; o < 4; ++o)
    b.op({o}, {o + 1});
  return b.g;
}

TEST(RecomputeSeeds, UnchainedTakesTheRelativelyCheapestWithoutChains) {
  const Graph g = chain();
  const std::vector<uint8_t> cheap(4, 1);
  // Batch norms cheaper than convolutions: both batch norms, whose inputs'
  // producers (the convolutions) are then left out.
  EXPECT_EQ(unchained_subset(g, cheap, std::vector<double>{0.4, 0.1, 0.4, 0.1}),
            (std::vector<uint8_t>{0, 1, 0, 1}));
  // Convolutions cheaper: both convolutions; each batch norm reads one's output.
  EXPECT_EQ(unchained_subset(g, cheap, std::vector<double>{0.05, 0.1, 0.05, 0.1}),
            (std::vector<uint8_t>{1, 0, 1, 0}));
  // Only what is cheap: bn3 alone is, then conv0 too (it feeds only bn1).
  EXPECT_EQ(unchained_subset(g, std::vector<uint8_t>{1, 0, 0, 1},
                             std::vector<double>{0.4, 0.1, 0.4, 0.1}),
            (std::vector<uint8_t>{1, 0, 0, 1}));
}

}  // namespace
}  // namespace sa
