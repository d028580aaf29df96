#pragma once
// The dependency DAG of a graph, derived from its accesses in file order
// (docs/graph-format.md, "Order and dependencies"):
//   - a tensor's creator comes before every access to it;
//   - an update comes after every earlier access and before every later one;
//   - reads between two updates are unordered among themselves.
// Every edge points from an earlier op in the file to a later one, so the file
// order is always a topological order. Stored as CSR arrays indexed by OpId.

#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace sa {

struct TensorUse {
  OpId op;
  Access access;
};

class Dataflow {
 public:
  // REQUIRES: validate_graph(g) passed.
  explicit Dataflow(const Graph& g);

  int num_ops() const { return static_cast<int>(pred_begin_.size()) - 1; }
  int num_edges() const { return static_cast<int>(preds_.size()); }
  std::span<const OpId> preds(OpId o) const {
    return {preds_.data() + pred_begin_[o], preds_.data() + pred_begin_[o + 1]};
  }
  std::span<const OpId> succs(OpId o) const {
    return {succs_.data() + succ_begin_[o], succs_.data() + succ_begin_[o + 1]};
  }
  // Every access to tensor t, in file order (its creation first, if any).
  std::span<const TensorUse> uses(TensorId t) const {
    return {uses_.data() + use_begin_[t], uses_.data() + use_begin_[t + 1]};
  }
  // The op that creates t, or kNoOp for tensors that exist at the start.
  OpId creator(TensorId t) const { return creator_[t]; }

 private:
  std::vector<int32_t> pred_begin_, succ_begin_, use_begin_;
  std::vector<OpId> preds_, succs_;
  std::vector<TensorUse> uses_;
  std::vector<OpId> creator_;
};

// True when order is a permutation of the ops that respects every edge; else
// false with the reason in *why (if given).
bool is_topological(const Dataflow& df, std::span<const OpId> order, std::string* why = nullptr);

// 0, 1, ..., n-1: the program (file) order.
std::vector<OpId> program_order(int num_ops);

}  // namespace sa
