#include "plan/swap_planner.h"

#include <algorithm>
#include <climits>
#include <queue>
#include <tuple>

#include <fmt/format.h>

#include "plan/simulator.h"
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
  SimResult picked;                  // the simulation that chose the deadline order
  bool has_picked = false;           // in the last emit()
  int num_ops() const { return m_; }
  const Graph& graph() const { return g_; }
  const SizeTable& sizes() const { return sizes_; }

 private:
  bool run(const std::vector<ResidentTensor>& resident, bool fix_up);
  std::vector<int32_t> by_key(std::span<const int32_t> visit) const;
  void write_plan(std::span<const int32_t> visit, std::span<const int32_t> cnt, int64_t budget,
                  const std::vector<ResidentTensor>& resident, Plan* out,
                  std::vector<StepId>* old_of);
  bool order_copies(const Plan& p, std::span<const StepId> old_of, std::vector<int32_t>* visit);
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
  Simulator sim_;  // for the deadline order
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

// Note [Copy order]: the copy streams' orders, chosen while the plan (its
// copies in release order) is simulated: on each stream, earliest deadline
// first among the copies that can start, unless that one's key would pass
// the deadline of another still to place.
class DeadlinePicker final : public CopyPicker {
 public:
  // One copy stream's steps (in plan order) with their release keys and
  // deadlines.
  struct Lane {
    std::vector<StepId> steps;
    std::vector<int32_t> key, deadline;
  };

  // lanes[0]: the swap-ins, lanes[1]: the swap-outs; computes: the plan's
  // compute steps in order.
  DeadlinePicker(const Plan& p, Lane in, Lane out, std::vector<StepId> computes)
      : p_(p), computes_(std::move(computes)), index_(p.num_steps(), -1) {
    lanes_[0].init(std::move(in));
    lanes_[1].init(std::move(out));
    for (const State& l : lanes_)
      for (size_t k = 0; k < l.steps.size(); ++k)
        index_[l.steps[k]] = static_cast<int32_t>(k);
  }

  StepId pick(Stream st, const std::function<bool(StepId)>& done) override {
    State& l = lanes_[st == Stream::kH2D ? 0 : 1];
    // Copies enter the heap once the op at their key has run.
    while (computes_done_ < computes_.size() && done(computes_[computes_done_]))
      ++computes_done_;
    while (l.next_released < l.steps.size() &&
           l.key[l.next_released] < static_cast<int32_t>(computes_done_))
      l.heap.push(static_cast<int32_t>(l.next_released++));
    while (l.placed[l.by_deadline[l.next_urgent]])
      ++l.next_urgent;
    const int32_t urgent = l.by_deadline[l.next_urgent];
    auto can_start = [&](int32_t k) {
      for (StepId w : p_.waits_of(l.steps[k]))
        if (!done(w)) return false;
      return true;
    };
    int32_t chosen = -1;
    stash_.clear();
    while (!l.heap.empty()) {
      const int32_t k = l.heap.top();
      l.heap.pop();
      if (l.placed[k]) continue;
      if (can_start(k)) {
        chosen = k;
        break;
      }
      stash_.push_back(k);
    }
    for (int32_t k : stash_)
      l.heap.push(k);
    if (chosen >= 0 && earliest_key(l, chosen) >= l.deadline[urgent]) {
      l.heap.push(chosen);
      chosen = can_start(urgent) ? urgent : -1;
    }
    if (chosen < 0) return -1;
    l.placed[chosen] = 1;
    l.sequence.push_back(chosen);
    l.floor = std::max(l.floor, earliest_key(l, chosen));
    SA_CHECK(l.floor < l.deadline[chosen], "copy step {} keyed at {}, after its first user at {}",
             l.steps[chosen], l.floor, l.deadline[chosen]);
    l.new_key[chosen] = l.floor;
    return l.steps[chosen];
  }

  bool exhausted(Stream st) const override {
    const State& l = lanes_[st == Stream::kH2D ? 0 : 1];
    return l.sequence.size() == l.steps.size();
  }

  // Of lane i (0: swap-ins, 1: swap-outs): the picked order (indices into
  // its steps), and of its k-th step, the plan step and its new key.
  const std::vector<int32_t>& sequence(int i) const { return lanes_[i].sequence; }
  StepId step(int i, int32_t k) const { return lanes_[i].steps[k]; }
  int32_t key(int i, int32_t k) const { return lanes_[i].new_key[k]; }

 private:
  struct State : Lane {
    void init(Lane lane) {
      static_cast<Lane&>(*this) = std::move(lane);
      new_key = key;
      placed.assign(steps.size(), 0);
      by_deadline.resize(steps.size());
      for (size_t k = 0; k < steps.size(); ++k)
        by_deadline[k] = static_cast<int32_t>(k);
      std::sort(by_deadline.begin(), by_deadline.end(),
                [&](int32_t a, int32_t b) { return urgency(a) < urgency(b); });
      sequence.reserve(steps.size());
      heap = Heap(Later{this});
    }
    std::tuple<int32_t, int32_t, int32_t> urgency(int32_t k) const {
      return {deadline[k], key[k], k};
    }
    struct Later {
      const State* self;
      bool operator()(int32_t a, int32_t b) const { return self->urgency(a) > self->urgency(b); }
    };
    using Heap = std::priority_queue<int32_t, std::vector<int32_t>, Later>;

    std::vector<int32_t> new_key, by_deadline, sequence;
    std::vector<uint8_t> placed;
    Heap heap{Later{nullptr}};
    size_t next_released = 0, next_urgent = 0;
    int32_t floor = -1;
  };

