#include "plan/data_parallel.h"

#include <algorithm>
#include <functional>
#include <tuple>

#include <fmt/format.h>

#include "plan/simulator.h"
#include "util/error.h"

namespace sa {
namespace {

constexpr std::string_view kAllReduce = kCollectiveTypes[0];
constexpr std::string_view kReduceScatter = kCollectiveTypes[1];
constexpr std::string_view kAllGather = kCollectiveTypes[2];

// An optimizer op updates model or optimizer state (zoo: sgd_update and
// friends; captured: the in-place aten::add_ of the update phase).
bool is_optimizer_op(const Graph& g, const Op& op) {
  return std::any_of(op.updates.begin(), op.updates.end(), [&](TensorId t) {
    const TensorKind k = g.tensors[t].kind;
    return k == TensorKind::kParam || k == TensorKind::kOptimizerState;
  });
}

// A tensor a collective takes: after `after` (the op that last writes it
// before the collective) and before `before` (the first op after that which
// touches it, or the end).
struct Item {
  TensorId tensor;
  OpId after;
  OpId before;
};

// Groups items, in order of `after`, into buckets of about `bucket_bytes`;
// a bucket closes early when the next item would move its op past an op
// that must see its result. Each bucket becomes one op of `type`, placed
// after the largest `after` of its items: (position, op).
std::vector<std::pair<OpId, Op>> make_buckets(const Graph& g, std::vector<Item> items,
                                              std::string_view type, Phase phase,
                                              const DataParallel& dp, const DeviceProfile& d) {
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return std::tie(a.after, a.tensor) < std::tie(b.after, b.tensor);
  });
  std::vector<std::pair<OpId, Op>> out;
  Op cur;
  int64_t bytes = 0;
  OpId pos = kNoOp, limit = g.num_ops();
  auto close = [&] {
    if (cur.updates.empty()) return;
    cur.type = std::string(type);
    cur.phase = phase;
    cur.recompute = false;
    cur.name = fmt::format("{} bucket {}", type.substr(4), out.size());
    const double b = static_cast<double>(bytes);
    cur.time_us = type == kAllReduce
                      ? ring_all_reduce_us(b, dp.ranks, d.collective_gbps, d.collective_latency_us)
                      : ring_half_us(b, dp.ranks, d.collective_gbps, d.collective_latency_us);
    out.push_back({pos, std::move(cur)});
    cur = Op{};
    bytes = 0;
    pos = kNoOp;
    limit = g.num_ops();
  };
  for (const Item& it : items) {
    if (std::max(pos, it.after) >= std::min(limit, it.before)) close();
    cur.updates.push_back(it.tensor);
    bytes += g.tensors[it.tensor].bytes;
    pos = std::max(pos, it.after);
    limit = std::min(limit, it.before);
    if (bytes >= dp.bucket_bytes) close();
  }
  close();
  return out;
}

