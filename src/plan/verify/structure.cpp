// S1-S6 (Note [Verified rules]): the plan's tables, objects and steps are
// well formed before anything runs.

#include "plan/host_tier.h"
#include "plan/verify/verifier.h"

namespace sa::verifier {

bool Verifier::structure() {
  return structure_layout() && (arena_ ? structure_arena() : structure_classes()) &&
         structure_accesses() && structure_steps() && structure_resident() && structure_host();
}

// S7: the host tier (Note [Host tier], plan/host_tier.h).
bool Verifier::structure_host() {
  if (p_.host_budget < 0) return fail("the host budget is negative ({} bytes)", p_.host_budget);
  if (p_.host_budget == 0) {
    if (!p_.nvme_tensors.empty())
      return fail("the plan keeps {} tensors on NVMe without a host budget",
                  p_.nvme_tensors.size());
    return true;
  }
  const std::vector<uint8_t> slot = host_slots(g_, p_);
  for (size_t i = 0; i < p_.nvme_tensors.size(); ++i) {
    const TensorId t = p_.nvme_tensors[i];
    if (t < 0 || t >= g_.num_tensors())
      return fail("nvme_tensors[{}] is {}, not a tensor of the graph", i, t);
    if (i > 0 && t <= p_.nvme_tensors[i - 1])
      return fail("nvme_tensors is not in ascending order, each tensor once, at entry {}", i);
    if (!slot[t])
      return fail("{} is kept on NVMe, but never leaves the device (it has no host slot)",
                  tensor(t));
  }
  const HostUse u = host_use(g_, p_);
  if (u.total() > p_.host_budget)
    return fail("the host slots take {} bytes{}, over the host budget of {} bytes", u.total(),
                u.staging_bytes > 0 ? fmt::format(" with {} of NVMe staging", u.staging_bytes)
                                    : std::string(),
                p_.host_budget);
  return true;
}

// S1: the allocator and the shape of the access tables.
bool Verifier::structure_layout() {
  const int n = g_.num_tensors();
  const int m = g_.num_ops();
  // S1
  arena_ = p_.allocator == Allocator::kArena;
  if (p_.allocator != Allocator::kArena && p_.allocator != Allocator::kSizeClass)
    return fail("the plan has an unknown allocator {}", static_cast<int>(p_.allocator));
  if (arena_) {
    if (!p_.tensor_class.empty() || !p_.workspace_class.empty() || p_.pool.num_classes() > 0)
      return fail(
          "the plan places its objects in the arena (allocator arena), but it also has size "
          "classes ({} tensor_class and {} workspace_class entries, {} pool classes)",
          p_.tensor_class.size(), p_.workspace_class.size(), p_.pool.num_classes());
  } else {
    if (p_.tensor_class.size() != static_cast<size_t>(n))
      return fail("tensor_class has {} entries, but the graph has {} tensors",
                  p_.tensor_class.size(), n);
    if (p_.workspace_class.size() != static_cast<size_t>(m))
      return fail("workspace_class has {} entries, but the graph has {} ops",
                  p_.workspace_class.size(), m);
  }
  if (p_.access_begin.size() != static_cast<size_t>(m) + 1)
    return fail("access_begin has {} entries, but the graph has {} ops (it needs {})",
                p_.access_begin.size(), m, m + 1);
  if (p_.access_begin[0] != 0) return fail("access_begin[0] is {}, not 0", p_.access_begin[0]);
  for (OpId o = 0; o < m; ++o) {
    const int64_t have = int64_t{p_.access_begin[o + 1]} - p_.access_begin[o];
    const int want = num_access_slots(g_.ops[o]);
    if (have != want)
      return fail(
          "access_begin gives {} {} object slots (access_begin[{}] = {}, "
          "access_begin[{}] = {}), but it has {} (its accesses{})",
          op(o), have, o, p_.access_begin[o], o + 1, p_.access_begin[o + 1], want,
          g_.ops[o].workspace_bytes > 0 ? " and its workspace" : "");
  }
  if (p_.access_objects.size() != static_cast<size_t>(p_.access_begin[m]))
    return fail("access_objects has {} entries, but access_begin[{}] is {}",
                p_.access_objects.size(), m, p_.access_begin[m]);
  return true;
}

// S4: every access's object exists and fits it (its class, or its bytes).
bool Verifier::structure_accesses() {
  const int m = g_.num_ops();
  // S4
  for (OpId o = 0; o < m; ++o) {
    const Op& oo = g_.ops[o];
    const int32_t base = p_.access_begin[o];
    int k = 0;
    bool ok = true;
    for_each_access(oo, [&](TensorId t, Access a) {
      if (!ok) return;
      const ObjectId x = p_.access_objects[base + k];
      if (!object_exists(x))
        ok = fail("{}, access {} ({} {}), uses object {}, but the pool has {} objects", op(o), k,
                  verb(a), tensor(t), x, num_objects_);
      else if (arena_) {
        if (const std::string why = too_small(x, g_.tensors[t].bytes); !why.empty())
          ok = fail("{}, access {} ({} {}), uses object {}, but {} bytes", op(o), k, verb(a),
                    tensor(t), x, why);
      } else if (class_of(x) != p_.tensor_class[t])
        ok = fail(
            "{}, access {} ({} {}), uses object {} of class {}, but the tensor is in "
            "class {}",
            op(o), k, verb(a), tensor(t), x, class_of(x), p_.tensor_class[t]);
      ++k;
    });
    if (!ok) return false;
    if (oo.workspace_bytes > 0) {
      const ObjectId x = p_.access_objects[base + k];
      if (!object_exists(x))
        return fail("{} puts its workspace in object {}, but the pool has {} objects", op(o), x,
                    num_objects_);
      if (arena_) {
        if (const std::string why = too_small(x, oo.workspace_bytes); !why.empty())
          return fail("{} puts its workspace in object {}, but {} workspace bytes", op(o), x, why);
      } else if (class_of(x) != p_.workspace_class[o])
        return fail(
            "{} puts its workspace in object {} of class {}, but its workspace_class "
            "is {}",
            op(o), x, class_of(x), p_.workspace_class[o]);
    }
  }
  return true;
}

// S5: every step names what exists, and waits only for earlier steps.
bool Verifier::structure_steps() {
  const int n = g_.num_tensors();
  const int m = g_.num_ops();
  // S5
  const int64_t num_waits = static_cast<int64_t>(p_.waits.size());
  for (StepId s = 0; s < p_.num_steps(); ++s) {
    const Step& st = p_.steps[s];
    switch (st.kind) {
      case StepKind::kCompute:
        if (st.op() < 0 || st.op() >= m)
          return fail("step {} (compute) names op {}, but the graph has {} ops", s, st.op(), m);
        if (st.object != kNoObject)
          return fail("{} names object {}; a compute step's objects are in access_objects", step(s),
                      st.object);
        break;
      case StepKind::kRecompute: {
        if (st.op() < 0 || st.op() >= m)
          return fail("step {} (recompute) names op {}, but the graph has {} ops", s, st.op(), m);
        const Op& oo = g_.ops[st.op()];
        if (!may_recompute(oo) && !may_replay_update(g_, oo)) {
          std::string why = "the graph marks it recompute: false";
          if (oo.recompute && !oo.updates.empty()) {
            why =
                "it updates tensors in place and creates tensors, and the graph does not mark "
                "it recompute_skips_updates";
            for (TensorId t : oo.updates)
              if (!is_transient(g_.tensors[t].kind))
                why = fmt::format(
                    "it updates {} in place, and only in-place updates of transients are "
                    "replayed",
                    tensor(t));
          } else if (oo.recompute) {
            why = "it has no outputs";
          }
          return fail("{}: {} may not run again ({})", step(s), op(st.op()), why);
        }
        const int64_t want = num_step_slots(oo, true);
        if (st.obj_begin < 0 || st.obj_end < st.obj_begin ||
            st.obj_end > static_cast<int64_t>(p_.recompute_objects.size()) ||
            st.obj_end - st.obj_begin != want)
          return fail("{} has objects [{}, {}) of recompute_objects, but its op needs {}", step(s),
                      st.obj_begin, st.obj_end, want);
        const auto objs = p_.objects_of_step(s);
        int k = 0;
        bool ok = true;
        auto fits = [&](ObjectId x, int64_t bytes, ClassId c, const std::string& what) {
          if (!ok) return;
          if (!object_exists(x))
            ok = fail("{} puts {} in object {}, but the pool has {} objects", step(s), what, x,
                      num_objects_);
          else if (arena_ && !too_small(x, bytes).empty())
            ok = fail("{} puts {} in object {}, but {}", step(s), what, x, too_small(x, bytes));
          else if (!arena_ && class_of(x) != c)
            ok = fail("{} puts {} in object {} of class {}, but it is in class {}", step(s), what,
                      x, class_of(x), c);
        };
        for_each_step_access(oo, true, [&](TensorId t, Access) {
          fits(objs[k++], g_.tensors[t].bytes, arena_ ? -1 : p_.tensor_class[t], tensor(t));
        });
        if (oo.workspace_bytes > 0)
          fits(objs[k], oo.workspace_bytes, arena_ ? -1 : p_.workspace_class[st.op()],
               "its workspace");
        if (!ok) return false;
        break;
      }
      case StepKind::kSwapIn:
      case StepKind::kSwapOut:
      case StepKind::kDrop:
        if (st.tensor() < 0 || st.tensor() >= n)
          return fail("step {} ({}) names tensor {}, but the graph has {} tensors", s,
                      to_string(st.kind), st.tensor(), n);
        if (!object_exists(st.object))
          return fail("{} names object {}, but the pool has {} objects", step(s), st.object,
                      num_objects_);
        if (arena_) {
          if (const std::string why = too_small(st.object, g_.tensors[st.tensor()].bytes);
              !why.empty())
            return fail("{} uses object {}, but {} bytes", step(s), st.object, why);
        } else if (class_of(st.object) != p_.tensor_class[st.tensor()])
          return fail("{} uses object {} of class {}, but the tensor is in class {}", step(s),
                      st.object, class_of(st.object), p_.tensor_class[st.tensor()]);
        break;
      default:
        return fail("step {} has an unknown kind {}", s, static_cast<int>(st.kind));
    }
    if (st.wait_begin < 0 || st.wait_end < st.wait_begin || st.wait_end > num_waits)
      return fail("{} has waits [{}, {}), outside the plan's {} waits", step(s), st.wait_begin,
                  st.wait_end, num_waits);
    for (StepId w : p_.waits_of(s))
      if (w < 0 || w >= s)
        return fail("{} waits for step {}, which is not an earlier step", step(s), w);
  }
  return true;
}

// S6: the initial resident set, and the objects indexed.
bool Verifier::structure_resident() {
  const int n = g_.num_tensors();
  // S6 (ranges; uniqueness of objects below, once objects are indexed)
  init_obj_.assign(n, kNoObject);
  for (const ResidentTensor& r : p_.initial_resident) {
    if (r.tensor < 0 || r.tensor >= n)
      return fail("initial_resident names tensor {}, but the graph has {} tensors", r.tensor, n);
    const TensorKind kind = g_.tensors[r.tensor].kind;
    if (!is_persistent(kind))
      return fail("initial_resident names {}, which is {}, not a persistent tensor",
                  tensor(r.tensor), with_article(kind));
    if (init_obj_[r.tensor] != kNoObject)
      return fail("initial_resident names {} twice", tensor(r.tensor));
    if (!object_exists(r.object))
      return fail("initial_resident puts {} in object {}, but the pool has {} objects",
                  tensor(r.tensor), r.object, num_objects_);
    if (arena_) {
      if (const std::string why = too_small(r.object, g_.tensors[r.tensor].bytes); !why.empty())
        return fail("initial_resident puts {} in object {}, but {} bytes", tensor(r.tensor),
                    r.object, why);
    } else if (class_of(r.object) != p_.tensor_class[r.tensor])
      return fail(
          "initial_resident puts {} in object {} of class {}, but the tensor is in "
          "class {}",
          tensor(r.tensor), r.object, class_of(r.object), p_.tensor_class[r.tensor]);
    init_obj_[r.tensor] = r.object;
  }

  // Index the objects: densely, unless the pool has far more objects than the
  // plan names (a hostile plan must not make us allocate gigabytes).
  const int64_t refs = static_cast<int64_t>(p_.access_objects.size()) + p_.num_steps() +
                       static_cast<int64_t>(p_.recompute_objects.size()) +
                       static_cast<int64_t>(p_.initial_resident.size());
  dense_ = num_objects_ <= 4 * refs + 4096;
  int32_t num_local = num_objects_;
  if (!dense_) {
    ids_.clear();
    ids_.reserve(refs);
    ids_.insert(ids_.end(), p_.access_objects.begin(), p_.access_objects.end());
    for (const Step& st : p_.steps)
      if (!st.runs_op()) ids_.push_back(st.object);
    ids_.insert(ids_.end(), p_.recompute_objects.begin(), p_.recompute_objects.end());
    for (const ResidentTensor& r : p_.initial_resident)
      ids_.push_back(r.object);
    std::sort(ids_.begin(), ids_.end());
    ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
    num_local = static_cast<int32_t>(ids_.size());
  }
  tenant_.assign(num_local, kFree);
  prev_.assign(num_local, Occupant());
  touch_.assign(num_local, {});
  ghost_.assign(num_local, -1);
  ghosts_.clear();
  for (auto& t : touch_)
    t.fill(-1);
  for (const ResidentTensor& r : p_.initial_resident) {
    TensorId& who = tenant_[loc(r.object)];
    if (who != kFree)
      return fail("initial_resident puts both {} and {} in object {}", tensor(who),
                  tensor(r.tensor), r.object);
    who = r.tensor;
    prev_[loc(r.object)] = Occupant::of_tensor(r.tensor);
    if (arena_ && !arrive_bytes(kStart, r.object, Occupant::of_tensor(r.tensor))) return false;
  }
  return true;
}

// S2 for size-class plans: the pool fits the budget, and `objects` is its
// layout (the runtime places objects by `objects`).
bool Verifier::structure_classes() {
  const int n = g_.num_tensors();
  const int m = g_.num_ops();
  // S2
  const Pool& pool = p_.pool;
  const int nc = static_cast<int>(pool.class_bytes.size());
  if (pool.class_count.size() != pool.class_bytes.size())
    return fail("the pool has {} class_bytes but {} class_count entries", pool.class_bytes.size(),
                pool.class_count.size());
  __int128 total = 0;
  int64_t objects = 0;
  class_first_.assign(nc + 1, 0);
  for (ClassId c = 0; c < nc; ++c) {
    if (pool.class_bytes[c] < 0)
      return fail("pool class {} has objects of {} bytes", c, pool.class_bytes[c]);
    if (pool.class_count[c] < 0)
      return fail("pool class {} has {} objects", c, pool.class_count[c]);
    total += static_cast<__int128>(pool.class_bytes[c]) * pool.class_count[c];
    objects += pool.class_count[c];
    class_first_[c + 1] = objects;
  }
  if (objects > INT32_MAX)
    return fail("the pool has {} objects, more than 32-bit object ids can number", objects);
  num_objects_ = static_cast<int32_t>(objects);
  if (total > p_.memory_budget) {
    if (total > INT64_MAX)
      return fail("the pool takes more than 2^63 bytes, over the memory budget of {} bytes",
                  p_.memory_budget);
    return fail("the pool takes {} bytes, over the memory budget of {} bytes",
                static_cast<int64_t>(total), p_.memory_budget);
  }

  // S3
  for (TensorId t = 0; t < n; ++t) {
    const ClassId c = p_.tensor_class[t];
    if (c < 0 || c >= nc)
      return fail("{} is in class {}, but the pool has {} classes", tensor(t), c, nc);
    if (pool.class_bytes[c] < g_.tensors[t].bytes)
      return fail("{} ({} bytes) is in class {}, whose objects have {} bytes", tensor(t),
                  g_.tensors[t].bytes, c, pool.class_bytes[c]);
  }
  for (OpId o = 0; o < m; ++o) {
    const ClassId c = p_.workspace_class[o];
    const int64_t bytes = g_.ops[o].workspace_bytes;
    if (bytes == 0) {
      if (c != -1)
        return fail("{} has no workspace, but its workspace_class is {} (not -1)", op(o), c);
      continue;
    }
    if (c < 0 || c >= nc)
      return fail("the workspace of {} is in class {}, but the pool has {} classes", op(o), c, nc);
    if (pool.class_bytes[c] < bytes)
      return fail("the workspace of {} ({} bytes) is in class {}, whose objects have {} bytes",
                  op(o), bytes, c, pool.class_bytes[c]);
  }

  // S2 (end): the objects are the pool's layout (compared without building it: the
  // pool's counts are not trusted yet).
  if (p_.objects.size() != static_cast<size_t>(num_objects_))
    return fail("the plan has {} objects, but its pool lays out {}", p_.objects.size(),
                num_objects_);
  int64_t offset = 0;
  ObjectId x = 0;
  for (ClassId c = 0; c < nc; ++c)
    for (int32_t k = 0; k < pool.class_count[c]; ++k, ++x) {
      const Block& b = p_.objects[x];
      if (b.offset != offset || b.bytes != pool.class_bytes[c] || b.cls != c)
        return fail(
            "object {} is at [{}, +{}) of class {}, but the pool lays it out at [{}, +{}) of "
            "class {}",
            x, b.offset, b.bytes, b.cls, offset, pool.class_bytes[c], c);
      offset += pool.class_bytes[c];
    }
  return true;
}

// S2 for arena plans: every object lies within the budget.
bool Verifier::structure_arena() {
  if (p_.objects.size() > static_cast<size_t>(INT32_MAX))
    return fail("the plan has {} objects, more than 32-bit object ids can number",
                p_.objects.size());
  num_objects_ = static_cast<int32_t>(p_.objects.size());
  for (ObjectId x = 0; x < num_objects_; ++x) {
    const Block& b = p_.objects[x];
    if (b.offset < 0 || b.bytes < 0)
      return fail("object {} is at offset {} with {} bytes", x, b.offset, b.bytes);
    if (static_cast<__int128>(b.offset) + b.bytes > p_.memory_budget)
      return fail("object {} ([{}, {}) of the arena) ends past the memory budget of {} bytes", x,
                  b.offset,
                  static_cast<__int128>(b.offset) + b.bytes > INT64_MAX
                      ? std::string("2^63")
                      : std::to_string(b.offset + b.bytes),
                  p_.memory_budget);
  }
  return true;
}

}  // namespace sa::verifier
