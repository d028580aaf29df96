// The plan verifier (Note [Verified rules] in verify.h). Written from Note
// [Plan semantics] alone: it shares no state machine with the simulator or
// the planner.

#include "plan/verify.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "graph/dataflow.h"
#include "util/range_map.h"

namespace sa {
namespace {

constexpr int32_t kNoHost = -2;         // host version of a transient never swapped out
constexpr int32_t kStaleHost = -1;      // host version older than version 0
constexpr StepId kStart = -1;           // "before the iteration": happens before every step
constexpr TensorId kFree = -1;          // tenant of a free object
constexpr int kDropSlot = kNumStreams;  // touch slot of drops (after the streams)

using VectorClock = std::array<int32_t, kNumStreams>;

std::string_view verb(Access a) {
  switch (a) {
    case Access::kCreate:
      return "creates";
    case Access::kRead:
      return "reads";
    case Access::kUpdate:
      return "updates";
  }
  return "?";
}

class Verifier {
 public:
  Verifier(const Graph& g, const Plan& p) : g_(g), p_(p) {}

  VerifyResult run() {
    if (structure() && order() && walk() && end()) return {};
    return {false, std::move(err_)};
  }

 private:
  template <typename... A>
  bool fail(fmt::format_string<A...> f, A&&... args) {
    err_ = fmt::format(f, std::forward<A>(args)...);
    return false;
  }

  // ---- names for messages ----
  std::string tensor(TensorId t) const { return describe_tensor(g_, t); }
  std::string op(OpId o) const { return describe_op(g_, o); }
  std::string step(StepId s) const {
    const Step& st = p_.steps[s];
    switch (st.kind) {
      case StepKind::kCompute:
        return fmt::format("step {} (compute of {})", s, op(st.subject));
      case StepKind::kSwapIn:
        return fmt::format("step {} (swap_in of {} into object {})", s, tensor(st.subject),
                           st.object);
      case StepKind::kSwapOut:
        return fmt::format("step {} (swap_out of {} from object {})", s, tensor(st.subject),
                           st.object);
      case StepKind::kDrop:
        return fmt::format("step {} (drop of {} from object {})", s, tensor(st.subject), st.object);
      case StepKind::kRecompute:
        return fmt::format("step {} (recompute of {})", s, op(st.subject));
    }
    return fmt::format("step {}", s);
  }
  // A tenant: a tensor id, or -(2 + o) for the workspace of op o.
  std::string tenant_name(int32_t who) const {
    if (who == kFree) return "no tensor";
    return who >= 0 ? tensor(who) : fmt::format("the workspace of {}", op(-2 - who));
  }

  // ---- pool layout ----
  ClassId class_of(ObjectId x) const {
    return static_cast<ClassId>(
        std::upper_bound(class_first_.begin(), class_first_.end(), static_cast<int64_t>(x)) -
        class_first_.begin() - 1);
  }
  bool object_exists(ObjectId x) const { return x >= 0 && x < num_objects_; }
  // Arena plans: "" when object x can hold `bytes`, else why not.
  std::string too_small(ObjectId x, int64_t bytes) const {
    const int64_t have = p_.objects[x].bytes;
    return have >= bytes ? std::string()
                         : fmt::format("object {} has {} bytes, fewer than its {}", x, have, bytes);
  }
  int32_t loc(ObjectId x) const {
    if (dense_) return x;
    return static_cast<int32_t>(std::lower_bound(ids_.begin(), ids_.end(), x) - ids_.begin());
  }

  // ---- happens-before ----
  bool hb(StepId a, StepId b) const {
    if (a == kStart || a == b) return true;
    const VectorClock& ca = clock_[a];
    const VectorClock& cb = clock_[b];
    for (int k = 0; k < kNumStreams; ++k)
      if (ca[k] > cb[k]) return false;
    return true;
  }