// For each tensor in `wanted`, the last op in [0, n) whose access of it
// satisfies `writes`, and the first op after that one touching it.
std::vector<Item> items_of(const Graph& g, const std::vector<uint8_t>& wanted,
                           const std::function<bool(OpId, Access)>& writes) {
  std::vector<OpId> last(g.num_tensors(), kNoOp), next(g.num_tensors(), g.num_ops());
  for (OpId o = 0; o < g.num_ops(); ++o)
    for_each_access(g.ops[o], [&](TensorId t, Access a) {
      if (!wanted[t]) return;
      if (writes(o, a)) {
        last[t] = o;
        next[t] = g.num_ops();
      } else if (last[t] != kNoOp && next[t] == g.num_ops()) {
        next[t] = o;
      }
    });
  std::vector<Item> items;
  for (TensorId t = 0; t < g.num_tensors(); ++t)
    if (wanted[t] && last[t] != kNoOp) items.push_back({t, last[t], next[t]});
  return items;
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

double ring_all_reduce_us(double bytes, int ranks, double gbps, double latency_us) {
  return 2 * ring_half_us(bytes, ranks, gbps, latency_us);
}

double ring_half_us(double bytes, int ranks, double gbps, double latency_us) {
  if (ranks <= 1) return 0;
  const double n = ranks;
  // GB/s → B/us: * 1e3.
  return (n - 1) / n * bytes / (gbps * 1e3) + (n - 1) * latency_us;
}

Graph data_parallel_graph(const Graph& g, const DataParallel& dp, const DeviceProfile& d) {
  SA_CHECK(dp.ranks >= 1, "data_parallel_graph: ranks must be positive");
  if (!dp.active()) return g;
  const int n = g.num_ops();
  std::vector<uint8_t> optimizer(n, 0), grad(g.num_tensors(), 0), param(g.num_tensors(), 0);
  for (OpId o = 0; o < n; ++o) {
    const Op& op = g.ops[o];
    if (!is_optimizer_op(g, op)) continue;
    optimizer[o] = 1;
    for_each_access(op, [&](TensorId t, Access a) {
      const TensorKind k = g.tensors[t].kind;
      if (k == TensorKind::kGradient && a != Access::kCreate) grad[t] = 1;
      if (k == TensorKind::kParam && a == Access::kUpdate) param[t] = 1;
    });
  }
  // Gradients: after their last write in the backward pass, as DDP reduces
  // them when the backward pass is done. Writes of the update phase that
  // are not the optimizer's - gradient clipping's scaling - come after the
  // reduction: they work on the average, as on every rank of a DDP job
  // (before, clipping scaled each rank's own gradients, then they were
  // averaged).
  const std::vector<Item> grads = items_of(g, grad, [&](OpId o, Access a) {
    return !optimizer[o] && a != Access::kRead && g.ops[o].phase != Phase::kUpdate;
  });
  const auto reduce = make_buckets(g, grads, dp.shard_optimizer ? kReduceScatter : kAllReduce,
                                   Phase::kBackward, dp, d);
  std::vector<std::pair<OpId, Op>> gather;
  Graph out = g;
  if (dp.shard_optimizer) {
    // Params: after the last optimizer op that updates them.
    gather = make_buckets(
        g,
        items_of(g, param, [&](OpId o, Access a) { return optimizer[o] && a == Access::kUpdate; }),
        kAllGather, Phase::kUpdate, dp, d);
    for (Tensor& t : out.tensors)
      if (t.kind == TensorKind::kOptimizerState) t.bytes = ceil_div(t.bytes, dp.ranks);
    for (OpId o = 0; o < n; ++o) {
      if (!optimizer[o]) continue;
      Op& op = out.ops[o];
      if (op.time_us) *op.time_us /= dp.ranks;
      if (op.flops) *op.flops /= dp.ranks;
      if (op.bytes_accessed) *op.bytes_accessed /= dp.ranks;
    }
  }
  // Splice the buckets in after their positions, reduce buckets first.
  std::vector<std::vector<Op>> after(n);
  using Buckets = std::vector<std::pair<OpId, Op>>;
  for (const Buckets* list : {&reduce, static_cast<const Buckets*>(&gather)})
    for (const auto& [pos, op] : *list)
      after[pos].push_back(op);
  std::vector<Op> ops;
  ops.reserve(n + reduce.size() + gather.size());
  for (OpId o = 0; o < n; ++o) {
    ops.push_back(std::move(out.ops[o]));
    for (Op& c : after[o])
      ops.push_back(std::move(c));
  }
  out.ops = std::move(ops);
  out.name = fmt::format("{}-dp{}{}", g.name, dp.ranks, dp.shard_optimizer ? "-zero1" : "");
  return out;
}

DeviceProfile rank_device(const DeviceProfile& d, int ranks) {
  DeviceProfile r = d;
  const int sharing = std::max(1, std::min(ranks, d.gpus_per_host_link));
  r.h2d_gbps /= sharing;
  r.d2h_gbps /= sharing;
  r.duplex_gbps /= sharing;
  return r;
}

double exposed_collective_us(const Graph& g, const Plan& p, std::span<const double> op_us,
                             const DeviceProfile& d) {
  std::vector<double> without(op_us.begin(), op_us.end());
  bool any = false;
  for (OpId o = 0; o < g.num_ops(); ++o)
    if (is_collective(g.ops[o])) {
      without[o] = 0;
      any = true;
    }
  if (!any) return 0;
  Simulator sim;
  const SimResult with_r = sim.run(g, p, op_us, d);
  const SimResult without_r = sim.run(g, p, without, d);
  SA_CHECK(with_r.ok && without_r.ok, "a data-parallel plan does not simulate: {}{}", with_r.error,
           without_r.error);
  return std::max(0.0, with_r.iteration_us - without_r.iteration_us);
}

void add_collective_waits(const Graph& g, Plan* p) {
  if (std::none_of(g.ops.begin(), g.ops.end(), [](const Op& op) { return is_collective(op); }))
    return;
  // Per object: the last compute-stream step that touched it, and the last
  // collective step that touched it and that no compute step waited for yet.
  std::vector<StepId> last_compute(p->num_objects(), -1), pending(p->num_objects(), -1);
  std::vector<StepId> waits;
  waits.reserve(p->waits.size() + 16);
  std::vector<StepId> extra;
  for (StepId s = 0; s < p->num_steps(); ++s) {
    Step& st = p->steps[s];
    extra.clear();
    if (st.runs_op()) {
      const bool coll = stream_of(g, st) == Stream::kCollective;
      for (ObjectId o : p->objects_of_step(s)) {
        if (coll) {
          if (last_compute[o] >= 0) extra.push_back(last_compute[o]);
          pending[o] = s;
        } else {
          if (pending[o] >= 0) extra.push_back(pending[o]);
          pending[o] = -1;
          last_compute[o] = s;
        }
      }
    }
    const int32_t begin = static_cast<int32_t>(waits.size());
    for (int32_t w = st.wait_begin; w < st.wait_end; ++w)
      waits.push_back(p->waits[w]);
    std::sort(extra.begin(), extra.end());
    extra.erase(std::unique(extra.begin(), extra.end()), extra.end());
    for (StepId e : extra)
      if (std::find(waits.begin() + begin, waits.end(), e) == waits.end()) waits.push_back(e);
    st.wait_begin = begin;
    st.wait_end = static_cast<int32_t>(waits.size());
  }
  p->waits = std::move(waits);
}

}  // namespace sa
