#include "graph/stats.h"

#include <algorithm>
#include <vector>

#include "graph/dataflow.h"
#include "util/error.h"

namespace sa {

int64_t persistent_bytes(const Graph& g) {
  int64_t sum = 0;
  for (const Tensor& t : g.tensors)
    if (exists_at_start(t.kind)) sum += t.bytes;
  return sum;
}

std::vector<LiveInterval> live_intervals(const Graph& g, std::span<const OpId> order) {
  const int m = g.num_ops();
  SA_CHECK(static_cast<int>(order.size()) == m, "order has {} ops, graph {}", order.size(), m);
  std::vector<LiveInterval> live(g.num_tensors());
  for (int i = 0; i < m; ++i)
    for_each_access(g.ops[order[i]], [&](TensorId t, Access) {
      if (live[t].first < 0) live[t].first = i;
      live[t].last = i;
    });
  return live;
}

std::vector<int64_t> live_bytes_profile(const Graph& g, std::span<const OpId> order) {
  const int m = g.num_ops();
  // Each transient's interval, added to a difference array.
  const std::vector<LiveInterval> interval = live_intervals(g, order);
  std::vector<int64_t> diff(m + 1, 0);
  for (TensorId t = 0; t < g.num_tensors(); ++t) {
    if (!is_transient(g.tensors[t].kind) || !interval[t].accessed()) continue;
    diff[interval[t].first] += g.tensors[t].bytes;
    diff[interval[t].last + 1] -= g.tensors[t].bytes;
  }
  const int64_t base = persistent_bytes(g);
  std::vector<int64_t> live(m);
  int64_t running = 0;
  for (int i = 0; i < m; ++i) {
    running += diff[i];
    live[i] = base + running + g.ops[order[i]].workspace_bytes;
  }
  return live;
}

int64_t peak_live_bytes(const Graph& g, std::span<const OpId> order) {
  std::vector<OpId> file;
  if (order.empty()) {
    file = program_order(g.num_ops());
    order = file;
  }
  const auto live = live_bytes_profile(g, order);
  return live.empty() ? persistent_bytes(g) : *std::max_element(live.begin(), live.end());
}

int distinct_sizes(const Graph& g) {
  std::vector<int64_t> sizes;
  sizes.reserve(g.tensors.size());
  for (const Tensor& t : g.tensors)
    sizes.push_back(t.bytes);
  std::sort(sizes.begin(), sizes.end());
  return static_cast<int>(std::unique(sizes.begin(), sizes.end()) - sizes.begin());
}

double total_flops(const Graph& g) {
  double sum = 0;
  for (const Op& op : g.ops)
    sum += op.flops.value_or(0.0);
  return sum;
}

GraphStats compute_stats(const Graph& g) {
  GraphStats s;
  s.ops = g.num_ops();
  s.tensors = g.num_tensors();
  s.persistent_bytes = persistent_bytes(g);
  s.peak_live_bytes = peak_live_bytes(g);
  s.distinct_sizes = distinct_sizes(g);
  s.flops = total_flops(g);
  return s;
}

}  // namespace sa
