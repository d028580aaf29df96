#include "search/recompute_seeds.h"

#include <algorithm>

namespace sa {

std::vector<uint8_t> unchained_subset(const Graph& g, std::span<const uint8_t> cheap,
                                      std::span<const double> ratio) {
  const int m = g.num_ops();
  std::vector<OpId> producer(g.num_tensors(), -1);
  std::vector<std::vector<OpId>> readers(g.num_tensors());
  for (OpId o = 0; o < m; ++o) {
    for (TensorId t : g.ops[o].outputs)
      producer[t] = o;
    for (TensorId t : g.ops[o].inputs)
      readers[t].push_back(o);
  }
  std::vector<OpId> by_ratio;
  for (OpId o = 0; o < m; ++o)
    if (cheap[o]) by_ratio.push_back(o);
  std::stable_sort(by_ratio.begin(), by_ratio.end(),
                   [&](OpId a, OpId b) { return ratio[a] < ratio[b]; });
  std::vector<uint8_t> chosen(m, 0), blocked(m, 0);
  for (OpId o : by_ratio) {
    if (blocked[o]) continue;
    chosen[o] = 1;
    for (TensorId t : g.ops[o].inputs)
      if (producer[t] >= 0) blocked[producer[t]] = 1;
    for (TensorId t : g.ops[o].outputs)
      for (OpId r : readers[t])
        blocked[r] = 1;
  }
  return chosen;
}

}  // namespace sa
