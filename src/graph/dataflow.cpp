#include "graph/dataflow.h"

#include <algorithm>

#include <fmt/format.h>

namespace sa {
namespace {

// Fills CSR (begin, items) from per-row vectors.
void to_csr(const std::vector<std::vector<int32_t>>& rows, std::vector<int32_t>& begin,
            std::vector<int32_t>& items) {
  begin.assign(rows.size() + 1, 0);
  for (size_t i = 0; i < rows.size(); ++i)
    begin[i + 1] = begin[i] + static_cast<int32_t>(rows[i].size());
  items.clear();
  items.reserve(begin.back());
  for (const auto& r : rows)
    items.insert(items.end(), r.begin(), r.end());
}

}  // namespace

Dataflow::Dataflow(const Graph& g) {
  const int n = g.num_tensors();
  const int m = g.num_ops();
  creator_.assign(n, kNoOp);

  // Uses per tensor, in file order: a counting pass, then a filling pass.
  use_begin_.assign(n + 1, 0);
  for (const Op& op : g.ops)
    for_each_access(op, [&](TensorId t, Access) { ++use_begin_[t + 1]; });
  for (int t = 0; t < n; ++t)
    use_begin_[t + 1] += use_begin_[t];
  uses_.resize(use_begin_[n]);
  std::vector<int32_t> fill(use_begin_.begin(), use_begin_.end() - 1);
  for (OpId o = 0; o < m; ++o) {
    for_each_access(g.ops[o], [&](TensorId t, Access a) {
      uses_[fill[t]++] = {o, a};
      if (a == Access::kCreate) creator_[t] = o;
    });
  }

  // Edges. Per tensor: the last writer (creator or updater) and the readers
  // since it. A read depends on the last writer; an update on the last writer
  // and on every reader since.
  std::vector<std::vector<int32_t>> preds(m);
  for (TensorId t = 0; t < n; ++t) {
    OpId writer = kNoOp;
    std::vector<OpId> readers;
    for (const TensorUse& u : uses(t)) {
      switch (u.access) {
        case Access::kCreate:
          writer = u.op;
          break;
        case Access::kRead:
          if (writer != kNoOp) preds[u.op].push_back(writer);
          readers.push_back(u.op);
          break;
        case Access::kUpdate:
          if (writer != kNoOp) preds[u.op].push_back(writer);
          for (OpId r : readers)
            preds[u.op].push_back(r);
          readers.clear();
          writer = u.op;
          break;
      }
    }
  }
  std::vector<std::vector<int32_t>> succs(m);
  for (OpId o = 0; o < m; ++o) {
    auto& p = preds[o];
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    for (OpId q : p)
      succs[q].push_back(o);
  }
  to_csr(preds, pred_begin_, preds_);
  to_csr(succs, succ_begin_, succs_);
}

bool is_topological(const Dataflow& df, std::span<const OpId> order, std::string* why) {
  const int m = df.num_ops();
  auto fail = [&](std::string msg) {
    if (why) *why = std::move(msg);
    return false;
  };
  if (static_cast<int>(order.size()) != m)
    return fail(fmt::format("the order has {} ops, the graph {}", order.size(), m));
  std::vector<int32_t> pos(m, -1);
  for (int i = 0; i < m; ++i) {
    const OpId o = order[i];
    if (o < 0 || o >= m) return fail(fmt::format("position {}: unknown op {}", i, o));
    if (pos[o] != -1)
      return fail(fmt::format("op {} appears twice (positions {} and {})", o, pos[o], i));
    pos[o] = i;
  }
  for (OpId o = 0; o < m; ++o)
    for (OpId p : df.preds(o))
      if (pos[p] > pos[o])
        return fail(
            fmt::format("op {} at position {} runs before op {} at position {}, which it "
                        "depends on",
                        o, pos[o], p, pos[p]));
  return true;
}

std::vector<OpId> program_order(int num_ops) {
  std::vector<OpId> order(num_ops);
  for (int i = 0; i < num_ops; ++i)
    order[i] = i;
  return order;
}

}  // namespace sa
