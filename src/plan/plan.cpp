#include "plan/plan.h"

#include <algorithm>
#include <cstdlib>

#include "util/error.h"

namespace sa {

std::string_view to_string(StepKind k) {
  switch (k) {
    case StepKind::kCompute:
      return "compute";
    case StepKind::kSwapIn:
      return "swap_in";
    case StepKind::kSwapOut:
      return "swap_out";
    case StepKind::kDrop:
      return "drop";
    case StepKind::kRecompute:
      return "recompute";
  }
  return "?";
}

std::string_view to_string(Stream s) {
  switch (s) {
    case Stream::kCompute:
      return "compute";
    case Stream::kH2D:
      return "h2d";
    case Stream::kD2H:
      return "d2h";
    case Stream::kCollective:
      return "collective";
    case Stream::kNone:
      return "none";
  }
  return "?";
}

void Step::wrong_subject(StepKind k) {
  SA_CHECK(false, "a {} step's subject read as {}", to_string(k),
           k == StepKind::kCompute ? "a tensor" : "an op");
  std::abort();
}

void Occupant::wrong_kind() const {
  SA_CHECK(false, "occupant {} read as a {}", id_, is_tensor() ? "workspace" : "tensor");
  std::abort();
}

int64_t Pool::total_bytes() const {
  int64_t sum = 0;
  for (int c = 0; c < num_classes(); ++c)
    sum += class_bytes[c] * class_count[c];
  return sum;
}

int Pool::num_objects() const {
  int n = 0;
  for (int32_t k : class_count)
    n += k;
  return n;
}

ObjectId Pool::first_object(ClassId c) const {
  ObjectId first = 0;
  for (ClassId c2 = 0; c2 < c; ++c2)
    first += class_count[c2];
  return first;
}

std::vector<Block> pool_layout(const Pool& pool) {
  std::vector<Block> objects;
  objects.reserve(pool.num_objects());
  int64_t offset = 0;
  for (ClassId c = 0; c < pool.num_classes(); ++c)
    for (int k = 0; k < pool.class_count[c]; ++k) {
      objects.push_back({offset, pool.class_bytes[c], c});
      offset += pool.class_bytes[c];
    }
  return objects;
}

std::string_view to_string(Allocator a) {
  return a == Allocator::kArena ? "arena" : "size-class";
}

std::optional<Allocator> allocator_from_string(std::string_view s) {
  if (s == "arena") return Allocator::kArena;
  if (s == "size-class") return Allocator::kSizeClass;
  return std::nullopt;
}

int64_t Plan::arena_bytes() const {
  if (allocator == Allocator::kSizeClass) return pool.total_bytes();
  int64_t end = 0;
  for (const Block& b : objects)
    end = std::max(end, b.end());
  return end;
}

void Plan::clear() {
  method.clear();
  memory_budget = 0;
  host_budget = 0;
  nvme_tensors.clear();
  allocator = Allocator::kSizeClass;
  order.clear();
  pool.class_bytes.clear();
  pool.class_count.clear();
  objects.clear();
  tensor_class.clear();
  workspace_class.clear();
  steps.clear();
  waits.clear();
  access_begin.clear();
  access_objects.clear();
  initial_resident.clear();
  recompute_objects.clear();
  data_parallel = {};
}

void offsets_from_classes(Plan* p) {
  p->allocator = Allocator::kArena;
  for (Block& b : p->objects)
    b.cls = -1;
  p->pool = Pool();
  p->tensor_class.clear();
  p->workspace_class.clear();
}

PlanTraffic plan_traffic(const Graph& g, const Plan& p) {
  PlanTraffic t;
  for (const Step& s : p.steps) {
    switch (s.kind) {
      case StepKind::kSwapIn:
        t.swap_in_bytes += g.tensors[s.tensor()].bytes;
        ++t.swap_ins;
        break;
      case StepKind::kSwapOut:
        t.swap_out_bytes += g.tensors[s.tensor()].bytes;
        ++t.swap_outs;
        break;
      case StepKind::kDrop:
        ++t.drops;
        break;
      case StepKind::kRecompute:
        ++t.recomputes;
        break;
      case StepKind::kCompute:
        break;
    }
  }
  return t;
}

}  // namespace sa
