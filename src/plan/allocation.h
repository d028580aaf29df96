#pragma once
// The memory-allocation decision: a size-class pool (paper-notes.md, "Memory
// allocation"). The pool holds the graph's tensors and the ops' workspaces,
// together called items here.
//
//   sizes (TS):   the sorted distinct sizes of all items
//   cls[i]:       the class of sizes[i]; monotone: cls[0] = 0 and
//                 cls[i] is cls[i-1] or cls[i-1] + 1
//   cnt[c]:       number of objects of class c, each of the class's largest size
//   constraint:   sum_c cnt[c] * objsize(c) <= memory budget
//
//   sizes:  64  256  1K  4K  1M  4M
//   cls:     0    0   1   1   2   3      → classes {≤256 B, ≤4 KiB, 1 MiB, 4 MiB}

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "plan/plan.h"

namespace sa {

struct SizeTable {
  std::vector<int64_t> sizes;           // ascending, distinct (TS)
  std::vector<int32_t> tensor_size;     // per tensor: index into sizes
  std::vector<int32_t> workspace_size;  // per op: index into sizes, -1 without workspace
  // Per op, the size index of every item it touches (accesses, workspace):
  // op o's are op_item_size[op_item_begin[o], op_item_begin[o + 1]).
  std::vector<int32_t> op_item_begin, op_item_size;
  int num_sizes() const { return static_cast<int>(sizes.size()); }
};
SizeTable make_size_table(const Graph& g);

struct Allocation {
  std::vector<ClassId> cls;  // per size index
  std::vector<int32_t> cnt;  // per class
  int num_classes() const { return cls.empty() ? 0 : cls.back() + 1; }
};

// True when cls is monotone as above and cnt has one entry per class.
bool is_well_formed(const SizeTable& t, const Allocation& a);

// Object size of each class: the largest size mapped to it.
std::vector<int64_t> class_bytes(const SizeTable& t, std::span<const ClassId> cls);
int64_t pool_bytes(const SizeTable& t, const Allocation& a);

// The fewest objects of each class with which every op can hold all the items
// it touches at once (its inputs, outputs, updates and workspace).
std::vector<int32_t> min_counts(const Graph& g, const SizeTable& t, std::span<const ClassId> cls);

// The most objects of each class that could ever be useful: how many items of
// the class are live at once at the worst point of order when nothing is
// swapped (persistent tensors and inputs count as live throughout).
std::vector<int32_t> demand_counts(const Graph& g, const SizeTable& t, std::span<const ClassId> cls,
                                   std::span<const OpId> order);

// Makes a.cnt feasible for the budget: raises every count to its minimum, then,
// if the pool is over budget, shrinks the counts above their minimum by one
// common factor (the largest that fits). Returns false when even the minimum
// counts exceed the budget.
bool repair_counts(const SizeTable& t, std::span<const int32_t> min, int64_t budget, Allocation& a);

// The monotone CLS whose minimum pool (sum over classes of object size x
// min_counts) is smallest, by dynamic programming over the sorted sizes: a
// class merges neighbouring sizes when ops need them at different times.
std::vector<ClassId> min_pool_classes(const Graph& g, const SizeTable& t);

// The start point of the search and the allocation of the baselines: one
// class per distinct size when its minimum pool fits the budget, else the
// classes of min_pool_classes(); the counts are the demand scaled down (as
// repair_counts does) to fit the budget. Returns false with *why when even
// the smallest minimum pool does not fit.
bool default_allocation(const Graph& g, const SizeTable& t, std::span<const OpId> order,
                        int64_t budget, Allocation* out, std::string* why);

// Human-readable "op 17 (aten::mm) needs 3 objects of class 2 (4.0 MiB) at once"
// for the op that forces the largest minimum pool; used in error messages.
std::string explain_min_pool(const Graph& g, const SizeTable& t, std::span<const ClassId> cls);

// The smallest budget any plan needs: the bytes the hungriest op touches at
// once when every item has a class of its own size.
int64_t min_budget(const Graph& g, OpId* hungriest = nullptr);

}  // namespace sa
