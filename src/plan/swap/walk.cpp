// The walk over the order (Note [Swap planning]): each op's items made
// resident, evictions, swap-ins, releases, and the passes of the steady state.

#include "plan/swap/pass.h"

namespace sa {
using namespace swap_plan;  // this folder's types (pass.h)

StepId SwapPlanner::Pass::add_step(StepKind kind, int32_t subject, ObjectId obj, int32_t key_pos,
                                   std::initializer_list<StepId> waits) {
  const int32_t begin = static_cast<int32_t>(waits_.size());
  for (StepId w : waits)
    if (w >= 0) waits_.push_back(w);
  steps_.push_back({kind, subject, obj, key_pos, begin, static_cast<int32_t>(waits_.size())});
  return static_cast<StepId>(steps_.size()) - 1;
}

void SwapPlanner::Pass::release(ObjectId obj, StepId compute, StepId copy, int32_t pos) {
  rel_compute_[obj] = compute;
  rel_copy_[obj] = copy;
  rel_pos_[obj] = pos;
  if (arena()) {
    Tenancy& t = tenancies_[obj];
    t.end = when(pos, StepKind::kDrop);
    if (placed()) {
      if (bytes_[t.item] > 0) {
        auto it = ranges_.find(t.offset);
        SA_CHECK(it != ranges_.end() && it->second.tenancy == obj,
                 "tenancy {} of item {} not found at offset {}", obj, t.item, t.offset);
        it->second = {it->second.end, -1, pos, compute, copy};
        run_add(it->first, it->second.end, pos);
      }
    } else {
      free_bytes_.add(pos, bytes_[t.item]);
    }
  }
  tenant_[obj] = -1;
}

// Frees v's object, copying v out first if its device copy is newer and
// still needed. The object's next tenant waits for that.
void SwapPlanner::Pass::evict(ItemId v) {
  const ObjectId obj = obj_of_[v];
  // An item the current op touches comes back before it runs by a swap-in
  // (a relocation moves the op's inputs; a window may take one not placed
  // yet), so it may not be dropped to be recomputed.
  const bool recompute = needs_copy(v) && pinned_[v] != now_ && may_drop_to_recompute(v);
  const StepKind kind = needs_copy(v) && !recompute ? StepKind::kSwapOut : StepKind::kDrop;
  if (recompute) dropped_[v] = 1;
  if (recompute && dtr()) dtr_cost_->evict(v);
  if (kind == StepKind::kSwapOut) has_host_[v] = 1;
  const int32_t key = last_pos_[v];
  const StepId step = leave_device(kind, v, obj, key, last_step_[v]);
  if (kind == StepKind::kSwapOut) dirty_[v] = 0;
  release(obj, last_step_[v], step, key);
  obj_of_[v] = kNoObject;
  unlist_resident(v);
}

// The step (a swap-out or a drop of v from obj, keyed at key, after `after`)
// that ends v's device copy. A later swap-in of v comes after it: a swap-out
// writes the host copy the swap-in reads; a drop takes v off the device it
// returns to. Every such step is made here so that none forgets to say so (a
// recompute may read an input after its last use, Note [Recompute through
// dead inputs]: its swap-in once started before the drop, and the plan held
// the input in two objects).
StepId SwapPlanner::Pass::leave_device(StepKind kind, ItemId v, ObjectId obj, int32_t key,
                                       StepId after) {
  const StepId step = add_step(kind, v, obj, key, {after});
  host_write_[v] = step;
  host_key_[v] = key;
  return step;
}

// Copies x from its host copy into obj, once the object's previous tenant is
// released, the host copy is written (x's last swap-out) and `after` (a
// compute step, or -1) has run; key_pos is the earliest position to order it.
StepId SwapPlanner::Pass::swap_in(ItemId x, ObjectId obj, int32_t key_pos, StepId after) {
  const int32_t key = std::max({rel_pos_[obj], host_key_[x], key_pos});
  const StepId step = add_step(StepKind::kSwapIn, x, obj, key,
                               {rel_compute_[obj], rel_copy_[obj], host_write_[x], after});
  if (placed()) {  // and for the releases of the memory it took
    for (const auto* taken : {&taken_compute_, &taken_copy_})
      for (StepId w : *taken)
        waits_.push_back(w);
    steps_.back().wait_end = static_cast<int32_t>(waits_.size());
  }
  if (arena()) {
    tenancies_[obj].begin = when(key, StepKind::kSwapIn);
    tenancies_[obj].first = step;
  }
  obj_of_[x] = obj;
  tenant_[obj] = x;
  list_resident(x);
  return step;
}

// Placed mode: a new tenancy for x before position i, in the window the
// layout chooses (find_window) once its victims are evicted; kNoObject when
// there is none.
// Note [Memory policies]: each layout answers one question, find_room():
// where x can go before position i and which residents must leave first,
// without evicting them; make_room() evicts them (the walk's part: steps,
// releases) and takes the room. In the size-class pool, a free object of
// x's class, else the object of one victim; in the packed arena, enough
// free bytes, else one victim, and the question again once it has left
// (each victim is chosen knowing the ones before it left); in the placed
// arena, a window and all of its victims at once.
SwapPlanner::Pass::Room SwapPlanner::Pass::find_room(ItemId x, int i, bool swap_in) {
  if (placed()) {
    const Window w = find_window(x, i, swap_in);
    return {.found = w.at >= 0, .at = w.at, .victims = w.victims};
  }
  const bool free = arena() ? free_bytes_.total() >= bytes_[x] : !free_objects_.empty(class_[x]);
  if (free) return {.found = true};
  one_victim_ = pick_victim(x, i, swap_in);
  if (one_victim_ < 0) return {};
  return {.found = true,
          .object = arena() ? kNoObject : obj_of_[one_victim_],
          .victims = {&one_victim_, 1},
          .again = arena()};
}

ObjectId SwapPlanner::Pass::take_room(ItemId x, const Room& r, bool swap_in) {
  if (placed()) return take_range(x, r.at);
  if (arena()) return open_tenancy(x, free_bytes_.take(bytes_[x], swap_in));
  return r.object != kNoObject ? r.object : ring_pop(class_[x]);
}

ObjectId SwapPlanner::Pass::make_room(ItemId x, int i, bool swap_in) {
  while (true) {
    const Room r = find_room(x, i, swap_in);
    if (!r.found) return kNoObject;
    for (ItemId v : r.victims)
      evict(v);
    if (!r.again) return take_room(x, r, swap_in);
  }
}

// An object for x, needed before position i (Note [Memory policies]). The
// placed arena found no window when the op's own residents cut it into
// pieces too small: NoRoom (plan_arena packs instead).
ObjectId SwapPlanner::Pass::acquire(ItemId x, int i, bool swap_in) {
  const ObjectId obj = make_room(x, i, swap_in);
  if (obj == kNoObject && placed()) throw NoRoom{x, i};
  return obj;
}

// A directed swap-in of x, issued once the op at position i-1 has run.
void SwapPlanner::Pass::fetch(ItemId x, int i) {
  if (obj_of_[x] != kNoObject || !needed_later(x)) return;
  if (kind_[x] == ItemKind::kTransient && cursor_[x] == 0) return;  // not created yet
  const ObjectId obj = acquire(x, i, true);
  SA_CHECK(obj != kNoObject, "no object to fetch tensor {} before position {}", x, i);
  arrival_[x] = swap_in(x, obj, i - 1, last_compute_);
}

void SwapPlanner::Pass::place_op(int i) {
  const OpId o = order_[i];
  const Op& op = g_.ops[o];
  scratch_.clear();
  created_.clear();
  // The op's dropped inputs are made again first (Note [Recomputation]).
  for_each_access(op, [&](TensorId x, Access) { handled_[x] = i; });
  for_each_access(op, [&](TensorId x, Access a) {
    if (a != Access::kCreate && obj_of_[x] == kNoObject && dropped_[x])
      scratch_.push_back(recompute(x, i));
  });
  if (placed()) preplace(i);
  int slot = access_begin_[o];
  auto place = [&](ItemId x, Access access) {
    handled_[x] = i;
    if (access == Access::kCreate) {
      const ObjectId obj = placed() ? pre_obj_[x] : acquire(x, i, false);
      if (obj == kNoObject && opt_.recompute) throw NoMemoryToRecompute{o, i};
      SA_CHECK(obj != kNoObject, "no object for item {} of op {}", x, o);
      obj_of_[x] = obj;
      tenant_[obj] = x;
      if (x < n_) list_resident(x);  // a workspace is never a victim
      if (rel_copy_[obj] >= 0) scratch_.push_back(rel_copy_[obj]);
      if (arena()) created_.push_back(obj);
    } else if (obj_of_[x] == kNoObject) {
      const ObjectId obj = acquire(x, i, true);
      if (obj == kNoObject && opt_.recompute) throw NoMemoryToRecompute{o, i};
      SA_CHECK(obj != kNoObject, "no object to bring tensor {} back for op {}", x, o);
      arrival_[x] = swap_in(x, obj, -1, -1);
    }
    if (arrival_[x] >= 0) {
      scratch_.push_back(arrival_[x]);
      arrival_[x] = -1;
    }
    access_objects_[slot++] = obj_of_[x];
  };
  for_each_access(op, place);
  if (op.workspace_bytes > 0) place(n_ + o, Access::kCreate);
}

void SwapPlanner::Pass::after_op(int i, StepId compute) {
  const OpId o = order_[i];
  const Op& op = g_.ops[o];
  for (ObjectId t : created_) {
    tenancies_[t].begin = when(i, StepKind::kCompute);
    tenancies_[t].first = compute;
  }
  auto after = [&](ItemId x, Access access) {
    last_step_[x] = compute;
    last_pos_[x] = i;
    ++cursor_[x];
    heap_touch(x);
    if (access != Access::kRead) dirty_[x] = 1;
    if (access == Access::kUpdate) has_host_[x] = 0;  // the host copy is older now
    const ObjectId obj = obj_of_[x];
    if (needed_later(x) || kind_[x] == ItemKind::kPersistent) return;
    // Last use in the iteration: transients die, inputs are dropped. To
    // DTR a dead tensor is an evicted one: a recompute that reads it makes
    // it again (Note [Recompute through dead inputs]).
    if (dtr() && x < n_ && kind_[x] == ItemKind::kTransient) dtr_cost_->evict(x);
    const StepId drop =
        kind_[x] == ItemKind::kInput ? leave_device(StepKind::kDrop, x, obj, i, compute) : -1;
    release(obj, compute, drop, i);
    obj_of_[x] = kNoObject;
    unlist_resident(x);
    ring_push(class_[x], obj);
  };
  for_each_access(op, after);
  if (op.workspace_bytes > 0) after(n_ + o, Access::kCreate);
  // What the op's recomputes made and nobody needs is freed with the op's
  // own dead items: freed before it ran, it would be keyed at its position
  // and taken by its own items' copies, which the op then waits for.
  for (const Passing& x : passing_) {
    StepId last = x.step;
    if (x.item < n_) {  // a tensor: readable until now (Note [Recompute through dead inputs])
      SA_CHECK(obj_of_[x.item] == x.obj, "passing tensor {} left object {}", x.item, x.obj);
      last = std::max(last, last_step_[x.item]);  // the last recompute that read it
      obj_of_[x.item] = kNoObject;
      if (dtr()) dtr_cost_->evict(x.item);
    }
    release(x.obj, last, -1, i);
    ring_push(class_[x.item], x.obj);
  }
  passing_.clear();
  // Inputs a recompute read after their last use are dropped as after_op's
  // last use drops them (unless evicted meanwhile, or read by this op).
  for (ItemId u : passing_inputs_) {
    if (needed_later(u) || obj_of_[u] == kNoObject) continue;
    const ObjectId obj = obj_of_[u];
    const StepId drop = leave_device(StepKind::kDrop, u, obj, i, last_step_[u]);
    release(obj, last_step_[u], drop, i);
    obj_of_[u] = kNoObject;
    unlist_resident(u);
    ring_push(class_[u], obj);
  }
  passing_inputs_.clear();
}

bool SwapPlanner::Pass::run(const std::vector<ResidentTensor>& resident_in, bool fix_up) {
  reset_pass();
  std::vector<ResidentTensor> resident = start_pass(resident_in);
  for (int i = 0; i < m_; ++i)
    walk_op(i);
  // The end of the iteration. The tensors of `resident` must be in their
  // objects, at their latest value, for the next iteration. Those that are
  // not (evicted on the way) are put back when fix_up: their objects are
  // freed and they are copied in again; otherwise the pass is inconsistent.
  // In the arena, a tensor of `resident` that came back on the way and is
  // still on the device needs no copy: its last tenancy joins its first one
  // in the packing (one offset). Every other persistent tensor on the device
  // is written back if modified, else dropped.
  bool consistent = true;
  for (const ResidentTensor& r : resident)
    consistent = consistent && at_home(r);
  if (!consistent && fix_up) {
    put_back(resident);
    consistent = true;
  }
  write_back(resident, fix_up);
  return consistent;
}

// The per-pass state, as before the first op.
void SwapPlanner::Pass::reset_pass() {
  const int items = num_items_;
  obj_of_.assign(items, kNoObject);
  dirty_.assign(items, 0);
  cursor_.assign(items, 0);
  last_pos_.assign(items, -1);
  pinned_.assign(items, -1);
  handled_.assign(items, -1);
  pre_obj_.assign(items, kNoObject);
  last_step_.assign(items, -1);
  arrival_.assign(items, -1);
  host_write_.assign(items, -1);
  host_key_.assign(items, -1);
  dropped_.assign(items, 0);
  has_host_.assign(items, 0);
  if (dtr()) dtr_cost_->reset();
  recompute_objs_.clear();
  passing_.clear();
  passing_inputs_.clear();
  listed_at_.assign(items, -1);
  heaps_.reset(nc_, items);
  heap_built_.assign(nc_, 0);
  residents_.resize(nc_);
  for (auto& list : residents_)
    list.clear();
  if (dtr()) {
    droppable_at_.assign(items, -1);
    droppable_.resize(nc_);
    for (auto& list : droppable_)
      list.clear();
  }
  steps_.clear();
  waits_.clear();
  access_objects_.assign(access_begin_[m_], kNoObject);
  resident_at_end_.clear();
  last_compute_ = -1;
}

// The initial resident set in place (in the arena, as this pass's first
// tenancies) and the free memory around it; returns it with its objects.
std::vector<ResidentTensor> SwapPlanner::Pass::start_pass(
    const std::vector<ResidentTensor>& resident_in) {
  std::vector<ResidentTensor> resident = resident_in;
  if (placed()) {  // the residents' offsets, from the tenancies of the pass before
    start_offset_.resize(n_);
    for (const ResidentTensor& r : resident)
      start_offset_[r.tensor] = tenancies_[r.object].offset;
    home_.assign(num_items_, -1);
    if (opt_.home_offsets)
      for (const ResidentTensor& r : resident)
        home_[r.tensor] = start_offset_[r.tensor];
  }
  if (arena()) {
    tenancies_.clear();
    tenant_.clear();
    rel_compute_.clear();
    rel_copy_.clear();
    rel_pos_.clear();
    free_bytes_.reset(m_ + 1);
    int64_t held = 0;
    ranges_.clear();
    runs_.clear();
    runs_by_size_.clear();
    if (placed()) {
      ranges_[0] = {capacity_, -1, -1, -1, -1};
      run_add(0, capacity_, -1);
    }
    for (ResidentTensor& r : resident) {
      if (placed()) {
        r.object = take_range(r.tensor, start_offset_[r.tensor]);
      } else {
        r.object = open_tenancy(r.tensor, -1);
      }
      held += bytes_[r.tensor];
    }
    SA_CHECK(held <= capacity_, "resident set of {} bytes over the capacity of {}", held,
             capacity_);
    if (!placed()) free_bytes_.add(-1, capacity_ - held);
  } else {
    tenant_.assign(num_objects_, -1);
    rel_compute_.assign(num_objects_, -1);
    rel_copy_.assign(num_objects_, -1);
    rel_pos_.assign(num_objects_, -1);
    free_objects_.reset(class_first_);
  }

  for (const ResidentTensor& r : resident) {
    obj_of_[r.tensor] = r.object;
    tenant_[r.object] = r.tensor;
    dirty_[r.tensor] = updated_[r.tensor];
    list_resident(r.tensor);
  }
  if (!arena())
    for (ClassId c = 0; c < nc_; ++c) {
      for (ObjectId obj = class_first_[c]; obj < class_first_[c + 1]; ++obj)
        if (tenant_[obj] < 0) ring_push(c, obj);
      peak_in_use[c] = std::max(peak_in_use[c], free_objects_.in_use(c));
    }

  return resident;
}

// Op i of the order: its items made resident, its compute step, what it
// releases, and the directives' fetches and evictions around it.
void SwapPlanner::Pass::walk_op(int i) {
  now_ = i;
  const OpId o = order_[i];
  const Op& op = g_.ops[o];
  for_each_access(op, [&](TensorId x, Access) { pinned_[x] = i; });
  if (op.workspace_bytes > 0) pinned_[n_ + o] = i;
  if (dir_ && !dir_->fetch_before.empty())
    for (TensorId x : dir_->fetch_before[i])
      fetch(x, i);
  place_op(i);
  std::sort(scratch_.begin(), scratch_.end());
  scratch_.erase(std::unique(scratch_.begin(), scratch_.end()), scratch_.end());
  const int32_t wb = static_cast<int32_t>(waits_.size());
  waits_.insert(waits_.end(), scratch_.begin(), scratch_.end());
  steps_.push_back({StepKind::kCompute, o, kNoObject, i, wb, static_cast<int32_t>(waits_.size())});
  last_compute_ = static_cast<StepId>(steps_.size()) - 1;
  after_op(i, last_compute_);
  now_ = i + 1;
  if (dir_ && !dir_->evict_after.empty())
    for (TensorId x : dir_->evict_after[i]) {
      const ObjectId obj = obj_of_[x];
      if (obj == kNoObject) continue;
      if (dir_->drop_only && needs_copy(x) && !may_drop_to_recompute(x)) continue;
      evict(x);
      ring_push(class_[x], obj);
    }
}

// Whether initial resident r is where it started: in its object, or (placed)
// back at its offset in a later tenancy, which the plan writes as the same
// object (objects_from_placements).
bool SwapPlanner::Pass::at_home(const ResidentTensor& r) const {
  const ObjectId obj = obj_of_[r.tensor];
  if (obj == r.object) return true;
  return placed() && obj != kNoObject && tenancies_[obj].offset == home_[r.tensor];
}

// End of a pass that is not consistent (fix_up): the tensors of `resident`
// evicted on the way are copied back into their objects, whatever holds
// those memory leaving first.
void SwapPlanner::Pass::put_back(const std::vector<ResidentTensor>& resident) {
  std::vector<ResidentTensor> misplaced;
  for (const ResidentTensor& r : resident)
    if (!at_home(r)) misplaced.push_back(r);
  if (placed()) {
    // Each goes back to its own offset: whatever holds it leaves first.
    for (const ResidentTensor& r : misplaced)
      if (obj_of_[r.tensor] != kNoObject) evict(r.tensor);
    for (const ResidentTensor& r : misplaced)
      for (ItemId v : range_tenants(start_offset_[r.tensor], bytes_[r.tensor], m_))
        evict(v);
    for (const ResidentTensor& r : misplaced)
      swap_in(r.tensor, take_range(r.tensor, start_offset_[r.tensor]), -1, -1);
  } else if (arena()) {
    // Others leave first, so that the bytes are there.
    std::vector<uint8_t> wanted(num_items_, 0);
    for (const ResidentTensor& r : resident)
      wanted[r.tensor] = 1;
    for (TensorId x = 0; x < n_; ++x)
      if (obj_of_[x] != kNoObject && !wanted[x]) evict(x);
    for (const ResidentTensor& r : misplaced) {
      ObjectId obj = obj_of_[r.tensor];
      if (obj == kNoObject) {
        obj = open_tenancy(r.tensor, free_bytes_.take(bytes_[r.tensor], true));
        swap_in(r.tensor, obj, -1, -1);
      }
      tenancies_[obj].unit = r.object;
    }
  } else {
    for (const ResidentTensor& r : misplaced)
      if (tenant_[r.object] >= 0) evict(tenant_[r.object]);
    for (const ResidentTensor& r : misplaced)
      if (obj_of_[r.tensor] != kNoObject) evict(r.tensor);
    for (const ResidentTensor& r : misplaced)
      swap_in(r.tensor, r.object, -1, -1);
  }
}

// End of a pass: every persistent tensor on the device but the resident set
// kept for the next iteration is written back if modified, else dropped.
void SwapPlanner::Pass::write_back(const std::vector<ResidentTensor>& resident, bool fix_up) {
  std::vector<uint8_t> keep(arena() ? tenancies_.size() : num_objects_, 0);
  for (const ResidentTensor& r : resident) {
    const ObjectId obj = obj_of_[r.tensor];
    if (at_home(r) || (arena() && fix_up && obj != kNoObject)) keep[obj] = 1;
  }
  for (TensorId x = 0; x < n_; ++x) {
    const ObjectId obj = obj_of_[x];
    if (obj == kNoObject) continue;
    SA_CHECK(kind_[x] == ItemKind::kPersistent, "tensor {} resident after its last use", x);
    resident_at_end_.push_back({x, obj});
    if (keep[obj]) continue;
    const StepId step = leave_device(dirty_[x] ? StepKind::kSwapOut : StepKind::kDrop, x, obj,
                                     last_pos_[x], last_step_[x]);
    if (arena()) release(obj, last_step_[x], step, last_pos_[x]);
  }
  if (arena()) resident_in_arena_ = resident;
}

std::vector<ResidentTensor> SwapPlanner::Pass::run_passes(std::span<const int32_t> cnt) {
  if (!arena()) {
    class_first_.assign(nc_ + 1, 0);
    for (int c = 0; c < nc_; ++c)
      class_first_[c + 1] = class_first_[c] + cnt[c];
    num_objects_ = class_first_[nc_];
    peak_in_use.assign(nc_, 0);
  }
  std::vector<ResidentTensor> resident;
  run(resident, false);
  if (!opt_.steady_state || resident_at_end_.empty()) return resident;
  resident = resident_at_end_;
  for (int pass = 0;; ++pass) {
    const bool last = pass >= opt_.max_passes;
    if (run(resident, last)) return arena() ? resident_in_arena_ : resident;
    // Keep the tensors of R that stayed in their objects.
    std::vector<ResidentTensor> kept;
    for (const ResidentTensor& r : arena() ? resident_in_arena_ : resident)
      if (at_home(r)) kept.push_back(r);
    resident = std::move(kept);
  }
}

}  // namespace sa
