#include "plan/allocation.h"

#include <algorithm>
#include <climits>
#include <unordered_map>

#include <fmt/format.h>

#include "graph/stats.h"
#include "util/error.h"
#include "util/units.h"

namespace sa {
namespace {

int32_t size_index(const std::vector<int64_t>& sizes, int64_t bytes) {
  return static_cast<int32_t>(std::lower_bound(sizes.begin(), sizes.end(), bytes) - sizes.begin());
}

}  // namespace

SizeTable make_size_table(const Graph& g) {
  SizeTable t;
  for (const Tensor& x : g.tensors)
    t.sizes.push_back(x.bytes);
  for (const Op& op : g.ops)
    if (op.workspace_bytes > 0) t.sizes.push_back(op.workspace_bytes);
  std::sort(t.sizes.begin(), t.sizes.end());
  t.sizes.erase(std::unique(t.sizes.begin(), t.sizes.end()), t.sizes.end());
  t.tensor_size.resize(g.tensors.size());
  for (int x = 0; x < g.num_tensors(); ++x)
    t.tensor_size[x] = size_index(t.sizes, g.tensors[x].bytes);
  t.workspace_size.assign(g.ops.size(), -1);
  for (int o = 0; o < g.num_ops(); ++o)
    if (g.ops[o].workspace_bytes > 0)
      t.workspace_size[o] = size_index(t.sizes, g.ops[o].workspace_bytes);
  t.op_item_begin.assign(g.ops.size() + 1, 0);
  for (int o = 0; o < g.num_ops(); ++o) {
    for_each_access(g.ops[o],
                    [&](TensorId x, Access) { t.op_item_size.push_back(t.tensor_size[x]); });
    if (t.workspace_size[o] >= 0) t.op_item_size.push_back(t.workspace_size[o]);
    t.op_item_begin[o + 1] = static_cast<int32_t>(t.op_item_size.size());
  }
  return t;
}

bool is_well_formed(const SizeTable& t, const Allocation& a) {
  if (static_cast<int>(a.cls.size()) != t.num_sizes()) return false;
  if (a.cls.empty()) return a.cnt.empty();
  if (a.cls[0] != 0) return false;
  for (size_t i = 1; i < a.cls.size(); ++i)
    if (a.cls[i] != a.cls[i - 1] && a.cls[i] != a.cls[i - 1] + 1) return false;
  if (static_cast<int>(a.cnt.size()) != a.num_classes()) return false;
  for (int32_t k : a.cnt)
    if (k < 0) return false;
  return true;
}

std::vector<int64_t> class_bytes(const SizeTable& t, std::span<const ClassId> cls) {
  const int nc = cls.empty() ? 0 : cls.back() + 1;
  std::vector<int64_t> bytes(nc, 0);
  for (int i = 0; i < t.num_sizes(); ++i)
    bytes[cls[i]] = std::max(bytes[cls[i]], t.sizes[i]);
  return bytes;
}

int64_t pool_bytes(const SizeTable& t, const Allocation& a) {
  const auto bytes = class_bytes(t, a.cls);
  int64_t sum = 0;
  for (int c = 0; c < a.num_classes(); ++c)
    sum += bytes[c] * a.cnt[c];
  return sum;
}

std::vector<int32_t> min_counts(const Graph& g, const SizeTable& t, std::span<const ClassId> cls) {
  const int nc = cls.empty() ? 0 : cls.back() + 1;
  std::vector<int32_t> need(nc, 0), here(nc, 0);
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const int32_t* begin = t.op_item_size.data() + t.op_item_begin[o];
    const int32_t* end = t.op_item_size.data() + t.op_item_begin[o + 1];
    for (const int32_t* s = begin; s != end; ++s) {
      const ClassId c = cls[*s];
      need[c] = std::max(need[c], ++here[c]);
    }
    for (const int32_t* s = begin; s != end; ++s)
      here[cls[*s]] = 0;
  }
  return need;
}

