#include "plan/dtr_cost.h"

#include <algorithm>

namespace sa {

DtrCost::DtrCost(const Graph& g, std::span<const double> op_us) : op_us_(op_us) {
  const int n = g.num_tensors();
  producer_.assign(n, kNoOp);
  for (OpId o = 0; o < g.num_ops(); ++o)
    for (TensorId t : g.ops[o].outputs)
      producer_[t] = o;
  // Neighbours: the producer's inputs, and the outputs of every reader.
  std::vector<std::vector<TensorId>> nbrs(n);
  for (const Op& op : g.ops)
    for (TensorId in : op.inputs)
      for (TensorId out : op.outputs)
        if (in != out) {
          nbrs[in].push_back(out);
          nbrs[out].push_back(in);
        }
  nbr_begin_.assign(n + 1, 0);
  for (TensorId t = 0; t < n; ++t) {
    auto& v = nbrs[t];
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    nbr_begin_[t + 1] = nbr_begin_[t] + static_cast<int32_t>(v.size());
    nbr_.insert(nbr_.end(), v.begin(), v.end());
  }
  reset();
}

void DtrCost::reset() {
  node_.assign(producer_.size(), -1);
  parent_.clear();
  sum_.clear();
  seen_.clear();
  stamp_ = 0;
}

double DtrCost::own_cost(TensorId t) const {
  return producer_[t] == kNoOp ? 0.0 : op_us_[producer_[t]];
}

int32_t DtrCost::find(int32_t node) {
  int32_t root = node;
  while (parent_[root] != root)
    root = parent_[root];
  while (parent_[node] != root) {  // path compression
    const int32_t next = parent_[node];
    parent_[node] = root;
    node = next;
  }
  return root;
}

void DtrCost::evict(TensorId t) {
  if (evicted(t)) return;
  const int32_t me = static_cast<int32_t>(parent_.size());
  parent_.push_back(me);
  sum_.push_back(own_cost(t));
  seen_.push_back(-1);
  node_[t] = me;
  for (int32_t k = nbr_begin_[t]; k < nbr_begin_[t + 1]; ++k) {
    const TensorId u = nbr_[k];
    if (!evicted(u)) continue;
    const int32_t a = find(node_[t]), b = find(node_[u]);
    if (a == b) continue;
    parent_[b] = a;
    sum_[a] += sum_[b];
  }
}

void DtrCost::restore(TensorId t) {
  node_[t] = -1;  // its cost stays in its class (no splitting)
}

double DtrCost::cost(TensorId t) {
  ++stamp_;
  double c = own_cost(t);
  for (int32_t k = nbr_begin_[t]; k < nbr_begin_[t + 1]; ++k) {
    const TensorId u = nbr_[k];
    if (!evicted(u)) continue;
    const int32_t r = find(node_[u]);
    if (seen_[r] == stamp_) continue;
    seen_[r] = stamp_;
    c += sum_[r];
  }
  return c;
}

double DtrCost::score(double cost, int64_t bytes, double staleness_us) {
  constexpr double kMinStalenessUs = 1e-3;
  return cost / (static_cast<double>(std::max<int64_t>(bytes, 1)) *
                 std::max(staleness_us, kMinStalenessUs));
}

}  // namespace sa
