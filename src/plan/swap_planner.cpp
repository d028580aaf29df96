#include "plan/swap_planner.h"

#include <algorithm>
#include <climits>

#include <fmt/format.h>

#include "util/error.h"
#include "util/units.h"

namespace sa {
namespace {

using ItemId = int32_t;  // tensors 0..n-1, then op o's workspace at n + o

enum class ItemKind : uint8_t { kTransient, kInput, kPersistent };

struct HeapEntry {
  int64_t key;  // larger = better victim
  ItemId item;
  uint32_t stamp;
  bool operator<(const HeapEntry& o) const { return key != o.key ? key < o.key : item < o.item; }
};

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

struct SwapPlanner::State {
  // Fixed per graph.
  int n = 0, m = 0, num_items = 0;
  std::vector<ItemKind> item_kind;
  std::vector<int64_t> item_bytes;
  std::vector<uint8_t> updated;  // persistent tensor modified during the iteration
  std::vector<int32_t> access_begin;

  // Per plan() call.
  std::vector<int32_t> pos;
  std::vector<double> prefix;  // prefix[i]: op time before position i
  std::vector<int32_t> use_begin, uses;
  std::vector<ClassId> item_class;
  std::vector<int64_t> class_bytes;
  std::vector<int32_t> class_first;  // objects of class c: [class_first[c], class_first[c+1])
  int num_objects = 0;