  bool structure();
  bool order();
  bool walk();
  bool end();
  bool compute_step(StepId s);
  bool recompute_step(StepId s);
  bool recreated_before_use(StepId s, TensorId t) const;
  bool swap_in(StepId s);
  bool swap_out(StepId s);
  bool drop(StepId s);
  bool arrive(StepId s, ObjectId x, int32_t who, int slot);
  // The touch slot of a step that runs an op: its stream (compute, or
  // collective for a collective op's compute step).
  int slot(StepId s) const { return static_cast<int>(stream_of(g_, p_.steps[s])); }
  // What a compute or recompute step of op o does on its objects besides
  // its outputs: the workspace arrives, the inputs are read at s.
  bool run_on_objects(StepId s, OpId o, const ObjectId* objs) {
    const Op& oo = g_.ops[o];
    const int nout = static_cast<int>(oo.outputs.size());
    const bool again = p_.steps[s].kind == StepKind::kRecompute;
    if (oo.workspace_bytes > 0 && !arrive(s, objs[num_step_slots(oo, again) - 1], -2 - o, slot(s)))
      return false;
    for (size_t i = 0; i < oo.inputs.size(); ++i)
      touch_[loc(objs[nout + i])][slot(s)] = s;
    return true;
  }
  bool arrive_bytes(StepId s, ObjectId x, int32_t who);
  // R3: a dead output of a recompute in object location l stops being
  // readable (its bytes are taken, or the next compute step runs).
  void forget_ghost(int32_t l) {
    const TensorId t = ghost_[l];
    if (t < 0) return;
    ghost_[l] = -1;
    if (dev_obj_[t] != kNoObject && loc(dev_obj_[t]) == l) dev_obj_[t] = kNoObject;
  }
  bool structure_classes();
  bool structure_arena();
  bool resident_for_release(StepId s);
  std::string not_resident_reason(TensorId t) const;
  std::string next_use(TensorId t) const;

  const Graph& g_;
  const Plan& p_;
  std::string err_;

  // Pool layout.
  std::vector<int64_t> class_first_;  // per class + 1: first object id
  int32_t num_objects_ = 0;
  bool arena_ = false;
  // Arena plans: which object last held each range of arena bytes.
  RangeMap<ObjectId> bytes_of_;
  bool dense_ = true;
  std::vector<ObjectId> ids_;  // referenced object ids, sorted (when !dense_)

  // Order.
  std::vector<StepId> step_of_op_;  // the compute step of each op
  std::vector<int32_t> pos_of_op_;  // position in order
  std::vector<int32_t> last_pos_;   // per tensor: last position accessing it, -1 if none
  std::vector<int32_t> remaining_;  // per tensor: accesses not yet run
  std::vector<ObjectId> init_obj_;  // per tensor: its initial_resident object or -1
  std::vector<VectorClock> clock_;  // per step

  // Tensor state during the walk.
  std::vector<int32_t> ver_;         // latest version
  std::vector<ObjectId> dev_obj_;    // object holding it, or kNoObject
  std::vector<int32_t> dev_ver_;     // version in that object
  std::vector<StepId> data_step_;    // step that wrote that version there
  std::vector<StepId> write_step_;   // compute step that made the latest version
  std::vector<int32_t> host_ver_;    // host copy version, or kNoHost / kStaleHost
  std::vector<StepId> host_step_;    // swap-out that wrote the host copy, or kStart
  std::vector<StepId> released_at_;  // last swap-out, drop or death, or -1
  std::vector<char> dead_;           // transient past its last access
  std::vector<int32_t> read_ver_;    // per access slot: the version its op read (once it ran)
  std::vector<char> ran_;            // per op: its compute step has run
  std::vector<std::vector<StepId>> access_steps_;    // per tensor: compute steps accessing it
  std::vector<std::vector<StepId>> recreate_steps_;  // per tensor: recompute steps recreating it

