#pragma once
// The cost side of the DTR eviction heuristic (EvictionPolicy::kDtr in
// plan/swap_planner.h), for the dtr baseline (baselines/dtr.h).
//
// Note [DTR heuristic]
// --------------------
// Dynamic Tensor Rematerialization (Kirisame et al., ICLR 2021) evicts, when
// memory is short, the resident tensor with the smallest
//     h(t) = cost(t) / (bytes(t) x staleness(t))
// where staleness is the op time since t's last access and cost is what
// dropping t may cost later: the time of t's producer plus that of e*(t),
// its evicted neighbourhood (the evicted tensors that must be made again to
// make t, or that need t to be made again). Like the paper's h_DTR^eq we
// approximate e*(t) with union-find: a dropped tensor joins the classes of
// its evicted neighbours (its producer's inputs and its readers' outputs),
// each class summing its members' producer times, and cost(t) adds the
// classes of t's evicted neighbours, each once. Union-find does not split: a
// tensor made again leaves its class's cost behind (an overestimate the
// paper accepts for its speed), and one dropped again starts a new member.
//
//   a -> b -> c      b and c dropped (one class: f_b + f_c); cost(a) is
//                    f_a + (f_b + f_c), cost of a resident d with no evicted
//                    neighbour is f_d.

#include <cstdint>
#include <span>
#include <vector>

#include "graph/graph.h"

namespace sa {

class DtrCost {
 public:
  // op_us: each op's time; both must outlive this.
  DtrCost(const Graph& g, std::span<const double> op_us);

  void reset();                       // nothing evicted
  void evict(TensorId t);             // t was dropped, to be made again
  void restore(TensorId t);           // t was made again
  double cost(TensorId t);            // its producer's time plus its evicted neighbourhood's
  double own_cost(TensorId t) const;  // its producer's time alone: cost(t) >= own_cost(t)
  bool evicted(TensorId t) const { return node_[t] >= 0; }

  // h: the smaller, the better a victim. Staleness is floored at a tiny
  // time so that a tensor used by the op that just ran scores high, not NaN.
  static double score(double cost, int64_t bytes, double staleness_us);

 private:
  int32_t find(int32_t node);

  std::span<const double> op_us_;
  std::vector<OpId> producer_;
  std::vector<int32_t> nbr_begin_;  // per tensor: its neighbours nbr_[nbr_begin_[t]..[t+1])
  std::vector<TensorId> nbr_;
  std::vector<int32_t> node_;  // per tensor: its union-find node while evicted, else -1
  std::vector<int32_t> parent_;
  std::vector<double> sum_;    // per root: the class's cost
  std::vector<int32_t> seen_;  // cost(): the roots counted, by stamp
  int32_t stamp_ = 0;
};

}  // namespace sa
