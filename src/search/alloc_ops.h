#pragma once
// Genetic operators on the allocation chromosome (CLS, CNT) of
// plan/allocation.h (paper-notes.md, "Genetic algorithm").
//
// CLS is handled as its boundary bits: bit i (i >= 1) is cls[i] - cls[i-1],
// 1 when size i starts a new class. Every bit vector is a monotone CLS, so
//   - CLS crossover at cut k takes bits [1, k) from one parent and [k, n)
//     from the other: the smallest repair of "parent 1's prefix, parent 2's
//     suffix" that keeps parent 2's class boundaries;
//   - CLS mutation flips each bit with probability p: entry i's class goes
//     up or down by one and all later entries shift with it (a class is
//     split at i, or merged with the one before).
// CNT is carried over a CLS change through its per-size expansion: size i
// gets the count of its class, e[i] = cnt[cls[i]]; a class of the new CLS
// gets the rounded mean of its sizes' entries. CNT crossover crosses the
// parents' expansions at a cut point and maps each child back onto its CLS;
// CNT mutation adds Gaussian noise to each count with probability p.
//
// Every operator ends with repair(): counts raised to the minimum every op
// needs, scaled down by one common factor if the pool is over budget
// (repair_counts), then, where budget is left, raised towards the most
// objects each class could use (its cap) by one common fraction of the gap.
// A child for which even the minimum counts do not fit is rejected (the
// operators return false) and the caller keeps a parent's allocation.

#include <cstdint>
#include <span>
#include <vector>

#include "graph/graph.h"
#include "plan/allocation.h"
#include "search/rng.h"

namespace sa {

class AllocOps {
 public:
  // size_cap[i]: the most objects of size i that could ever be used at once
  // (e.g. demand_counts with one class per size); a class's cap is the sum
  // over its sizes. g and t must outlive the AllocOps.
  AllocOps(const Graph& g, const SizeTable& t, int64_t budget, std::vector<int32_t> size_cap);

  int64_t budget() const { return budget_; }

  // Per-size expansion of a's counts.
  void expand(const Allocation& a, std::vector<double>* per_size) const;
  // Counts for cls from a per-size expansion: the rounded mean per class.
  void contract(std::span<const double> per_size, std::span<const ClassId> cls,
                std::vector<int32_t>* cnt) const;

  // CLS crossover at cut in [1, num_sizes]: c1 = a's boundaries before cut,
  // b's from cut on; c2 mirrored.
  void cls_crossover(std::span<const ClassId> a, std::span<const ClassId> b, int cut,
                     std::vector<ClassId>* c1, std::vector<ClassId>* c2) const;
  // Flips each class boundary with probability p. Returns whether any flipped.
  bool cls_mutate(std::vector<ClassId>& cls, double p, Rng& rng) const;

  // The two allocation children of a and b: CLS crossed at cls_cut, CNT
  // expansions crossed at cnt_cut, each mapped back and repaired. A child
  // whose repair fails is a copy of its first parent (a for c1, b for c2).
  void crossover(const Allocation& a, const Allocation& b, int cls_cut, int cnt_cut, Allocation* c1,
                 Allocation* c2);

  // CLS mutation (probability p per boundary) then CNT mutation (each count,
  // with probability p, drawn from a normal around it with standard
  // deviation max(1, sigma * count)), then repair. Leaves a unchanged and
  // returns false when the result cannot be repaired.
  bool mutate(Allocation& a, double p, double sigma, Rng& rng);

  // Moves a random share of one class's bytes above its minimum to another
  // class, within its cap (the rest of the budget stays where it is). False
  // if no move.
  bool move_budget(Allocation& a, Rng& rng);

  // Gives the classes below k (the smallest objects) all the objects they
  // could use and the others their minimum, then repairs: cheap classes
  // never swap, the rest share what is left. False if it cannot be repaired.
  bool favour_small(Allocation& a, int k);

  // See the header comment. False when the minimum counts exceed the budget.
  bool repair(Allocation& a);

  // Every allocation a search may evaluate satisfies this: well formed, at
  // least the minimum counts, within budget and (after repair) within caps.
  bool is_valid(const Allocation& a) const;

 private:
  void caps(std::span<const ClassId> cls, std::span<const int32_t> min);  // into cap_

  const Graph& g_;
  const SizeTable& t_;
  int64_t budget_;
  std::vector<int32_t> size_cap_;
  // Scratch.
  std::vector<double> e1_, e2_, x1_, x2_;
  std::vector<int64_t> bytes_;
  std::vector<int32_t> cap_;
};

}  // namespace sa