  // Object state during the walk (indexed by loc()).
  std::vector<TensorId> tenant_;  // current tenant or kFree
  std::vector<int32_t> prev_;     // last tenant (see tenant_name), for messages
  std::vector<std::array<StepId, kNumStreams + 1>> touch_;  // last step per stream (+ drop)
  std::vector<TensorId> ghost_;  // R3: the dead output still readable there, or -1
  std::vector<int32_t> ghosts_;  // their locations, since the last compute step
  int32_t pos_ = 0;              // compute steps run so far
};

bool Verifier::structure() {
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

  if (!(arena_ ? structure_arena() : structure_classes())) return false;

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

  // S5
  const int64_t num_waits = static_cast<int64_t>(p_.waits.size());
  for (StepId s = 0; s < p_.num_steps(); ++s) {
    const Step& st = p_.steps[s];
    switch (st.kind) {
      case StepKind::kCompute:
        if (st.subject < 0 || st.subject >= m)
          return fail("step {} (compute) names op {}, but the graph has {} ops", s, st.subject, m);
        if (st.object != kNoObject)
          return fail("{} names object {}; a compute step's objects are in access_objects", step(s),
                      st.object);
        break;
      case StepKind::kRecompute: {
        if (st.subject < 0 || st.subject >= m)
          return fail("step {} (recompute) names op {}, but the graph has {} ops", s, st.subject,
                      m);
        const Op& oo = g_.ops[st.subject];
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
          return fail("{}: {} may not run again ({})", step(s), op(st.subject), why);
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
            ok = fail("{} puts {} in object {}, but the plan has {} objects", step(s), what, x,
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
          fits(objs[k], oo.workspace_bytes, arena_ ? -1 : p_.workspace_class[st.subject],
               "its workspace");
        if (!ok) return false;
        break;
      }
      case StepKind::kSwapIn:
      case StepKind::kSwapOut:
      case StepKind::kDrop:
        if (st.subject < 0 || st.subject >= n)
          return fail("step {} ({}) names tensor {}, but the graph has {} tensors", s,
                      to_string(st.kind), st.subject, n);
        if (!object_exists(st.object))
          return fail("{} names object {}, but the pool has {} objects", step(s), st.object,
                      num_objects_);
        if (arena_) {
          if (const std::string why = too_small(st.object, g_.tensors[st.subject].bytes);
              !why.empty())
            return fail("{} uses object {}, but {} bytes", step(s), st.object, why);
        } else if (class_of(st.object) != p_.tensor_class[st.subject])
          return fail("{} uses object {} of class {}, but the tensor is in class {}", step(s),
                      st.object, class_of(st.object), p_.tensor_class[st.subject]);
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
  prev_.assign(num_local, kFree);
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
    prev_[loc(r.object)] = r.tensor;
    if (arena_ && !arrive_bytes(kStart, r.object, r.tensor)) return false;
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

bool Verifier::order() {
  const int m = g_.num_ops();
  const int n = g_.num_tensors();
  // O1
  const Dataflow df(g_);
  std::string why;
  if (!is_topological(df, p_.order, &why)) return fail("the order is not topological: {}", why);
  pos_of_op_.assign(m, 0);
  for (int i = 0; i < m; ++i)
    pos_of_op_[p_.order[i]] = i;

  // O2
  step_of_op_.assign(m, -1);
  int k = 0;
  for (StepId s = 0; s < p_.num_steps(); ++s) {
    const Step& st = p_.steps[s];
    if (st.kind != StepKind::kCompute) continue;
    if (k >= m)
      return fail(
          "{} is compute step number {}, but the graph has only {} ops (op {} already "
          "ran at step {})",
          step(s), k, m, st.subject, step_of_op_[st.subject]);
    if (st.subject != p_.order[k])
      return fail("{} is compute step number {}, but position {} of the order is op {}", step(s), k,
                  k, p_.order[k]);
    step_of_op_[st.subject] = s;
    ++k;
  }
  if (k != m)
    return fail(
        "the plan has {} compute steps, but the graph has {} ops: {} (position {} of the "
        "order) never runs",
        k, m, op(p_.order[k]), k);

  // Per tensor: the compute steps that access it and the recompute steps
  // that recreate it, in step order.
  access_steps_.assign(n, {});
  recreate_steps_.assign(n, {});
  for (StepId s = 0; s < p_.num_steps(); ++s) {
    const Step& st = p_.steps[s];
    if (st.kind == StepKind::kCompute)
      for_each_access(g_.ops[st.subject], [&](TensorId t, Access) {
        if (access_steps_[t].empty() || access_steps_[t].back() != s) access_steps_[t].push_back(s);
      });
    else if (st.kind == StepKind::kRecompute)
      for (TensorId t : g_.ops[st.subject].outputs)
        recreate_steps_[t].push_back(s);
  }

  // Per tensor: last position accessing it and number of accesses.
  last_pos_.assign(n, -1);
  remaining_.assign(n, 0);
  for (OpId o = 0; o < m; ++o)
    for_each_access(g_.ops[o], [&](TensorId t, Access) {
      last_pos_[t] = std::max(last_pos_[t], pos_of_op_[o]);
      ++remaining_[t];
    });

  // Vector clocks: component k of step s counts the steps of stream k that
  // happen before s or are s.
  clock_.resize(p_.num_steps());
  std::array<int32_t, kNumStreams> count{};
  std::array<StepId, kNumStreams> last;
  last.fill(-1);
  for (StepId s = 0; s < p_.num_steps(); ++s) {
    const Stream stream = stream_of(g_, p_.steps[s]);
    VectorClock c{};
    if (stream != Stream::kNone && last[static_cast<int>(stream)] >= 0)
      c = clock_[last[static_cast<int>(stream)]];
    for (StepId w : p_.waits_of(s))
      for (int i = 0; i < kNumStreams; ++i)
        c[i] = std::max(c[i], clock_[w][i]);
    if (stream != Stream::kNone) {
      const int k2 = static_cast<int>(stream);
      c[k2] = ++count[k2];
      last[k2] = s;
    }
    clock_[s] = c;
  }
  return true;
}

// "(it was swapped out at step 9 and not brought back)" and the like.
std::string Verifier::not_resident_reason(TensorId t) const {
  const StepId r = released_at_[t];
  if (r < 0) return "it was never brought in";
  switch (p_.steps[r].kind) {
    case StepKind::kSwapOut:
      return fmt::format("it was swapped out at step {} and not brought back", r);
    case StepKind::kDrop:
      return fmt::format("it was dropped at step {} and not brought back", r);
    default:
      return fmt::format("it died at step {}", r);
  }
}

// "op 7 (sgd) at position 12 of the order" or "" when no access is left.
std::string Verifier::next_use(TensorId t) const {
  for (int i = pos_; i < g_.num_ops(); ++i) {
    const OpId o = p_.order[i];
    bool uses = false;
    for_each_access(g_.ops[o], [&](TensorId u, Access) { uses = uses || u == t; });
    if (uses) return fmt::format("{} at position {} of the order", op(o), i);
  }
  return "";
}

// W1: step s puts `who` (a tensor, or -(2 + op) for a workspace) into object x.
// W1 over arena bytes (arena plans): who moves into object x at step s; the
// objects that last held any of x's bytes are free and their last tenants'
// steps happen before s. Then x holds those bytes.
bool Verifier::arrive_bytes(StepId s, ObjectId x, int32_t who) {
  const Block& b = p_.objects[x];
  std::string err;
  bytes_of_.assign(b.offset, b.end(), x, [&](int64_t lo, int64_t hi, ObjectId y) {
    if (!err.empty() || y == x) return;
    const int32_t ly = loc(y);
    forget_ghost(ly);
    const std::string where = s == kStart ? std::string("initial_resident") : step(s);
    if (tenant_[ly] != kFree) {
      err = fmt::format(
          "{} puts {} into object {} at [{}, {}) of the arena, but bytes [{}, {}) of it still "
          "hold {} in object {}",
          where, tenant_name(who), x, b.offset, b.end(), lo, hi, tensor(tenant_[ly]), y);
      return;
    }
    for (StepId a : touch_[ly])
      if (a >= 0 && !hb(a, s)) {
        err = fmt::format(
            "{} puts {} into object {} but does not wait for {}, which touched {} in object {} "
            "at the same arena bytes [{}, {})",
            where, tenant_name(who), x, step(a), tenant_name(prev_[ly]), y, lo, hi);
        return;
      }
  });
  if (!err.empty()) {
    err_ = std::move(err);
    return false;
  }
  return true;
}

bool Verifier::arrive(StepId s, ObjectId x, int32_t who, int slot) {
  if (arena_ && !arrive_bytes(s, x, who)) return false;
  const int32_t l = loc(x);
  forget_ghost(l);
  if (tenant_[l] != kFree)
    return fail("{} puts {} into object {}, but object {} still holds {}", step(s),
                tenant_name(who), x, x, tensor(tenant_[l]));
  for (StepId a : touch_[l])
    if (a >= 0 && !hb(a, s))
      return fail(
          "{} puts {} into object {} but does not wait for {}, which touched its "
          "previous tenant {}",
          step(s), tenant_name(who), x, step(a), tenant_name(prev_[l]));
  touch_[l].fill(-1);
  touch_[l][slot] = s;
  prev_[l] = who;
  if (who >= 0) tenant_[l] = who;
  return true;
}

bool Verifier::compute_step(StepId s) {
  const OpId o = p_.steps[s].subject;
  const Op& oo = g_.ops[o];
  const ObjectId* objs = p_.access_objects.data() + p_.access_begin[o];
  const int nout = static_cast<int>(oo.outputs.size());
  const int nin = static_cast<int>(oo.inputs.size());
  for (int32_t l : ghosts_)  // R3: only the recomputes before it read them
    forget_ghost(l);
  ghosts_.clear();

  // W3: reads and updates find their tensor resident, at its latest version,
  // put there by a step that happens before this one.
  auto check_resident = [&](TensorId t, ObjectId x, Access a) {
    if (dev_obj_[t] != x) {
      if (dev_obj_[t] == kNoObject)
        return fail("{} {} {} from object {}, but {} is not on the device ({})", step(s), verb(a),
                    tensor(t), x, tensor(t), not_resident_reason(t));
      return fail("{} {} {} from object {}, but {} is in object {}", step(s), verb(a), tensor(t), x,
                  tensor(t), dev_obj_[t]);
    }
    if (dev_ver_[t] != ver_[t])
      return fail("{} {} {} in object {}, which holds version {}, but the latest is {}", step(s),
                  verb(a), tensor(t), x, dev_ver_[t], ver_[t]);
    if (!hb(data_step_[t], s))
      return fail("{} {} {} in object {} but does not wait for {}, which puts it there", step(s),
                  verb(a), tensor(t), x, step(data_step_[t]));
    return true;
  };
  for (int i = 0; i < nin; ++i)
    if (!check_resident(oo.inputs[i], objs[nout + i], Access::kRead)) return false;
  for (size_t i = 0; i < oo.updates.size(); ++i)
    if (!check_resident(oo.updates[i], objs[nout + nin + i], Access::kUpdate)) return false;
  for (int i = 0; i < nin; ++i)  // what a recompute of o must read
    read_ver_[p_.access_begin[o] + nout + i] = ver_[oo.inputs[i]];
  for (size_t i = 0; i < oo.updates.size(); ++i)  // and a replay of its updates
    read_ver_[p_.access_begin[o] + nout + nin + i] = ver_[oo.updates[i]];

  // W1: outputs and the workspace need free objects.
  for (int i = 0; i < nout; ++i) {
    const TensorId t = oo.outputs[i];
    if (!arrive(s, objs[i], t, slot(s))) return false;
    dev_obj_[t] = objs[i];
    ver_[t] = dev_ver_[t] = 1;
    data_step_[t] = write_step_[t] = s;
  }
  if (!run_on_objects(s, o, objs)) return false;

  for (size_t i = 0; i < oo.updates.size(); ++i) {
    const TensorId t = oo.updates[i];
    // W3b: an update follows every earlier read of the tensor in its object
    // (stream order gives it on one stream; a collective needs waits).
    for (StepId a : touch_[loc(objs[nout + nin + i])])
      if (a >= 0 && a != s && !hb(a, s))
        return fail("{} updates {} in object {} but does not wait for {}, which touched it",
                    step(s), tensor(t), objs[nout + nin + i], step(a));
    touch_[loc(objs[nout + nin + i])][slot(s)] = s;
    dev_ver_[t] = ++ver_[t];
    data_step_[t] = write_step_[t] = s;
  }
  ran_[o] = 1;
  // Transients die after their last access.
  for_each_access(oo, [&](TensorId t, Access) {
    --remaining_[t];
    if (is_transient(g_.tensors[t].kind) && last_pos_[t] == pos_) {
      tenant_[loc(dev_obj_[t])] = kFree;
      dev_obj_[t] = kNoObject;
      dead_[t] = 1;
      released_at_[t] = s;
    }
  });
  ++pos_;
  return true;
}

bool Verifier::swap_in(StepId s) {
  const Step& st = p_.steps[s];
  const TensorId t = st.subject;
  if (is_transient(g_.tensors[t].kind)) {
    if (ver_[t] == 0) return fail("{} brings in {} before it is created", step(s), tensor(t));
    if (dead_[t])
      return fail("{} brings in {} after its last access ({})", step(s), tensor(t),
                  step(released_at_[t]));
  }
  if (dev_obj_[t] != kNoObject)
    return fail("{} brings in {}, but it is already on the device in object {}", step(s), tensor(t),
                dev_obj_[t]);
  if (host_ver_[t] == kNoHost)
    return fail("{} brings in {}, which has no host copy (it was never swapped out)", step(s),
                tensor(t));
  if (host_ver_[t] == kStaleHost)
    return fail(
        "{} reads a stale host copy of {}: the tensor starts resident in object {} and "
        "is updated in the iteration, and its last version is not written back, so the "
        "host copy is older than its version at the start",
        step(s), tensor(t), init_obj_[t]);
  if (host_ver_[t] < ver_[t])
    return fail(
        "{} reads a stale host copy of {}: the host copy has version {}, but the latest "
        "is version {} (written by {})",
        step(s), tensor(t), host_ver_[t], ver_[t], step(write_step_[t]));
  if (!hb(host_step_[t], s))
    return fail("{} does not wait for {}, which writes the host copy it reads", step(s),
                step(host_step_[t]));
  if (!arrive(s, st.object, t, static_cast<int>(Stream::kH2D))) return false;
  dev_obj_[t] = st.object;
  dev_ver_[t] = host_ver_[t];
  data_step_[t] = s;
  return true;
}

// W4 and W2 for a swap-out or drop of st.subject from st.object.
bool Verifier::resident_for_release(StepId s) {
  const Step& st = p_.steps[s];
  const TensorId t = st.subject;
  const ObjectId x = st.object;
  if (is_transient(g_.tensors[t].kind)) {
    if (ver_[t] == 0) return fail("{} comes before {} is created", step(s), tensor(t));
    if (dead_[t])
      return fail("{} comes after the last access of {} ({}), which already freed its object",
                  step(s), tensor(t), step(released_at_[t]));
  }
  if (dev_obj_[t] == kNoObject)
    return fail("{}, but {} is not on the device ({})", step(s), tensor(t), not_resident_reason(t));
  if (dev_obj_[t] != x) return fail("{}, but {} is in object {}", step(s), tensor(t), dev_obj_[t]);
  if (st.kind == StepKind::kSwapOut && !hb(data_step_[t], s))
    return fail("{} does not wait for {}, which writes the version it copies (version {})", step(s),
                step(data_step_[t]), dev_ver_[t]);
  const int32_t l = loc(x);
  for (StepId a : touch_[l])
    if (a >= 0 && !hb(a, s))
      return fail("{} frees object {} but does not wait for {}, which uses {} there", step(s), x,
                  step(a), tensor(t));
  return true;
}

bool Verifier::swap_out(StepId s) {
  if (!resident_for_release(s)) return false;
  const Step& st = p_.steps[s];
  const TensorId t = st.subject;
  const int32_t l = loc(st.object);
  host_ver_[t] = dev_ver_[t];
  host_step_[t] = s;
  dev_obj_[t] = kNoObject;
  tenant_[l] = kFree;
  touch_[l][static_cast<int>(Stream::kD2H)] = s;
  released_at_[t] = s;
  return true;
}

bool Verifier::drop(StepId s) {
  if (!resident_for_release(s)) return false;
  const Step& st = p_.steps[s];
  const TensorId t = st.subject;
  if (host_ver_[t] < dev_ver_[t]) {
    const bool persistent = is_persistent(g_.tensors[t].kind);
    if (persistent || (remaining_[t] > 0 && !recreated_before_use(s, t))) {
      std::string host;
      if (host_ver_[t] == kNoHost)
        host = "it has no host copy";
      else if (host_ver_[t] == kStaleHost)
        host = "its host copy is stale (not written back since the previous iteration)";
      else
        host = fmt::format("its host copy has version {}", host_ver_[t]);
      const std::string use = next_use(t);
      const std::string need = !use.empty()
                                   ? "it is used again by " + use
                                   : "it is persistent, so its value must be kept at the end";
      return fail(
          "{}: drop loses the latest value of {}: version {} is on the device only ({}), "
          "and {}",
          step(s), tensor(t), dev_ver_[t], host, need);
    }
  }
  const int32_t l = loc(st.object);
  dev_obj_[t] = kNoObject;
  tenant_[l] = kFree;
  touch_[l][kDropSlot] = s;
  released_at_[t] = s;
  return true;
}

// R1-R4 (Note [Verified rules]): a recompute of op o at step s.
bool Verifier::recompute_step(StepId s) {
  const OpId o = p_.steps[s].subject;
  const Op& oo = g_.ops[o];
  const auto objs = p_.objects_of_step(s);
  const int nout = static_cast<int>(oo.outputs.size());
  const int nin = static_cast<int>(oo.inputs.size());
  // R1: after the op's own run.
  if (!ran_[o]) return fail("{} runs {} again before its compute step", step(s), op(o));
  // R2 (inputs) and R4 (what it updates, Note [Update replay]): resident at
  // the versions the op read or updated when it ran.
  auto at_version = [&](TensorId t, int slot, Access a) {
    const ObjectId x = objs[slot];
    const char* from = a == Access::kRead ? "from" : "in";
    if (dev_obj_[t] != x) {
      if (dev_obj_[t] == kNoObject)
        return fail("{} {} {} {} object {}, but {} is not on the device ({})", step(s), verb(a),
                    tensor(t), from, x, tensor(t), not_resident_reason(t));
      return fail("{} {} {} {} object {}, but {} is in object {}", step(s), verb(a), tensor(t),
                  from, x, tensor(t), dev_obj_[t]);
    }
    const int32_t want = read_ver_[p_.access_begin[o] + slot];
    if (dev_ver_[t] != want)
      return fail("{} {} {} in object {}, which holds version {}, but {} {} version {} when it ran",
                  step(s), verb(a), tensor(t), x, dev_ver_[t], op(o),
                  a == Access::kRead ? "read" : "updated", want);
    if (!hb(data_step_[t], s))
      return fail("{} {} {} in object {} but does not wait for {}, which puts it there", step(s),
                  verb(a), tensor(t), x, step(data_step_[t]));
    return true;
  };
  // An op whose recompute skips its updates has no update slots and leaves
  // them alone (Note [Recompute without updates]).
  const size_t nupd = step_touches_updates(oo, true) ? oo.updates.size() : 0;
  for (int i = 0; i < nin; ++i)
    if (!at_version(oo.inputs[i], nout + i, Access::kRead)) return false;
  for (size_t i = 0; i < nupd; ++i)
    if (!at_version(oo.updates[i], nout + nin + static_cast<int>(i), Access::kUpdate)) return false;
  // R3: its outputs into free objects; each is then version 1 of its tensor
  // (later versions need the replays of their updates, R4, before the next
  // access, W3); a dead one's object is free again at once.
  for (int i = 0; i < nout; ++i) {
    const TensorId t = oo.outputs[i];
    if (dev_obj_[t] != kNoObject)
      return fail("{} recreates {}, but {} is on the device already, in object {}", step(s),
                  tensor(t), tensor(t), dev_obj_[t]);
    if (!arrive(s, objs[i], t, static_cast<int>(Stream::kCompute))) return false;
    if (dead_[t]) {  // a ghost: free, but readable until its bytes are taken
      tenant_[loc(objs[i])] = kFree;
      ghost_[loc(objs[i])] = t;
      ghosts_.push_back(loc(objs[i]));
      dev_obj_[t] = objs[i];
      dev_ver_[t] = 1;
      data_step_[t] = s;
      continue;
    }
    dev_obj_[t] = objs[i];
    dev_ver_[t] = 1;
    data_step_[t] = s;
  }
  if (!run_on_objects(s, o, objs.data())) return false;
  for (size_t i = 0; i < nupd; ++i) {
    const TensorId t = oo.updates[i];
    touch_[loc(objs[nout + nin + i])][0] = s;
    dev_ver_[t] = read_ver_[p_.access_begin[o] + nout + nin + i] + 1;
    data_step_[t] = s;
  }
  return true;
}

// Whether a recompute recreates t after step s and before the next compute
// step that accesses it (then dropping its only copy at s loses nothing).
bool Verifier::recreated_before_use(StepId s, TensorId t) const {
  auto after = [&](const std::vector<StepId>& steps) {
    auto it = std::upper_bound(steps.begin(), steps.end(), s);
    return it == steps.end() ? INT32_MAX : *it;
  };
  const StepId recreated = after(recreate_steps_[t]);
  return recreated != INT32_MAX && recreated < after(access_steps_[t]);
}

bool Verifier::walk() {
  const int n = g_.num_tensors();
  ver_.assign(n, 0);
  dev_obj_.assign(n, kNoObject);
  dev_ver_.assign(n, 0);
  data_step_.assign(n, kStart);
  write_step_.assign(n, kStart);
  host_ver_.assign(n, 0);
  host_step_.assign(n, kStart);
  released_at_.assign(n, -1);
  dead_.assign(n, 0);
  read_ver_.assign(p_.access_objects.size(), 0);
  ran_.assign(g_.num_ops(), 0);
  for (TensorId t = 0; t < n; ++t)
    if (is_transient(g_.tensors[t].kind)) host_ver_[t] = kNoHost;

  // The start: an initial-resident tensor updated in the iteration has a stale
  // host copy, unless the plan swaps it out after its last update.
  std::vector<StepId> last_update(n, -1);
  for (OpId o = 0; o < g_.num_ops(); ++o)
    for (TensorId t : g_.ops[o].updates)
      last_update[t] = std::max(last_update[t], step_of_op_[o]);
  std::vector<char> written_back(n, 0);
  for (StepId s = 0; s < p_.num_steps(); ++s) {
    const Step& st = p_.steps[s];
    if (st.kind == StepKind::kSwapOut && last_update[st.subject] >= 0 &&
        s > last_update[st.subject])
      written_back[st.subject] = 1;
  }
  for (const ResidentTensor& r : p_.initial_resident) {
    dev_obj_[r.tensor] = r.object;
    if (last_update[r.tensor] >= 0 && !written_back[r.tensor]) host_ver_[r.tensor] = kStaleHost;
  }

  pos_ = 0;
  for (StepId s = 0; s < p_.num_steps(); ++s) {
    bool ok = true;
    switch (p_.steps[s].kind) {
      case StepKind::kCompute:
        ok = compute_step(s);
        break;
      case StepKind::kSwapIn:
        ok = swap_in(s);
        break;
      case StepKind::kSwapOut:
        ok = swap_out(s);
        break;
      case StepKind::kDrop:
        ok = drop(s);
        break;
      case StepKind::kRecompute:
        ok = recompute_step(s);
        break;
    }
    if (!ok) return false;
  }
  return true;
}

bool Verifier::end() {
  // E1
  for (const ResidentTensor& r : p_.initial_resident) {
    const TensorId t = r.tensor;
    if (dev_obj_[t] == kNoObject)
      return fail(
          "at the end, initial-resident {} is not on the device ({}), but the next "
          "iteration expects it in object {}",
          tensor(t), not_resident_reason(t), r.object);
    if (dev_obj_[t] != r.object)
      return fail(
          "at the end, initial-resident {} is in object {}, but the next iteration "
          "expects it in object {}",
          tensor(t), dev_obj_[t], r.object);
    if (dev_ver_[t] != ver_[t])
      return fail(
          "at the end, initial-resident {} holds version {} in object {}, but the "
          "latest is {}",
          tensor(t), dev_ver_[t], r.object, ver_[t]);
  }
  // E2
  for (TensorId t = 0; t < g_.num_tensors(); ++t) {
    if (!is_persistent(g_.tensors[t].kind) || host_ver_[t] == ver_[t]) continue;
    if (dev_obj_[t] != kNoObject && dev_obj_[t] == init_obj_[t] && dev_ver_[t] == ver_[t]) continue;
    const std::string host = host_ver_[t] == kStaleHost
                                 ? std::string("its host copy is stale")
                                 : fmt::format("its host copy has version {}", host_ver_[t]);
    if (dev_obj_[t] != kNoObject)
      return fail(
          "at the end, the latest value (version {}) of persistent {} is lost: it is in "
          "object {}, which is not an initial_resident object of it, and {}",
          ver_[t], tensor(t), dev_obj_[t], host);
    return fail(
        "at the end, the latest value (version {}) of persistent {} is lost: it is not "
        "on the device ({}), and {}",
        ver_[t], tensor(t), not_resident_reason(t), host);
  }
  return true;
}

}  // namespace

VerifyResult verify_plan(const Graph& g, const Plan& p) {
  return Verifier(g, p).run();
}

}  // namespace sa
