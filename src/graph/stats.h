#pragma once
// The derived quantities of docs/graph-format.md, computed the one way every
// tool agrees on.

#include <cstdint>
#include <span>

#include "graph/graph.h"

namespace sa {

// Sum of bytes over param, buffer, optimizer_state and input tensors.
int64_t persistent_bytes(const Graph& g);

// Live bytes at every position of order: persistent bytes + every transient
// tensor created at or before the position and last accessed at or after it
// + the op's workspace. REQUIRES: order is a permutation of the ops.
std::vector<int64_t> live_bytes_profile(const Graph& g, std::span<const OpId> order);

// Max of live_bytes_profile; in file order when order is empty.
int64_t peak_live_bytes(const Graph& g, std::span<const OpId> order = {});

// Number of distinct tensor sizes.
int distinct_sizes(const Graph& g);

// Sum of op flops (ops without flops count 0).
double total_flops(const Graph& g);

struct GraphStats {
  int ops = 0;
  int tensors = 0;
  int64_t persistent_bytes = 0;
  int64_t peak_live_bytes = 0;
  int distinct_sizes = 0;
  double flops = 0;
};
GraphStats compute_stats(const Graph& g);

}  // namespace sa
