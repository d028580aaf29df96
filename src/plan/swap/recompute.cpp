// Recomputation (Note [Recomputation] in plan/swap_planner.h): dropping a
// tensor instead of swapping it out, and running its op again when needed.

#include "plan/swap/pass.h"

namespace sa {
using namespace swap_plan;  // this folder's types (pass.h)

// Note [Recomputation]: whether v, evicted now, may be dropped and made
// again by its producer before its next use, instead of copied out and in:
// the search's genes allow it for v's producer (PlannerOptions::recompute),
// which may run again (may_recompute), and v's next use comes no later than
// the producer's inputs, and those of the updates of its outputs replayed
// after it (Note [Update replay]), still hold what they read
// (recompute_until_).
bool SwapPlanner::Pass::may_drop_to_recompute(ItemId v) const {
  if (!opt_.recompute || v >= n_) return false;
  const int32_t until = drop_until_[v];  // the static part, per plan (bind_ops)
  return until >= 0 && needed_later(v) && uses_[use_begin_[v] + cursor_[v]] <= until;
}

// Note [Recomputation]: a recompute step, before the op at position i, that
// makes v (dropped) and its siblings again, followed by a replay of each
// update of them that ran before i (Note [Update replay]). Their inputs are
// brought back first (swapped in, or recomputed in turn); siblings on the
// device are dropped (the step makes them again); outputs nobody needs any
// more only pass through their objects. Returns the last step.
StepId SwapPlanner::Pass::recompute(TensorId v, int i) {
  const OpId p = producer_[v];
  const Op& op = g_.ops[p];
  std::vector<OpId> replays;
  for (OpId u : replays_[p]) {
    if (pos_of_[u] >= i) break;
    bool needed = false;  // an update of what only passes through is moot
    for (TensorId t : g_.ops[u].updates)
      needed = needed || needed_later(t) || t == v;  // v: read by the recompute that needs it
    if (needed) replays.push_back(u);
  }
  for (TensorId x : op.inputs)
    pinned_[x] = handled_[x] = i;  // walls until op i has run
  for (TensorId t : op.outputs)
    pinned_[t] = handled_[t] = i;
  for (OpId u : replays)
    for (TensorId x : g_.ops[u].inputs)
      pinned_[x] = handled_[x] = i;
  std::vector<StepId> waits;  // for the inputs made again
  auto bring_inputs = [&](const Op& o) {
    for (TensorId x : o.inputs) {
      if (obj_of_[x] != kNoObject) continue;
      // Note [Recompute through dead inputs]: a transient past its last use
      // is made again too.
      if (dropped_[x] || (is_transient(g_.tensors[x].kind) && !needed_later(x))) {
        waits.push_back(recompute(x, i));
        continue;
      }
      const ObjectId obj = acquire(x, i, true);
      if (obj == kNoObject) throw NoMemoryToRecompute{p, i};
      arrival_[x] = swap_in(x, obj, -1, -1);
    }
  };
  bring_inputs(op);
  for (OpId u : replays)
    bring_inputs(g_.ops[u]);
  for (TensorId t : op.outputs)
    if (obj_of_[t] != kNoObject) {
      dropped_[t] = 1;  // made again below: its copy here may go without a copy
      const uint8_t dirty = dirty_[t];
      const ObjectId obj = obj_of_[t];
      dirty_[t] = 0;
      evict(t);
      dirty_[t] = dirty;
      ring_push(class_[t], obj);  // the pool's: free again (no-op in the arena)
    }
  std::vector<ObjectId> made;                                   // the outputs' objects
  std::vector<size_t> passing_at(op.outputs.size(), SIZE_MAX);  // their passing_ entries
  // One step of op o: objects slot by slot (outputs, inputs, updates,
  // workspace; outputs and workspace fresh) and the waits. An op whose
  // recompute skips its updates has no update slots (Note [Recompute
  // without updates]); a replay's updates are p's outputs.
  auto emit = [&](OpId o) {
    const Op& oo = g_.ops[o];
    const int32_t obj_begin = static_cast<int32_t>(recompute_objs_.size());
    std::vector<ObjectId> fresh_objs;
    auto fresh = [&](ItemId x) {
      const ObjectId obj = acquire(x, i, false);
      if (obj == kNoObject) throw NoMemoryToRecompute{p, i};
      if (rel_copy_[obj] >= 0) waits.push_back(rel_copy_[obj]);
      if (placed()) waits.insert(waits.end(), taken_copy_.begin(), taken_copy_.end());
      tenant_[obj] = x;
      fresh_objs.push_back(obj);
      recompute_objs_.push_back(obj);
    };
    for (TensorId t : oo.outputs)
      fresh(t);
    for (TensorId x : oo.inputs) {
      recompute_objs_.push_back(obj_of_[x]);
      if (arrival_[x] >= 0) waits.push_back(arrival_[x]);
    }
    if (step_touches_updates(oo, true))
      for (TensorId t : oo.updates)
        recompute_objs_.push_back(
            made[std::find(op.outputs.begin(), op.outputs.end(), t) - op.outputs.begin()]);
    if (oo.workspace_bytes > 0) fresh(n_ + o);
    std::sort(waits.begin(), waits.end());
    waits.erase(std::unique(waits.begin(), waits.end()), waits.end());
    const int32_t wb = static_cast<int32_t>(waits_.size());
    waits_.insert(waits_.end(), waits.begin(), waits.end());
    waits.clear();
    steps_.push_back({StepKind::kRecompute, o, kNoObject, i, wb,
                      static_cast<int32_t>(waits_.size()), obj_begin,
                      static_cast<int32_t>(recompute_objs_.size())});
    const StepId step = static_cast<StepId>(steps_.size()) - 1;
    // Inputs: used now; a later eviction of one is keyed after it: at i.
    for (TensorId x : oo.inputs) {
      last_step_[x] = step;
      last_pos_[x] = std::max(last_pos_[x], i);
      arrival_[x] = -1;
      if (kind_[x] == ItemKind::kInput && !needed_later(x)) passing_inputs_.push_back(x);
    }
    for (ObjectId obj : fresh_objs)
      if (arena()) {
        tenancies_[obj].begin = when(i, StepKind::kCompute);
        tenancies_[obj].first = step;
      }
    if (oo.workspace_bytes > 0) passing_.push_back({fresh_objs.back(), n_ + o, step});
    fresh_objs.resize(oo.outputs.size());
    made.insert(made.end(), fresh_objs.begin(), fresh_objs.end());
    return step;
  };
  StepId last = emit(p);
  // Outputs: on the device again if still needed, else freed after op i.
  for (size_t k = 0; k < op.outputs.size(); ++k) {
    const TensorId t = op.outputs[k];
    const ObjectId obj = made[k];
    if (dtr()) dtr_cost_->restore(t);
    if (needed_later(t)) {
      obj_of_[t] = obj;
      dropped_[t] = 0;
      dirty_[t] = !has_host_[t];
      last_step_[t] = last;
      last_pos_[t] = std::max(last_pos_[t], i);
      list_resident(t);
    } else {
      // Only passes through, but a recompute after this one at position i
      // may read it (Note [Recompute through dead inputs]): it holds its
      // object until op i has run, as what a recompute used does.
      passing_at[k] = passing_.size();
      passing_.push_back({obj, t, last});
      obj_of_[t] = obj;
      last_step_[t] = last;
      last_pos_[t] = i;
    }
  }
  for (OpId u : replays) {
    last = emit(u);
    for (TensorId t : g_.ops[u].updates) {
      const size_t k = std::find(op.outputs.begin(), op.outputs.end(), t) - op.outputs.begin();
      if (passing_at[k] != SIZE_MAX)
        passing_[passing_at[k]].step = last;
      else
        last_step_[t] = last;
    }
  }
  return last;
}

}  // namespace sa