  // The smallest key copy k of lane l can take: its release key, and no
  // earlier than the copies it waits for (a swap-in waits for the swap-out
  // that frees its object), which have been placed.
  int32_t earliest_key(const State& l, int32_t k) const {
    int32_t at = l.key[k];
    for (StepId w : p_.waits_of(l.steps[k]))
      if (p_.steps[w].kind == StepKind::kSwapOut) at = std::max(at, lanes_[1].new_key[index_[w]]);
    return at;
  }

  const Plan& p_;
  std::vector<StepId> computes_;
  std::vector<int32_t> index_;  // plan step -> its index in its lane
  State lanes_[2];
  std::vector<int32_t> stash_;
  size_t computes_done_ = 0;
};

// Rekeys the copies of the plan p, written from `*visit`, and puts them into
// *visit in the order a DeadlinePicker chooses. Leaves everything as it is
// (and returns false) when the plan has no copy, or when a step waits for a
// copy in a way the picker does not handle (a drop or swap-out waiting for a
// copy, a swap-in for a swap-in), which only directives make happen.
bool SwapPlanner::Pass::order_copies(const Plan& p, std::span<const StepId> old_of,
                                     std::vector<int32_t>* visit) {
  DeadlinePicker::Lane lanes[2];
  std::vector<int32_t> lane_of(p.num_steps(), -1), index(p.num_steps(), -1);
  for (StepId s = 0; s < p.num_steps(); ++s) {
    const StepKind kind = p.steps[s].kind;
    if (kind != StepKind::kSwapIn && kind != StepKind::kSwapOut) continue;
    DeadlinePicker::Lane& l = lanes[kind == StepKind::kSwapIn ? 0 : 1];
    lane_of[s] = kind == StepKind::kSwapIn ? 0 : 1;
    index[s] = static_cast<int32_t>(l.steps.size());
    l.steps.push_back(s);
    l.key.push_back(steps_[old_of[s]].key_pos);
    l.deadline.push_back(m_);
  }
  if (lanes[0].steps.empty() && lanes[1].steps.empty()) return false;
  // Deadlines: a copy's first user among the ops, and a swap-out is due
  // before the swap-ins that wait for it are.
  std::vector<StepId> computes;
  for (StepId s = 0; s < p.num_steps(); ++s) {
    const StepKind kind = p.steps[s].kind;
    for (StepId w : p.waits_of(s)) {
      if (lane_of[w] < 0) continue;
      if (kind == StepKind::kCompute) {
        int32_t& d = lanes[lane_of[w]].deadline[index[w]];
        d = std::min(d, static_cast<int32_t>(computes.size()));
      } else if (kind != StepKind::kSwapIn || lane_of[w] != 1) {
        return false;
      }
    }
    if (kind == StepKind::kCompute) computes.push_back(s);
  }
  for (size_t k = 0; k < lanes[0].steps.size(); ++k)
    for (StepId w : p.waits_of(lanes[0].steps[k]))
      if (lane_of[w] == 1) {
        int32_t& d = lanes[1].deadline[index[w]];
        d = std::min(d, lanes[0].deadline[k]);
      }
  DeadlinePicker picker(p, std::move(lanes[0]), std::move(lanes[1]), std::move(computes));
  picked = sim_.run(g_, p, op_us_, device_, picker);
  SA_CHECK(picked.ok, "the deadline order of the copies: {}", picked.error);
  // The copies take their stream's slots of *visit in the picked order.
  size_t next[2] = {0, 0};
  for (int32_t& k : *visit) {
    const StepKind kind = steps_[k].kind;
    if (kind != StepKind::kSwapIn && kind != StepKind::kSwapOut) continue;
    const int i = kind == StepKind::kSwapIn ? 0 : 1;
    const int32_t chosen = picker.sequence(i)[next[i]++];
    k = old_of[picker.step(i, chosen)];
    steps_[k].key_pos = picker.key(i, chosen);
  }
  return true;
}

// Writes the steps into *out sorted on (key_pos, rank), stably in the order
// of `visit`; *old_of[k] is the step that went k-th.
void SwapPlanner::Pass::write_plan(std::span<const int32_t> visit, std::span<const int32_t> cnt,
                                   int64_t budget, const std::vector<ResidentTensor>& resident,
                                   Plan* out, std::vector<StepId>* old_of_out) {
  Plan& p = *out;
  p.clear();
  const int num_steps = static_cast<int>(steps_.size());
  *old_of_out = by_key(visit);
  const std::vector<StepId>& old_of = *old_of_out;
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
  p.initial_resident = resident;
  std::sort(p.initial_resident.begin(), p.initial_resident.end(),
            [](const ResidentTensor& a, const ResidentTensor& b) { return a.tensor < b.tensor; });
}

void SwapPlanner::Pass::emit(std::span<const int32_t> cnt, int64_t budget,
                             std::vector<ResidentTensor> resident, Plan* out) {
  const int num_steps = static_cast<int>(steps_.size());
  std::vector<int32_t> visit(num_steps);
  for (int k = 0; k < num_steps; ++k)
    visit[k] = k;
  std::vector<StepId> old_of;
  has_picked = false;
  write_plan(visit, cnt, budget, resident, out, &old_of);
  // In deadline order, the plan just written (release order) is simulated
  // to choose the order of its copies, then written again.
  if (opt_.deadline_copy_order && dir_ == nullptr && order_copies(*out, old_of, &visit)) {
    write_plan(visit, cnt, budget, resident, out, &old_of);
    has_picked = true;
  }
}

SwapPlanner::SwapPlanner(const Graph& g, const SizeTable& sizes, std::span<const double> op_us,
                         const DeviceProfile& device)
    : pass_(std::make_unique<Pass>(g, sizes, op_us, device)) {}

SwapPlanner::~SwapPlanner() = default;

const SimResult* SwapPlanner::simulation() const {
  return pass_->has_picked ? &pass_->picked : nullptr;
}

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
