#include "plan/plan.h"

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
    case Stream::kNone:
      return "none";
  }
  return "?";
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

void Pool::finalize() {
  const int nc = num_classes();
  class_first.assign(nc + 1, 0);
  for (int c = 0; c < nc; ++c)
    class_first[c + 1] = class_first[c] + class_count[c];
  object_class.resize(class_first[nc]);
  object_offset.resize(class_first[nc]);
  int64_t offset = 0;
  for (int c = 0; c < nc; ++c) {
    for (int k = 0; k < class_count[c]; ++k) {
      object_class[class_first[c] + k] = c;
      object_offset[class_first[c] + k] = offset;
      offset += class_bytes[c];
    }
  }
}

void Plan::clear() {
  method.clear();
  memory_budget = 0;
  order.clear();
  pool.class_bytes.clear();
  pool.class_count.clear();
  pool.class_first.clear();
  pool.object_class.clear();
  pool.object_offset.clear();
  tensor_class.clear();
  workspace_class.clear();
  steps.clear();
  waits.clear();
  access_begin.clear();
  access_objects.clear();
  initial_resident.clear();
}

PlanTraffic plan_traffic(const Graph& g, const Plan& p) {
  PlanTraffic t;
  for (const Step& s : p.steps) {
    switch (s.kind) {
      case StepKind::kSwapIn:
        t.swap_in_bytes += g.tensors[s.subject].bytes;
        ++t.swap_ins;
        break;
      case StepKind::kSwapOut:
        t.swap_out_bytes += g.tensors[s.subject].bytes;
        ++t.swap_outs;
        break;
      case StepKind::kDrop:
        ++t.drops;
        break;
      case StepKind::kCompute:
        break;
    }
  }
  return t;
}

}  // namespace sa