  // Per pass.
  std::vector<ObjectId> item_obj;
  std::vector<uint8_t> dirty;
  std::vector<int32_t> cursor, last_pos, pinned;
  std::vector<StepId> last_step, arrival;
  std::vector<uint32_t> stamp;
  std::vector<ItemId> obj_tenant;
  std::vector<StepId> rel_compute, rel_copy;
  std::vector<int32_t> rel_pos;
  std::vector<ObjectId> ring;  // free objects, a ring per class over its object range
  std::vector<int32_t> ring_head, ring_size;
  std::vector<std::vector<HeapEntry>> heaps;
  std::vector<HeapEntry> popped;
  std::vector<TempStep> steps;
  std::vector<StepId> waits, scratch;
  std::vector<ObjectId> access_objects;
  std::vector<ResidentTensor> resident_at_end;
};

SwapPlanner::SwapPlanner(const Graph& g, const SizeTable& sizes, std::span<const double> op_us,
                         const DeviceProfile& device)
    : g_(g), sizes_(sizes), op_us_(op_us), device_(device), s_(new State) {
  State& s = *s_;
  s.n = g.num_tensors();
  s.m = g.num_ops();
  s.num_items = s.n + s.m;
  s.item_kind.assign(s.num_items, ItemKind::kTransient);
  s.item_bytes.assign(s.num_items, 0);
  s.updated.assign(s.num_items, 0);
  for (TensorId x = 0; x < s.n; ++x) {
    const TensorKind k = g.tensors[x].kind;
    s.item_kind[x] = is_persistent(k)          ? ItemKind::kPersistent
                     : k == TensorKind::kInput ? ItemKind::kInput
                                               : ItemKind::kTransient;
    s.item_bytes[x] = g.tensors[x].bytes;
  }
  for (OpId o = 0; o < s.m; ++o) {
    s.item_bytes[s.n + o] = g.ops[o].workspace_bytes;
    for (TensorId x : g.ops[o].updates)
      s.updated[x] = 1;
  }
  s.access_begin.assign(s.m + 1, 0);
  for (OpId o = 0; o < s.m; ++o)
    s.access_begin[o + 1] = s.access_begin[o] + num_access_slots(g.ops[o]);
}

SwapPlanner::~SwapPlanner() {
  delete s_;
}

bool SwapPlanner::plan(std::span<const OpId> order, const Allocation& a, int64_t budget,
                       const PlannerOptions& opt, Plan* out, std::string* why) {
  State& s = *s_;
  const int n = s.n, m = s.m;
  SA_CHECK(static_cast<int>(order.size()) == m, "order has {} ops, graph {}", order.size(), m);
  SA_CHECK(is_well_formed(sizes_, a), "malformed allocation");
  const int nc = a.num_classes();

  // Classes, objects and the feasibility of every op.
  s.class_bytes = sa::class_bytes(sizes_, a.cls);
  s.class_first.assign(nc + 1, 0);
  for (int c = 0; c < nc; ++c)
    s.class_first[c + 1] = s.class_first[c] + a.cnt[c];
  s.num_objects = s.class_first[nc];
  int64_t total = 0;
  for (int c = 0; c < nc; ++c)
    total += s.class_bytes[c] * a.cnt[c];
  SA_CHECK(total <= budget, "pool of {} bytes over the budget of {}", total, budget);
  s.item_class.assign(s.num_items, -1);
  for (TensorId x = 0; x < n; ++x)
    s.item_class[x] = a.cls[sizes_.tensor_size[x]];
  for (OpId o = 0; o < m; ++o)
    if (sizes_.workspace_size[o] >= 0) s.item_class[n + o] = a.cls[sizes_.workspace_size[o]];
  {
    const auto need = min_counts(g_, sizes_, a.cls);
    for (int c = 0; c < nc; ++c)
      if (need[c] > a.cnt[c]) {
        if (why)
          *why = fmt::format(
              "class {} ({}) has {} objects but some op touches {} of its items at once", c,
              format_bytes(s.class_bytes[c]), a.cnt[c], need[c]);
        return false;
      }
  }

  // Positions, op-time prefix and every item's uses in position order.
  s.pos.assign(m, 0);
  for (int i = 0; i < m; ++i)
    s.pos[order[i]] = i;
  s.prefix.assign(m + 1, 0);
  for (int i = 0; i < m; ++i)
    s.prefix[i + 1] = s.prefix[i] + op_us_[order[i]];
  s.use_begin.assign(s.num_items + 1, 0);
  for (OpId o = 0; o < m; ++o) {
    for_each_access(g_.ops[o], [&](TensorId x, Access) { ++s.use_begin[x + 1]; });
    if (g_.ops[o].workspace_bytes > 0) ++s.use_begin[n + o + 1];
  }
  for (int x = 0; x < s.num_items; ++x)
    s.use_begin[x + 1] += s.use_begin[x];
  s.uses.resize(s.use_begin[s.num_items]);
  {
    std::vector<int32_t>& fill = s.cursor;  // borrowed as a fill pointer
    fill.assign(s.use_begin.begin(), s.use_begin.end() - 1);
    for (int i = 0; i < m; ++i) {
      const OpId o = order[i];
      for_each_access(g_.ops[o], [&](TensorId x, Access) { s.uses[fill[x]++] = i; });
      if (g_.ops[o].workspace_bytes > 0) s.uses[fill[n + o]++] = i;
    }
  }

  auto num_uses = [&](ItemId x) { return s.use_begin[x + 1] - s.use_begin[x]; };
  auto copy_us_in = [&](ItemId x) { return s.item_bytes[x] / device_.h2d_bytes_per_us(); };
  auto copy_us_out = [&](ItemId x) { return s.item_bytes[x] / device_.d2h_bytes_per_us(); };

  // Victim key: larger is evicted first.
  auto victim_key = [&](ItemId x) -> int64_t {
    if (opt.eviction == EvictionPolicy::kLru) return -static_cast<int64_t>(s.last_pos[x]);
    if (s.cursor[x] < num_uses(x)) return s.uses[s.use_begin[x] + s.cursor[x]];
    // Persistent tensors are next used in the next iteration.
    return num_uses(x) > 0 ? static_cast<int64_t>(m) + s.uses[s.use_begin[x]] : INT64_MAX / 2;
  };
  auto push_heap_entry = [&](ItemId x) {
    auto& h = s.heaps[s.item_class[x]];
    h.push_back({victim_key(x), x, s.stamp[x]});
    std::push_heap(h.begin(), h.end());
  };
  auto emit = [&](StepKind kind, int32_t subject, ObjectId obj, int32_t key_pos,
                  std::initializer_list<StepId> waits) -> StepId {
    const int32_t begin = static_cast<int32_t>(s.waits.size());
    for (StepId w : waits)
      if (w >= 0) s.waits.push_back(w);
    s.steps.push_back({kind, subject, obj, key_pos, begin, static_cast<int32_t>(s.waits.size())});
    return static_cast<StepId>(s.steps.size()) - 1;
  };
  auto release = [&](ObjectId obj, StepId compute, StepId copy, int32_t pos) {
    s.rel_compute[obj] = compute;
    s.rel_copy[obj] = copy;
    s.rel_pos[obj] = pos;
    s.obj_tenant[obj] = -1;
  };
  auto ring_push = [&](ClassId c, ObjectId obj) {
    const int32_t cap = s.class_first[c + 1] - s.class_first[c];
    s.ring[s.class_first[c] + (s.ring_head[c] + s.ring_size[c]) % cap] = obj;
    ++s.ring_size[c];
  };
  auto ring_pop = [&](ClassId c) -> ObjectId {
    if (s.ring_size[c] == 0) return kNoObject;
    const int32_t cap = s.class_first[c + 1] - s.class_first[c];
    const ObjectId obj = s.ring[s.class_first[c] + s.ring_head[c]];
    s.ring_head[c] = (s.ring_head[c] + 1) % cap;
    --s.ring_size[c];
    return obj;
  };
  auto needs_copy = [&](ItemId v) {
    return s.dirty[v] && (s.cursor[v] < num_uses(v) || s.item_kind[v] == ItemKind::kPersistent);
  };
  auto evict = [&](ItemId v) {
    const ObjectId obj = s.item_obj[v];
    const StepKind kind = needs_copy(v) ? StepKind::kSwapOut : StepKind::kDrop;
    const StepId step = emit(kind, v, obj, s.last_pos[v], {s.last_step[v]});
    if (kind == StepKind::kSwapOut) s.dirty[v] = 0;
    release(obj, s.last_step[v], step, s.last_pos[v]);
    s.item_obj[v] = kNoObject;
    ++s.stamp[v];
  };
  // An object of x's class for x, needed before position i.
  auto acquire = [&](ItemId x, int i, bool swap_in) -> ObjectId {
    const ClassId c = s.item_class[x];
    ObjectId obj = ring_pop(c);
    if (obj != kNoObject) return obj;
    auto& h = s.heaps[c];
    s.popped.clear();
    int chosen = -1, first_valid = -1, valid = 0;
    while (!h.empty() && valid < opt.threshold_scan) {
      std::pop_heap(h.begin(), h.end());
      const HeapEntry e = h.back();
      h.pop_back();
      const ItemId v = e.item;
      if (e.stamp != s.stamp[v] || s.item_obj[v] == kNoObject) continue;  // stale
      s.popped.push_back(e);
      if (s.pinned[v] == i) continue;
      ++valid;
      if (first_valid < 0) first_valid = static_cast<int>(s.popped.size()) - 1;
      const double need = (swap_in ? copy_us_in(x) : 0.0) + (needs_copy(v) ? copy_us_out(v) : 0.0);
      const double elapsed = s.prefix[i] - s.prefix[s.last_pos[v] + 1];
      if (elapsed >= opt.eviction_threshold * need) {
        chosen = static_cast<int>(s.popped.size()) - 1;
        break;
      }
    }
    if (chosen < 0) chosen = first_valid;
    for (int k = 0; k < static_cast<int>(s.popped.size()); ++k) {
      if (k == chosen) continue;
      h.push_back(s.popped[k]);
      std::push_heap(h.begin(), h.end());
    }
    if (chosen < 0) return kNoObject;
    const ItemId v = s.popped[chosen].item;
    obj = s.item_obj[v];
    evict(v);
    return obj;
  };

  // One pass over the order, starting with `resident` on the device. Fills
  // s.steps/s.waits/s.access_objects and s.resident_at_end; returns whether
  // every tensor of `resident` ends in its starting object.
  auto run_pass = [&](const std::vector<ResidentTensor>& resident) -> bool {
    const int items = s.num_items;
    s.item_obj.assign(items, kNoObject);
    s.dirty.assign(items, 0);
    s.cursor.assign(items, 0);
    s.last_pos.assign(items, -1);
    s.pinned.assign(items, -1);
    s.last_step.assign(items, -1);
    s.arrival.assign(items, -1);
    s.stamp.assign(items, 0);
    s.obj_tenant.assign(s.num_objects, -1);
    s.rel_compute.assign(s.num_objects, -1);
    s.rel_copy.assign(s.num_objects, -1);
    s.rel_pos.assign(s.num_objects, -1);
    s.ring.assign(s.num_objects, kNoObject);
    s.ring_head.assign(nc, 0);
    s.ring_size.assign(nc, 0);
    s.heaps.resize(nc);
    for (auto& h : s.heaps)
      h.clear();
    s.steps.clear();
    s.waits.clear();
    s.access_objects.assign(s.access_begin[m], kNoObject);
    s.resident_at_end.clear();

    for (const ResidentTensor& r : resident) {
      s.item_obj[r.tensor] = r.object;
      s.obj_tenant[r.object] = r.tensor;
      s.dirty[r.tensor] = s.updated[r.tensor];
      push_heap_entry(r.tensor);
    }
    for (ClassId c = 0; c < nc; ++c)
      for (ObjectId obj = s.class_first[c]; obj < s.class_first[c + 1]; ++obj)
        if (s.obj_tenant[obj] < 0) ring_push(c, obj);

    for (int i = 0; i < m; ++i) {
      const OpId o = order[i];
      const Op& op = g_.ops[o];
      for_each_access(op, [&](TensorId x, Access) { s.pinned[x] = i; });
      const bool has_ws = op.workspace_bytes > 0;
      if (has_ws) s.pinned[n + o] = i;
      s.scratch.clear();
      int slot = s.access_begin[o];
      bool ok = true;
      auto place = [&](ItemId x, Access access) {
        if (!ok) return;
        if (access == Access::kCreate) {
          const ObjectId obj = acquire(x, i, false);
          if (obj == kNoObject) return void(ok = false);
          s.item_obj[x] = obj;
          s.obj_tenant[obj] = x;
          if (s.rel_copy[obj] >= 0) s.scratch.push_back(s.rel_copy[obj]);
        } else if (s.item_obj[x] == kNoObject) {
          const ObjectId obj = acquire(x, i, true);
          if (obj == kNoObject) return void(ok = false);
          s.arrival[x] = emit(StepKind::kSwapIn, x, obj, s.rel_pos[obj],
                              {s.rel_compute[obj], s.rel_copy[obj]});
          s.item_obj[x] = obj;
          s.obj_tenant[obj] = x;
        }
        if (s.arrival[x] >= 0) {
          s.scratch.push_back(s.arrival[x]);
          s.arrival[x] = -1;
        }
        s.access_objects[slot++] = s.item_obj[x];
      };
      for_each_access(op, [&](TensorId x, Access a) { place(x, a); });
      if (has_ws) place(n + o, Access::kCreate);
      SA_CHECK(ok, "no object for op {} at position {} despite the minimum counts", o, i);
      std::sort(s.scratch.begin(), s.scratch.end());
      s.scratch.erase(std::unique(s.scratch.begin(), s.scratch.end()), s.scratch.end());
      const int32_t wb = static_cast<int32_t>(s.waits.size());
      s.waits.insert(s.waits.end(), s.scratch.begin(), s.scratch.end());
      s.steps.push_back(
          {StepKind::kCompute, o, kNoObject, i, wb, static_cast<int32_t>(s.waits.size())});
      const StepId c = static_cast<StepId>(s.steps.size()) - 1;

      auto after = [&](ItemId x, Access access) {
        s.last_step[x] = c;
        s.last_pos[x] = i;
        ++s.cursor[x];
        if (access != Access::kRead) s.dirty[x] = 1;
        ++s.stamp[x];  // its heap entry is stale: key changed
        const ObjectId obj = s.item_obj[x];
        if (s.cursor[x] < num_uses(x) || s.item_kind[x] == ItemKind::kPersistent) {
          push_heap_entry(x);
          return;
        }
        // Last use in the iteration: transients die, inputs are dropped.
        StepId copy = -1;
        if (s.item_kind[x] == ItemKind::kInput) copy = emit(StepKind::kDrop, x, obj, i, {c});
        release(obj, c, copy, i);
        s.item_obj[x] = kNoObject;
        ring_push(s.item_class[x], obj);
      };
      for_each_access(op, [&](TensorId x, Access a) { after(x, a); });
      if (has_ws) after(n + o, Access::kCreate);
    }

    // The end of the iteration: tensors of `resident` that are still in their
    // objects stay; every other persistent tensor on the device is written
    // back if modified, else dropped.
    std::vector<uint8_t> keep(s.num_objects, 0);
    bool consistent = true;
    for (const ResidentTensor& r : resident) {
      if (s.item_obj[r.tensor] == r.object)
        keep[r.object] = 1;
      else
        consistent = false;
    }
    for (TensorId x = 0; x < n; ++x) {
      const ObjectId obj = s.item_obj[x];
      if (obj == kNoObject) continue;
      SA_CHECK(s.item_kind[x] == ItemKind::kPersistent, "tensor {} resident after its last use", x);
      s.resident_at_end.push_back({x, obj});
      if (keep[obj]) continue;
      const StepKind kind = s.dirty[x] ? StepKind::kSwapOut : StepKind::kDrop;
      emit(kind, x, obj, s.last_pos[x], {s.last_step[x]});
    }
    return consistent;
  };

  std::vector<ResidentTensor> resident;
  run_pass(resident);
  if (opt.steady_state && !s.resident_at_end.empty()) {
    resident = s.resident_at_end;
    bool consistent = false;
    for (int pass = 0; pass < opt.max_passes && !resident.empty(); ++pass) {
      if (run_pass(resident)) {
        consistent = true;
        break;
      }
      // Keep the tensors of R that stayed in their objects.
      std::vector<ResidentTensor> kept;
      for (const ResidentTensor& r : resident)
        if (s.item_obj[r.tensor] == r.object) kept.push_back(r);
      resident = std::move(kept);
    }
    if (!consistent) {
      resident.clear();
      run_pass(resident);
    }
  }

  // Order the steps: counting sort on (key_pos, rank), stable.
  Plan& p = *out;
  p.clear();
  const int num_steps = static_cast<int>(s.steps.size());
  const int buckets = (m + 1) * 3;
  std::vector<int32_t> bucket_begin(buckets + 1, 0);
  auto bucket_of = [&](const TempStep& t) { return (t.key_pos + 1) * 3 + rank_of(t.kind); };
  for (const TempStep& t : s.steps)
    ++bucket_begin[bucket_of(t) + 1];
  for (int b = 0; b < buckets; ++b)
    bucket_begin[b + 1] += bucket_begin[b];
  std::vector<StepId> new_id(num_steps);
  for (int k = 0; k < num_steps; ++k)
    new_id[k] = bucket_begin[bucket_of(s.steps[k])]++;
  p.steps.resize(num_steps);
  std::vector<StepId> old_of(num_steps);
  for (int k = 0; k < num_steps; ++k)
    old_of[new_id[k]] = k;
  p.waits.reserve(s.waits.size());
  for (StepId id = 0; id < num_steps; ++id) {
    const TempStep& t = s.steps[old_of[id]];
    Step& st = p.steps[id];
    st.kind = t.kind;
    st.subject = t.subject;
    st.object = t.object;
    st.wait_begin = static_cast<int32_t>(p.waits.size());
    for (int w = t.wait_begin; w < t.wait_end; ++w) {
      const StepId target = new_id[s.waits[w]];
      SA_CHECK(target < id, "step {} waits for later step {}", id, target);
      p.waits.push_back(target);
    }
    st.wait_end = static_cast<int32_t>(p.waits.size());
  }

  p.memory_budget = budget;
  p.order.assign(order.begin(), order.end());
  p.pool.class_bytes = s.class_bytes;
  p.pool.class_count = a.cnt;
  p.pool.finalize();
  p.tensor_class.assign(s.item_class.begin(), s.item_class.begin() + n);
  p.workspace_class.assign(s.item_class.begin() + n, s.item_class.end());
  p.access_begin = s.access_begin;
  p.access_objects = s.access_objects;
  p.initial_resident = resident;
  std::sort(p.initial_resident.begin(), p.initial_resident.end(),
            [](const ResidentTensor& a, const ResidentTensor& b) { return a.tensor < b.tensor; });
  return true;
}

}  // namespace sa