std::vector<int32_t> demand_counts(const Graph& g, const SizeTable& t, std::span<const ClassId> cls,
                                   std::span<const OpId> order) {
  const int nc = cls.empty() ? 0 : cls.back() + 1;
  const int m = g.num_ops();
  std::vector<int32_t> pos(m);
  for (int i = 0; i < m; ++i)
    pos[order[i]] = i;
  // Live interval of each transient tensor: [creation, last access]; the
  // workspace of op o: [pos(o), pos(o)]. Sweep the events in position order.
  const std::vector<LiveInterval> live_at = live_intervals(g, order);
  struct Event {
    int32_t pos;
    int32_t delta;  // +1 at start, -1 after end
    ClassId cls;
  };
  std::vector<Event> events;
  std::vector<int32_t> live(nc, 0), peak(nc, 0);
  for (TensorId x = 0; x < g.num_tensors(); ++x) {
    const ClassId c = cls[t.tensor_size[x]];
    if (!is_transient(g.tensors[x].kind)) {
      ++live[c];  // live throughout
    } else if (live_at[x].accessed()) {
      events.push_back({live_at[x].first, +1, c});
      events.push_back({live_at[x].last + 1, -1, c});
    }
  }
  for (OpId o = 0; o < m; ++o)
    if (t.workspace_size[o] >= 0) {
      events.push_back({pos[o], +1, cls[t.workspace_size[o]]});
      events.push_back({pos[o] + 1, -1, cls[t.workspace_size[o]]});
    }
  // Ends before starts at the same position: an item ending at p-1 frees its
  // object before one starting at p needs it.
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.pos != b.pos ? a.pos < b.pos : a.delta < b.delta;
  });
  peak = live;
  for (const Event& e : events) {
    live[e.cls] += e.delta;
    peak[e.cls] = std::max(peak[e.cls], live[e.cls]);
  }
  return peak;
}

bool repair_counts(const SizeTable& t, std::span<const int32_t> min, int64_t budget,
                   Allocation& a) {
  const auto bytes = class_bytes(t, a.cls);
  const int nc = a.num_classes();
  int64_t floor_bytes = 0;
  for (int c = 0; c < nc; ++c) {
    a.cnt[c] = std::max(a.cnt[c], min[c]);
    floor_bytes += bytes[c] * min[c];
  }
  if (floor_bytes > budget) return false;
  auto total_at = [&](double f) {
    int64_t sum = 0;
    for (int c = 0; c < nc; ++c)
      sum += bytes[c] * (min[c] + static_cast<int64_t>((a.cnt[c] - min[c]) * f));
    return sum;
  };
  if (total_at(1.0) <= budget) return true;
  const std::vector<int32_t> desired = a.cnt;
  double lo = 0, hi = 1;  // total_at(lo) fits, total_at(hi) does not
  for (int iter = 0; iter < 50; ++iter) {
    const double mid = (lo + hi) / 2;
    (total_at(mid) <= budget ? lo : hi) = mid;
  }
  for (int c = 0; c < nc; ++c)
    a.cnt[c] = min[c] + static_cast<int32_t>((a.cnt[c] - min[c]) * lo);
  // Spend what rounding left over, largest classes first, up to the counts
  // asked for, so that no budget is wasted.
  int64_t left = budget - pool_bytes(t, a);
  for (int c = nc - 1; c >= 0 && left > 0; --c) {
    const int64_t add = std::min<int64_t>(desired[c] - a.cnt[c], left / bytes[c]);
    if (add <= 0) continue;
    a.cnt[c] += static_cast<int32_t>(add);
    left -= add * bytes[c];
  }
  SA_CHECK(pool_bytes(t, a) <= budget, "repair_counts left {} > budget {}", pool_bytes(t, a),
           budget);
  return true;
}

