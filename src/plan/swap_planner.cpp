#include "plan/swap_planner.h"

#include <algorithm>
#include <climits>
#include <queue>
#include <tuple>

#include <fmt/format.h>

#include "util/error.h"
#include "util/units.h"

namespace sa {
namespace {

using ItemId = int32_t;  // tensors 0..n-1, then op o's workspace at n + o

enum class ItemKind : uint8_t { kTransient, kInput, kPersistent };

// A step before the final ordering: key_pos and rank give its place (see
// Note [Swap planning]): compute at position i is (i, 0); a swap-out or drop
// released at position r is (r, 1); a swap-in into an object released at r
// is (r, 2).
struct TempStep {
  StepKind kind;
  int32_t subject;
  ObjectId object;
  int32_t key_pos;
  int32_t wait_begin;
  int32_t wait_end;
};

int rank_of(StepKind k) {
  switch (k) {
    case StepKind::kCompute:
      return 0;
    case StepKind::kSwapOut:
    case StepKind::kDrop:
      return 1;
    case StepKind::kSwapIn:
      return 2;
  }
  return 0;
}

}  // namespace

// One walk over the order (a pass) and everything it needs, kept between
// calls so that the search does not reallocate.
class SwapPlanner::Pass {
 public:
  Pass(const Graph& g, const SizeTable& sizes, std::span<const double> op_us,
       const DeviceProfile& device);

  // Per plan(): classes, positions and uses. False with *why if some op
  // touches more items of a class than cnt gives (checked when check_counts).
  bool prepare(std::span<const OpId> order, const Allocation& a, const PlannerOptions& opt,
               const Directives* directives, bool check_counts, std::string* why);
  // Runs the passes of Note [Swap planning] with cnt objects per class and
  // returns the initial resident set of the pass whose steps are kept.
  std::vector<ResidentTensor> run_passes(std::span<const int32_t> cnt);
  void emit(std::span<const int32_t> cnt, int64_t budget, std::vector<ResidentTensor> resident,
            Plan* out);

  std::vector<int32_t> peak_in_use;  // per class, over every pass since run_passes began
  int num_ops() const { return m_; }
  const Graph& graph() const { return g_; }
  const SizeTable& sizes() const { return sizes_; }

 private:
  bool run(const std::vector<ResidentTensor>& resident, bool fix_up);
  std::vector<int32_t> by_key(std::span<const int32_t> visit) const;
  bool order_swap_ins(std::vector<int32_t>* visit);
  void place_op(int i);
  void after_op(int i, StepId compute);
  void fetch(ItemId x, int i);

  int num_uses(ItemId x) const { return use_begin_[x + 1] - use_begin_[x]; }
  bool needed_later(ItemId x) const { return cursor_[x] < num_uses(x); }
  bool needs_copy(ItemId v) const {
    return dirty_[v] && (needed_later(v) || kind_[v] == ItemKind::kPersistent);
  }
  int64_t victim_key(ItemId x) const;
  void list_resident(ItemId x);
  void unlist_resident(ItemId x);
  StepId add_step(StepKind kind, int32_t subject, ObjectId obj, int32_t key_pos,
                  std::initializer_list<StepId> waits);
  void release(ObjectId obj, StepId compute, StepId copy, int32_t pos);
  void ring_push(ClassId c, ObjectId obj);
  ObjectId ring_pop(ClassId c);
  void evict(ItemId v);
  StepId swap_in(ItemId x, ObjectId obj, int32_t key_pos, StepId after);
  ObjectId acquire(ItemId x, int i, bool swap_in);

  // Fixed per graph.
  const Graph& g_;
  const SizeTable& sizes_;
  std::span<const double> op_us_;
  const DeviceProfile device_;
  const int n_, m_, num_items_;
  std::vector<ItemKind> kind_;
  std::vector<int64_t> bytes_;
  std::vector<uint8_t> updated_;  // persistent tensor modified during the iteration
  std::vector<int32_t> access_begin_;

  // Per plan().
  std::span<const OpId> order_;
  PlannerOptions opt_;
  const Directives* dir_ = nullptr;
  int nc_ = 0;
  std::vector<double> prefix_;  // prefix_[i]: op time before position i
  std::vector<int32_t> use_begin_, uses_;
  std::vector<ClassId> class_;
  std::vector<int64_t> class_bytes_;
  std::vector<int32_t> class_first_;  // objects of class c: [class_first_[c], class_first_[c+1])
  int num_objects_ = 0;

