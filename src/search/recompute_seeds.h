#pragma once
// Recompute genes the search starts from (Note [Recompute genes] in
// search/ga.h).

#include <cstdint>
#include <span>
#include <vector>

#include "graph/graph.h"

namespace sa {

// Of the ops marked in `cheap`, a set in which no op reads what another
// makes: the relatively cheapest first (ratio: recompute time over copy
// time, per op), then every op not reading a chosen op's output and not
// making one's input. Recomputing such a set needs no recompute chains
// (a batch norm's recompute needs its convolution's output, which a chosen
// convolution's would drop).
std::vector<uint8_t> unchained_subset(const Graph& g, std::span<const uint8_t> cheap,
                                      std::span<const double> ratio);

}  // namespace sa
