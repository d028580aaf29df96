#include "runtime/kernel_table.h"

namespace sa::runtime {

using synthetic::KernelAccess;
using synthetic::Role;

SlotLayout make_slot_layout(const Graph& g) {
  SlotLayout l;
  l.slot_begin.resize(g.num_ops() + 1, 0);
  for (OpId o = 0; o < g.num_ops(); ++o)
    l.slot_begin[o + 1] =
        l.slot_begin[o] + static_cast<int32_t>(g.ops[o].outputs.size() + g.ops[o].updates.size());
  return l;
}

KernelTable make_kernel_table(const Graph& g, const SlotLayout& slots, const Plan* p) {
  KernelTable t;
  t.op_begin.reserve(g.num_ops() + 1);
  t.op_begin.push_back(0);
  t.num_slots = slots.num_slots();
  // The ops' kernels, then the recompute steps' (their ops again, with the
  // steps' objects).
  std::vector<std::pair<OpId, StepId>> kernels;
  for (OpId o = 0; o < g.num_ops(); ++o)
    kernels.push_back({o, -1});
  if (p)
    for (StepId s = 0; s < p->num_steps(); ++s)
      if (p->steps[s].kind == StepKind::kRecompute) kernels.push_back({p->steps[s].op(), s});
  for (const auto& kernel : kernels) {
    const OpId o = kernel.first;  // (named: lambdas cannot capture structured bindings in clang 14)
    const StepId s = kernel.second;
    const Op& op = g.ops[o];
    t.kernel_op.push_back(o);
    t.collective.push_back(!is_collective(op)                ? synthetic::Collective::kNone
                           : op.type == "sa::all_gather"     ? synthetic::Collective::kGather
                           : op.type == "sa::reduce_scatter" ? synthetic::Collective::kScatter
                                                             : synthetic::Collective::kSum);
    int k = 0;  // position in for_each_access order (and in access_objects)
    auto offset = [&]() -> int64_t {
      if (!p) return 0;
      return p->objects[s < 0 ? p->objects_of(o)[k] : p->objects_of_step(s)[k]].offset;
    };
    auto add = [&](TensorId x, Role role, int32_t index, int32_t slot, int32_t update_index) {
      KernelAccess a;
      a.offset = offset();
      a.bytes = g.tensors[x].bytes;
      a.role = role;
      a.index = index;
      a.slot = slot;
      a.update_index = update_index;
      a.tensor = x;
      t.accesses.push_back(a);
      ++k;
    };
    const int32_t s0 = slots.slot_begin[o];
    const int32_t num_out = static_cast<int32_t>(op.outputs.size());
    const int32_t num_in = static_cast<int32_t>(op.inputs.size());
    for (int32_t j = 0; j < num_out; ++j)
      add(op.outputs[j], Role::kOutput, j, s0 + j, 0);
    for (int32_t r = 0; r < num_in; ++r)
      add(op.inputs[r], Role::kInput, r, -1, 0);
    // Note [Recompute without updates]: such an op's updates do not feed its
    // outputs, and its recompute steps have none.
    const Role update_role = op.recompute_skips_updates ? Role::kStateUpdate : Role::kUpdate;
    if (step_touches_updates(op, s >= 0))
      for (int32_t u = 0; u < static_cast<int32_t>(op.updates.size()); ++u)
        add(op.updates[u], update_role, num_in + u, s0 + num_out + u, u);
    if (op.workspace_bytes > 0) {
      KernelAccess a;
      a.offset = offset();
      a.bytes = op.workspace_bytes;
      a.role = Role::kWorkspace;
      t.accesses.push_back(a);
    }
    t.op_begin.push_back(static_cast<int32_t>(t.accesses.size()));
  }
  return t;
}

}  // namespace sa::runtime