  // Per pass.
  std::vector<ObjectId> obj_of_;
  std::vector<uint8_t> dirty_;
  std::vector<int32_t> cursor_, last_pos_, pinned_;
  std::vector<StepId> last_step_, arrival_;
  std::vector<StepId> host_write_;  // the item's last eviction (swap-out or drop)
  std::vector<int32_t> host_key_;   // and its key position
  std::vector<ItemId> tenant_;
  std::vector<StepId> rel_compute_, rel_copy_;
  std::vector<int32_t> rel_pos_;
  std::vector<ObjectId> ring_;  // free objects: a ring per class over its object range
  std::vector<int32_t> ring_head_, ring_size_;
  // The evictable residents of each class, and each item's index there (-1
  // when not listed). A victim is found by scanning its class's list: only
  // full classes are scanned, and an access costs nothing.
  std::vector<std::vector<ItemId>> residents_;
  std::vector<int32_t> listed_at_;
  std::vector<TempStep> steps_;
  std::vector<StepId> waits_, scratch_;
  std::vector<ObjectId> access_objects_;
  std::vector<ResidentTensor> resident_at_end_;
  StepId last_compute_ = -1;
};

SwapPlanner::Pass::Pass(const Graph& g, const SizeTable& sizes, std::span<const double> op_us,
                        const DeviceProfile& device)
    : g_(g),
      sizes_(sizes),
      op_us_(op_us),
      device_(device),
      n_(g.num_tensors()),
      m_(g.num_ops()),
      num_items_(n_ + m_) {
  kind_.assign(num_items_, ItemKind::kTransient);
  bytes_.assign(num_items_, 0);
  updated_.assign(num_items_, 0);
  for (TensorId x = 0; x < n_; ++x) {
    const TensorKind k = g.tensors[x].kind;
    kind_[x] = is_persistent(k)          ? ItemKind::kPersistent
               : k == TensorKind::kInput ? ItemKind::kInput
                                         : ItemKind::kTransient;
    bytes_[x] = g.tensors[x].bytes;
  }
  access_begin_.assign(m_ + 1, 0);
  for (OpId o = 0; o < m_; ++o) {
    bytes_[n_ + o] = g.ops[o].workspace_bytes;
    for (TensorId x : g.ops[o].updates)
      updated_[x] = 1;
    access_begin_[o + 1] = access_begin_[o] + num_access_slots(g.ops[o]);
  }
}

bool SwapPlanner::Pass::prepare(std::span<const OpId> order, const Allocation& a,
                                const PlannerOptions& opt, const Directives* directives,
                                bool check_counts, std::string* why) {
  order_ = order;
  opt_ = opt;
  dir_ = directives;
  nc_ = a.num_classes();
  class_bytes_ = sa::class_bytes(sizes_, a.cls);
  class_.assign(num_items_, -1);
  for (TensorId x = 0; x < n_; ++x)
    class_[x] = a.cls[sizes_.tensor_size[x]];
  for (OpId o = 0; o < m_; ++o)
    if (sizes_.workspace_size[o] >= 0) class_[n_ + o] = a.cls[sizes_.workspace_size[o]];
  if (check_counts) {
    const auto need = min_counts(g_, sizes_, a.cls);
    for (int c = 0; c < nc_; ++c)
      if (need[c] > a.cnt[c]) {
        if (why)
          *why = fmt::format(
              "class {} ({}) has {} objects but some op touches {} of its items at once", c,
              format_bytes(class_bytes_[c]), a.cnt[c], need[c]);
        return false;
      }
  }
  // The op-time prefix and every item's uses in position order.
  prefix_.assign(m_ + 1, 0);
  for (int i = 0; i < m_; ++i)
    prefix_[i + 1] = prefix_[i] + op_us_[order[i]];
  use_begin_.assign(num_items_ + 1, 0);
  for (OpId o = 0; o < m_; ++o) {
    for_each_access(g_.ops[o], [&](TensorId x, Access) { ++use_begin_[x + 1]; });
    if (g_.ops[o].workspace_bytes > 0) ++use_begin_[n_ + o + 1];
  }
  for (int x = 0; x < num_items_; ++x)
    use_begin_[x + 1] += use_begin_[x];
  uses_.resize(use_begin_[num_items_]);
  std::vector<int32_t>& fill = cursor_;  // borrowed as fill pointers
  fill.assign(use_begin_.begin(), use_begin_.end() - 1);
  for (int i = 0; i < m_; ++i) {
    const OpId o = order[i];
    for_each_access(g_.ops[o], [&](TensorId x, Access) { uses_[fill[x]++] = i; });
    if (g_.ops[o].workspace_bytes > 0) uses_[fill[n_ + o]++] = i;
  }
  return true;
}

int64_t SwapPlanner::Pass::victim_key(ItemId x) const {
  if (opt_.eviction == EvictionPolicy::kLru) return -static_cast<int64_t>(last_pos_[x]);
  if (needed_later(x)) return uses_[use_begin_[x] + cursor_[x]];
  // Persistent tensors are next used in the next iteration.
  return num_uses(x) > 0 ? static_cast<int64_t>(m_) + uses_[use_begin_[x]] : INT64_MAX / 2;
}

void SwapPlanner::Pass::list_resident(ItemId x) {
  auto& list = residents_[class_[x]];
  listed_at_[x] = static_cast<int32_t>(list.size());
  list.push_back(x);
}

void SwapPlanner::Pass::unlist_resident(ItemId x) {
  const int32_t at = listed_at_[x];
  if (at < 0) return;
  auto& list = residents_[class_[x]];
  const ItemId moved = list.back();
  list[at] = moved;
  listed_at_[moved] = at;
  list.pop_back();
  listed_at_[x] = -1;
}

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
  tenant_[obj] = -1;
}

