#pragma once
// The synthetic kernels of a graph as plain data: for every op, its accesses
// (role, index, checksum slot, bytes) and, for a plan, where each one sits in
// the device arena.
//
// Checksum slots: op o's outputs then its updates get the slots
// slot_begin[o], slot_begin[o] + 1, ...; a run and the reference number them
// alike, so their checksums can be compared slot by slot.

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "plan/plan.h"
#include "runtime/backend.h"

namespace sa::runtime {

struct SlotLayout {
  std::vector<int32_t> slot_begin;  // per op, size num_ops + 1
  int num_slots() const { return slot_begin.empty() ? 0 : slot_begin.back(); }
};
SlotLayout make_slot_layout(const Graph& g);

// The accesses of every op (kernel o), then, with a plan, of every recompute
// step in step order (kernels num_ops, num_ops + 1, ...). With a plan,
// offsets are the arena offsets of the objects the plan gives each access
// (Note [Plan semantics]); without one, they are 0 (the reference addresses
// tensors by id).
// REQUIRES: p, if given, passed read_plan's structural checks.
KernelTable make_kernel_table(const Graph& g, const SlotLayout& slots, const Plan* p);

}  // namespace sa::runtime
