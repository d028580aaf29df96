#pragma once
// Operator schedules for the search: topological orders of the dependency DAG
// and the genetic operators on them (paper-notes.md, "Genetic algorithm").
//
// All operators take and return permutations of the ops that respect every
// edge of the Dataflow; each runs in O(ops + edges) with buffers kept in the
// Scheduler, so give every thread its own Scheduler.
//
// Crossover at cut point k (k ops taken from the first parent of each child):
//
//   p1:     a b c d e f          child 1 = p2[0, k) + the rest in p1's order
//   p2:     a c b e d f          child 2 = p1[0, k) + the rest in p2's order
//   k = 3:  child 1 = a c b | d e f,   child 2 = a b c | e d f
//
// A prefix of a topological order is closed under predecessors, so both
// children are topological.
//
// Ready-set mutation: rerun a list scheduler over the parent. At each step,
// with probability p it takes a uniformly random ready op, else the ready op
// that came earliest in the parent. The earliest unscheduled op of the parent
// is always ready (its predecessors precede it in the parent), so that choice
// is a pointer walk. A random pick can only move an op earlier; the reverse
// variant schedules from the end (successors for predecessors, the parent read
// backwards), so its random picks move ops later: e.g. an op that needs only
// a persistent tensor can drift towards its consumer.

#include <cstdint>
#include <span>
#include <vector>

#include "graph/dataflow.h"
#include "search/rng.h"

namespace sa {

class Scheduler {
 public:
  // df must outlive the Scheduler.
  explicit Scheduler(const Dataflow& df);

  int num_ops() const { return df_.num_ops(); }

  // A uniformly random choice among the ready ops at every step.
  void random_order(Rng& rng, std::vector<OpId>* out);

  // The two children of crossing p1 and p2 at cut in [0, num_ops]:
  // c1 = p2[0, cut) then the rest in p1's order; c2 mirrored.
  void crossover(std::span<const OpId> p1, std::span<const OpId> p2, int cut, std::vector<OpId>* c1,
                 std::vector<OpId>* c2);

  // The ready-set mutation of parent with random-pick probability p; with
  // reverse, scheduled from the end.
  void mutate(std::span<const OpId> parent, double p, bool reverse, Rng& rng,
              std::vector<OpId>* out);

  // The list schedule that always takes the ready op of smallest key (ties:
  // smallest OpId). O((ops + edges) log ops).
  void priority_order(std::span<const double> key, std::vector<OpId>* out);

 private:
  // Ready-set bookkeeping shared by the schedulers.
  void reset_ready(bool reverse);
  void take(OpId o, bool reverse);  // schedules o: removes it, releases its successors

  const Dataflow& df_;
  std::vector<int32_t> missing_;    // per op: unscheduled predecessors
  std::vector<int32_t> ready_pos_;  // per op: index in ready_, -1 if not there
  std::vector<OpId> ready_;
  std::vector<uint8_t> done_;
};

// Training graphs list the optimizer's update ops after the whole backward
// pass. This order moves each connected group of update-phase ops (those of
// one parameter) right after the last op outside the group that it depends
// on, so that gradients are consumed, and parameters updated, as soon as
// possible; otherwise it keeps the program order. Equal to the program order
// when the graph has no update-phase ops.
std::vector<OpId> eager_update_order(const Graph& g, const Dataflow& df);

}  // namespace sa