void SwapPlanner::Pass::ring_push(ClassId c, ObjectId obj) {
  const int32_t cap = class_first_[c + 1] - class_first_[c];
  ring_[class_first_[c] + (ring_head_[c] + ring_size_[c]) % cap] = obj;
  ++ring_size_[c];
}

ObjectId SwapPlanner::Pass::ring_pop(ClassId c) {
  if (ring_size_[c] == 0) return kNoObject;
  const int32_t cap = class_first_[c + 1] - class_first_[c];
  const ObjectId obj = ring_[class_first_[c] + ring_head_[c]];
  ring_head_[c] = (ring_head_[c] + 1) % cap;
  --ring_size_[c];
  peak_in_use[c] = std::max(peak_in_use[c], cap - ring_size_[c]);
  return obj;
}

// Frees v's object, copying v out first if its device copy is newer and
// still needed. The object's next tenant waits for that.
void SwapPlanner::Pass::evict(ItemId v) {
  const ObjectId obj = obj_of_[v];
  const StepKind kind = needs_copy(v) ? StepKind::kSwapOut : StepKind::kDrop;
  const StepId step = add_step(kind, v, obj, last_pos_[v], {last_step_[v]});
  if (kind == StepKind::kSwapOut) dirty_[v] = 0;
  // A later swap-in of v comes after this step: a swap-out writes the host
  // copy it reads; a drop takes v off the device it returns to.
  host_write_[v] = step;
  host_key_[v] = last_pos_[v];
  release(obj, last_step_[v], step, last_pos_[v]);
  obj_of_[v] = kNoObject;
  unlist_resident(v);
}

// Copies x from its host copy into obj, once the object's previous tenant is
// released, the host copy is written (x's last swap-out) and `after` (a
// compute step, or -1) has run; key_pos is the earliest position to order it.
StepId SwapPlanner::Pass::swap_in(ItemId x, ObjectId obj, int32_t key_pos, StepId after) {
  const int32_t key = std::max({rel_pos_[obj], host_key_[x], key_pos});
  const StepId step = add_step(StepKind::kSwapIn, x, obj, key,
                               {rel_compute_[obj], rel_copy_[obj], host_write_[x], after});
  obj_of_[x] = obj;
  tenant_[obj] = x;
  list_resident(x);
  return step;
}