std::vector<ClassId> min_pool_classes(const Graph& g, const SizeTable& t) {
  const int num_sizes = t.num_sizes();
  const int m = g.num_ops();
  // For every size, the ops touching an item of that size (once per item).
  std::vector<std::vector<OpId>> ops_of_size(num_sizes);
  for (OpId o = 0; o < m; ++o) {
    for_each_access(g.ops[o],
                    [&](TensorId x, Access) { ops_of_size[t.tensor_size[x]].push_back(o); });
    if (t.workspace_size[o] >= 0) ops_of_size[t.workspace_size[o]].push_back(o);
  }
  // best[j]: the smallest minimum pool of sizes [0, j); cut[j]: where the last
  // class of that solution starts. A class of sizes i..j costs sizes[j] times
  // the most items of those sizes that one op touches.
  constexpr int64_t kInf = INT64_MAX / 4;
  std::vector<int64_t> best(num_sizes + 1, kInf);
  std::vector<int32_t> cut(num_sizes + 1, 0);
  best[0] = 0;
  std::vector<int32_t> per_op(m, 0);
  for (int i = 0; i < num_sizes; ++i) {
    std::fill(per_op.begin(), per_op.end(), 0);
    int32_t most = 0;
    for (int j = i; j < num_sizes; ++j) {
      for (OpId o : ops_of_size[j])
        most = std::max(most, ++per_op[o]);
      const int64_t cost = best[i] + t.sizes[j] * most;
      if (cost < best[j + 1]) {
        best[j + 1] = cost;
        cut[j + 1] = i;
      }
    }
  }
  std::vector<int32_t> starts;
  for (int j = num_sizes; j > 0; j = cut[j])
    starts.push_back(cut[j]);
  std::reverse(starts.begin(), starts.end());
  std::vector<ClassId> cls(num_sizes);
  for (size_t c = 0; c < starts.size(); ++c) {
    const int end = c + 1 < starts.size() ? starts[c + 1] : num_sizes;
    for (int i = starts[c]; i < end; ++i)
      cls[i] = static_cast<ClassId>(c);
  }
  return cls;
}

bool default_allocation(const Graph& g, const SizeTable& t, std::span<const OpId> order,
                        int64_t budget, Allocation* out, std::string* why) {
  Allocation a;
  a.cls.resize(t.num_sizes());
  for (int i = 0; i < t.num_sizes(); ++i)
    a.cls[i] = i;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (attempt == 1) a.cls = min_pool_classes(g, t);
    a.cnt = demand_counts(g, t, a.cls, order);
    const auto min = min_counts(g, t, a.cls);
    if (repair_counts(t, min, budget, a)) {
      *out = std::move(a);
      return true;
    }
  }
  if (why) *why = explain_min_pool(g, t, a.cls);
  return false;
}

std::string explain_min_pool(const Graph& g, const SizeTable& t, std::span<const ClassId> cls) {
  OpId hungriest = kNoOp;
  const int64_t need = min_budget(g, &hungriest);
  const auto min = min_counts(g, t, cls);
  const auto bytes = class_bytes(t, cls);
  int64_t floor_bytes = 0;
  for (size_t c = 0; c < min.size(); ++c)
    floor_bytes += bytes[c] * min[c];
  std::string s = fmt::format(
      "the pool needs at least {} ({} B) so that every op can hold what it "
      "touches at once",
      format_bytes(floor_bytes), floor_bytes);
  if (hungriest != kNoOp)
    s += fmt::format("; {} alone touches {} ({} B)", describe_op(g, hungriest), format_bytes(need),
                     need);
  return s;
}

int64_t min_budget(const Graph& g, OpId* hungriest) {
  int64_t best = 0;
  OpId arg = kNoOp;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    int64_t sum = g.ops[o].workspace_bytes;
    for_each_access(g.ops[o], [&](TensorId x, Access) { sum += g.tensors[x].bytes; });
    if (sum > best) {
      best = sum;
      arg = o;
    }
  }
  if (hungriest) *hungriest = arg;
  return best;
}

}  // namespace sa
