#pragma once
// The derived quantities of docs/graph-format.md, computed the one way every
// tool agrees on.

#include <cstdint>
#include <span>
#include <vector>

#include "graph/graph.h"

namespace sa {

// Sum of bytes over param, buffer, optimizer_state and input tensors.
int64_t persistent_bytes(const Graph& g);

// Where a tensor is accessed in an order: the positions (indices into the
// order) of the first and the last op that touches it (creates, reads or
// updates it); both -1 when no op does. A transient lives from first (its
// creation) to last (its last use).
struct LiveInterval {
  int32_t first = -1;
  int32_t last = -1;
  bool accessed() const { return first >= 0; }
};

// Every tensor's interval in order, indexed by TensorId. REQUIRES: order is
// a permutation of the ops.
std::vector<LiveInterval> live_intervals(const Graph& g, std::span<const OpId> order);

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