// An object of x's class for x, needed before position i.
ObjectId SwapPlanner::Pass::acquire(ItemId x, int i, bool swap_in) {
  const ClassId c = class_[x];
  ObjectId obj = ring_pop(c);
  if (obj != kNoObject) return obj;
  // The resident with the furthest next use (Belady; LRU: the oldest last
  // use), among those whose eviction leaves time for its copies when there
  // are any (ties: the larger item id, for determinism).
  ItemId best = -1, best_eligible = -1;
  int64_t best_key = 0, best_eligible_key = 0;
  for (ItemId v : residents_[c]) {
    if (pinned_[v] == i || (dir_ && !dir_->never_evict.empty() && dir_->never_evict[v])) continue;
    const int64_t key = victim_key(v);
    if (best < 0 || key > best_key || (key == best_key && v > best)) {
      best = v;
      best_key = key;
    }
    if (best_eligible >= 0 &&
        (key < best_eligible_key || (key == best_eligible_key && v < best_eligible)))
      continue;
    const double need = (swap_in ? bytes_[x] / device_.h2d_bytes_per_us() : 0.0) +
                        (needs_copy(v) ? bytes_[v] / device_.d2h_bytes_per_us() : 0.0);
    const double elapsed = prefix_[i] - prefix_[last_pos_[v] + 1];
    if (elapsed >= opt_.eviction_threshold * need) {
      best_eligible = v;
      best_eligible_key = key;
    }
  }
  const ItemId v = best_eligible >= 0 ? best_eligible : best;
  if (v < 0) return kNoObject;
  obj = obj_of_[v];
  evict(v);
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
  int slot = access_begin_[o];
  auto place = [&](ItemId x, Access access) {
    if (access == Access::kCreate) {
      const ObjectId obj = acquire(x, i, false);
      SA_CHECK(obj != kNoObject, "no object for item {} of op {}", x, o);
      obj_of_[x] = obj;
      tenant_[obj] = x;
      if (x < n_) list_resident(x);  // a workspace is never a victim
      if (rel_copy_[obj] >= 0) scratch_.push_back(rel_copy_[obj]);
    } else if (obj_of_[x] == kNoObject) {
      const ObjectId obj = acquire(x, i, true);
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
  auto after = [&](ItemId x, Access access) {
    last_step_[x] = compute;
    last_pos_[x] = i;
    ++cursor_[x];
    if (access != Access::kRead) dirty_[x] = 1;
    const ObjectId obj = obj_of_[x];
    if (needed_later(x) || kind_[x] == ItemKind::kPersistent) return;
    // Last use in the iteration: transients die, inputs are dropped.
    const StepId drop =
        kind_[x] == ItemKind::kInput ? add_step(StepKind::kDrop, x, obj, i, {compute}) : -1;
    release(obj, compute, drop, i);
    obj_of_[x] = kNoObject;
    unlist_resident(x);
    ring_push(class_[x], obj);
  };
  for_each_access(op, after);
  if (op.workspace_bytes > 0) after(n_ + o, Access::kCreate);
}

bool SwapPlanner::Pass::run(const std::vector<ResidentTensor>& resident, bool fix_up) {
  const int items = num_items_;
  obj_of_.assign(items, kNoObject);
  dirty_.assign(items, 0);
  cursor_.assign(items, 0);
  last_pos_.assign(items, -1);
  pinned_.assign(items, -1);
  last_step_.assign(items, -1);
  arrival_.assign(items, -1);
  host_write_.assign(items, -1);
  host_key_.assign(items, -1);
  listed_at_.assign(items, -1);
  tenant_.assign(num_objects_, -1);
  rel_compute_.assign(num_objects_, -1);
  rel_copy_.assign(num_objects_, -1);
  rel_pos_.assign(num_objects_, -1);
  ring_.assign(num_objects_, kNoObject);
  ring_head_.assign(nc_, 0);
  ring_size_.assign(nc_, 0);
  residents_.resize(nc_);
  for (auto& list : residents_)
    list.clear();
  steps_.clear();
  waits_.clear();
  access_objects_.assign(access_begin_[m_], kNoObject);
  resident_at_end_.clear();
  last_compute_ = -1;

  for (const ResidentTensor& r : resident) {
    obj_of_[r.tensor] = r.object;
    tenant_[r.object] = r.tensor;
    dirty_[r.tensor] = updated_[r.tensor];
    list_resident(r.tensor);
  }
  for (ClassId c = 0; c < nc_; ++c) {
    for (ObjectId obj = class_first_[c]; obj < class_first_[c + 1]; ++obj)
      if (tenant_[obj] < 0) ring_push(c, obj);
    const int32_t cap = class_first_[c + 1] - class_first_[c];
    peak_in_use[c] = std::max(peak_in_use[c], cap - ring_size_[c]);
  }

  for (int i = 0; i < m_; ++i) {
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
    steps_.push_back(
        {StepKind::kCompute, o, kNoObject, i, wb, static_cast<int32_t>(waits_.size())});
    last_compute_ = static_cast<StepId>(steps_.size()) - 1;
    after_op(i, last_compute_);
    if (dir_ && !dir_->evict_after.empty())
      for (TensorId x : dir_->evict_after[i]) {
        const ObjectId obj = obj_of_[x];
        if (obj == kNoObject) continue;
        evict(x);
        ring_push(class_[x], obj);
      }
  }

  // The end of the iteration. The tensors of `resident` must be in their
  // objects, at their latest value, for the next iteration. Those that are
  // not (evicted on the way) are put back when fix_up: their objects are
  // freed and they are copied in again; otherwise the pass is inconsistent.
  // Every other persistent tensor on the device is written back if
  // modified, else dropped.
  bool consistent = true;
  for (const ResidentTensor& r : resident)
    consistent = consistent && obj_of_[r.tensor] == r.object;
  if (!consistent && fix_up) {
    std::vector<ResidentTensor> misplaced;
    for (const ResidentTensor& r : resident)
      if (obj_of_[r.tensor] != r.object) misplaced.push_back(r);
    for (const ResidentTensor& r : misplaced)
      if (tenant_[r.object] >= 0) evict(tenant_[r.object]);
    for (const ResidentTensor& r : misplaced)
      if (obj_of_[r.tensor] != kNoObject) evict(r.tensor);
    for (const ResidentTensor& r : misplaced)
      swap_in(r.tensor, r.object, -1, -1);
    consistent = true;
  }
  std::vector<uint8_t> keep(num_objects_, 0);
  for (const ResidentTensor& r : resident)
    if (obj_of_[r.tensor] == r.object) keep[r.object] = 1;
  for (TensorId x = 0; x < n_; ++x) {
    const ObjectId obj = obj_of_[x];
    if (obj == kNoObject) continue;
    SA_CHECK(kind_[x] == ItemKind::kPersistent, "tensor {} resident after its last use", x);
    resident_at_end_.push_back({x, obj});
    if (keep[obj]) continue;
    add_step(dirty_[x] ? StepKind::kSwapOut : StepKind::kDrop, x, obj, last_pos_[x],
             {last_step_[x]});
  }
  return consistent;
}

std::vector<ResidentTensor> SwapPlanner::Pass::run_passes(std::span<const int32_t> cnt) {
  class_first_.assign(nc_ + 1, 0);
  for (int c = 0; c < nc_; ++c)
    class_first_[c + 1] = class_first_[c] + cnt[c];
  num_objects_ = class_first_[nc_];
  peak_in_use.assign(nc_, 0);

  std::vector<ResidentTensor> resident;
  run(resident, false);
  if (!opt_.steady_state || resident_at_end_.empty()) return resident;
  resident = resident_at_end_;
  for (int pass = 0;; ++pass) {
    const bool last = pass >= opt_.max_passes;
    if (run(resident, last)) return resident;
    // Keep the tensors of R that stayed in their objects.
    std::vector<ResidentTensor> kept;
    for (const ResidentTensor& r : resident)
      if (obj_of_[r.tensor] == r.object) kept.push_back(r);
    resident = std::move(kept);
  }
}

// The steps sorted on (key_pos, rank), stably in the order of `visit` (a
// counting sort): result[k] is the step that goes k-th.
std::vector<int32_t> SwapPlanner::Pass::by_key(std::span<const int32_t> visit) const {
  const int buckets = (m_ + 1) * 3;
  std::vector<int32_t> begin(buckets + 1, 0);
  auto bucket_of = [&](const TempStep& t) { return (t.key_pos + 1) * 3 + rank_of(t.kind); };
  for (const TempStep& t : steps_)
    ++begin[bucket_of(t) + 1];
  for (int b = 0; b < buckets; ++b)
    begin[b + 1] += begin[b];
  std::vector<int32_t> sorted(steps_.size());
  for (int32_t k : visit)
    sorted[begin[bucket_of(steps_[k])]++] = k;
  return sorted;
}

// Note [Copy order]: rekeys the swap-ins and puts them into *visit in the
// order the host-to-device stream should run them. Leaves everything as it
// is (and returns false) when some step other than an op waits for a
// swap-in, which only directives make happen.
bool SwapPlanner::Pass::order_swap_ins(std::vector<int32_t>* visit) {
  const int num_steps = static_cast<int>(steps_.size());
  std::vector<int32_t> deadline(num_steps, m_);
  std::vector<int32_t> ins;
  for (int k = 0; k < num_steps; ++k) {
    const TempStep& t = steps_[k];
    if (t.kind == StepKind::kSwapIn) ins.push_back(k);
    for (int w = t.wait_begin; w < t.wait_end; ++w) {
      if (steps_[waits_[w]].kind != StepKind::kSwapIn) continue;
      if (t.kind != StepKind::kCompute) return false;
      deadline[waits_[w]] = std::min(deadline[waits_[w]], t.key_pos);
    }
  }
  if (ins.size() < 2) return false;
  // Estimated times, in the release order: ops end at their prefix time,
  // device-to-host copies run one after another, swap-ins are ready when
  // their waits end (and end a copy's time later, for what waits on them).
  const double h2d = device_.h2d_bytes_per_us(), d2h = device_.d2h_bytes_per_us();
  std::vector<double> end(num_steps, 0.0), ready(num_steps, 0.0);
  double d2h_free = 0;
  for (int32_t k : by_key(*visit)) {
    const TempStep& t = steps_[k];
    double after = 0;
    for (int w = t.wait_begin; w < t.wait_end; ++w)
      after = std::max(after, end[waits_[w]]);
    switch (t.kind) {
      case StepKind::kCompute:
        end[k] = prefix_[t.key_pos + 1];
        break;
      case StepKind::kDrop:
        end[k] = after;
        break;
      case StepKind::kSwapOut:
        d2h_free = std::max(d2h_free, after) + static_cast<double>(bytes_[t.subject]) / d2h;
        end[k] = d2h_free;
        break;
      case StepKind::kSwapIn:
        ready[k] = after;
        end[k] = after + static_cast<double>(bytes_[t.subject]) / h2d;
        break;
    }
  }
  // Earliest deadline first among the ready swap-ins, unless its key would
  // pass another's deadline; then the most urgent one goes first.
  auto urgency = [&](int32_t k) { return std::tuple(deadline[k], steps_[k].key_pos, k); };
  std::vector<int32_t> by_ready = ins, by_deadline = ins;
  std::sort(by_ready.begin(), by_ready.end(), [&](int32_t a, int32_t b) {
    return std::tuple(ready[a], steps_[a].key_pos, a) < std::tuple(ready[b], steps_[b].key_pos, b);
  });
  std::sort(by_deadline.begin(), by_deadline.end(),
            [&](int32_t a, int32_t b) { return urgency(a) < urgency(b); });
  auto later = [&](int32_t a, int32_t b) { return urgency(a) > urgency(b); };
  std::priority_queue<int32_t, std::vector<int32_t>, decltype(later)> heap(later);
  std::vector<uint8_t> placed(num_steps, 0);
  std::vector<int32_t> sequence;
  sequence.reserve(ins.size());
  size_t next_ready = 0, next_urgent = 0;
  double link_free = 0;
  int32_t floor = -1;
  while (sequence.size() < ins.size()) {
    while (placed[by_deadline[next_urgent]])
      ++next_urgent;
    const int32_t urgent = by_deadline[next_urgent];
    while (!heap.empty() && placed[heap.top()])
      heap.pop();
    while (next_ready < by_ready.size() && placed[by_ready[next_ready]])
      ++next_ready;
    if (heap.empty()) link_free = std::max(link_free, ready[by_ready[next_ready]]);
    for (; next_ready < by_ready.size() && ready[by_ready[next_ready]] <= link_free; ++next_ready)
      if (!placed[by_ready[next_ready]]) heap.push(by_ready[next_ready]);
    int32_t k = heap.top();
    if (steps_[k].key_pos >= deadline[urgent]) k = urgent;
    placed[k] = 1;
    sequence.push_back(k);
    floor = std::max(floor, steps_[k].key_pos);
    SA_CHECK(floor < deadline[k], "swap-in {} keyed at {} after its first user at {}", k, floor,
             deadline[k]);
    steps_[k].key_pos = floor;
    link_free =
        std::max(link_free, ready[k]) + static_cast<double>(bytes_[steps_[k].subject]) / h2d;
  }
  // The swap-ins take their slots of *visit in sequence order.
  size_t next = 0;
  for (int32_t& k : *visit)
    if (steps_[k].kind == StepKind::kSwapIn) k = sequence[next++];
  return true;
}

void SwapPlanner::Pass::emit(std::span<const int32_t> cnt, int64_t budget,
                             std::vector<ResidentTensor> resident, Plan* out) {
  // Order the steps on (key_pos, rank), swap-ins in deadline order when
  // that is asked for (Note [Copy order]).
  Plan& p = *out;
  p.clear();
  const int num_steps = static_cast<int>(steps_.size());
  std::vector<int32_t> visit(num_steps);
  for (int k = 0; k < num_steps; ++k)
    visit[k] = k;
  if (opt_.deadline_copy_order && dir_ == nullptr) order_swap_ins(&visit);
  const std::vector<StepId> old_of = by_key(visit);
  std::vector<StepId> new_id(num_steps);
  for (int k = 0; k < num_steps; ++k)
    new_id[old_of[k]] = k;
  p.steps.resize(num_steps);
  p.waits.reserve(waits_.size());
  for (StepId id = 0; id < num_steps; ++id) {
    const TempStep& t = steps_[old_of[id]];
    Step& st = p.steps[id];
    st.kind = t.kind;
    st.subject = t.subject;
    st.object = t.object;
    st.wait_begin = static_cast<int32_t>(p.waits.size());
    for (int w = t.wait_begin; w < t.wait_end; ++w) {
      const StepId target = new_id[waits_[w]];
      SA_CHECK(target < id, "step {} waits for later step {}", id, target);
      p.waits.push_back(target);
    }
    st.wait_end = static_cast<int32_t>(p.waits.size());
  }
  p.memory_budget = budget;
  p.order.assign(order_.begin(), order_.end());
  p.pool.class_bytes = class_bytes_;
  p.pool.class_count.assign(cnt.begin(), cnt.end());
  p.pool.finalize();
  p.tensor_class.assign(class_.begin(), class_.begin() + n_);
  p.workspace_class.assign(class_.begin() + n_, class_.end());
  p.access_begin = access_begin_;
  p.access_objects = access_objects_;
  std::sort(resident.begin(), resident.end(),
            [](const ResidentTensor& a, const ResidentTensor& b) { return a.tensor < b.tensor; });
  p.initial_resident = std::move(resident);
}

SwapPlanner::SwapPlanner(const Graph& g, const SizeTable& sizes, std::span<const double> op_us,
                         const DeviceProfile& device)
    : pass_(std::make_unique<Pass>(g, sizes, op_us, device)) {}

SwapPlanner::~SwapPlanner() = default;

bool SwapPlanner::plan(std::span<const OpId> order, const Allocation& a, int64_t budget,
                       const PlannerOptions& options, Plan* out, std::string* why,
                       const Directives* directives) {
  SA_CHECK(static_cast<int>(order.size()) == pass_->num_ops(), "order has {} ops, graph {}",
           order.size(), pass_->num_ops());
  SA_CHECK(is_well_formed(pass_->sizes(), a), "malformed allocation");
  const bool unbounded = directives && directives->unbounded;
  if (!unbounded) {
    const int64_t pool = pool_bytes(pass_->sizes(), a);
    SA_CHECK(pool <= budget, "pool of {} bytes over the budget of {}", pool, budget);
  }
  if (!pass_->prepare(order, a, options, directives, !unbounded, why)) return false;
  if (!unbounded) {
    auto resident = pass_->run_passes(a.cnt);
    pass_->emit(a.cnt, budget, std::move(resident), out);
    return true;
  }
  // Measure what the rules need with room for everything, then plan with
  // exactly that.
  const auto room = demand_counts(pass_->graph(), pass_->sizes(), a.cls, order);
  pass_->run_passes(room);
  const std::vector<int32_t> need = pass_->peak_in_use;
  auto resident = pass_->run_passes(need);
  pass_->emit(need, budget, std::move(resident), out);
  return true;
}

}  // namespace sa
