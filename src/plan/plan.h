#pragma once
// The Plan: the spine of swapadvisor. Search produces it, the simulator
// predicts it, the verifier checks it, the runtime executes it and the report
// draws it. It is plain data with dense ids; docs/plan-format.md documents its
// JSON form.
//
// Note [Plan semantics]
// ---------------------
// * Memory is one device arena of `memory_budget` bytes. Every tensor, while
//   on the device, occupies one object: a range [offset, offset + bytes) of
//   the arena (`objects`). An op's workspace occupies an object while the op
//   runs. Two objects may overlap in the arena; then they are never occupied
//   at the same time (every step that fills one waits for the steps that
//   touched the other's previous tenant). The allocator says how the objects
//   were made:
//   - size-class (the paper's pool): size class c has class_count[c] objects
//     of class_bytes[c] bytes each, numbered class by class and laid out one
//     after the other:  object k of class c sits at offset
//     sum_{c' < c} class_count[c'] * class_bytes[c'] + k * class_bytes[c].
//     Every tensor belongs to one class (tensor_class) and uses objects of
//     that class only; an op's workspace uses workspace_class[op]. No two
//     objects overlap.
//   - arena (planned offsets, Note [Arena planning] in swap_planner.h): each
//     object has its own offset and exactly its tenant's bytes; objects
//     overlap where their tenancies follow one another in time. There are no
//     classes (tensor_class and workspace_class are empty).
// * `steps` lists every action. Each step runs on one stream: compute steps on
//   the compute stream, swap-ins on host→device, swap-outs on device→host;
//   drops (free an object without a copy, the host copy being current) take
//   no time and run on no stream. A stream runs its steps in the order they
//   appear in `steps`; a step also waits for every step in its `waits`.
//   Every wait refers to an earlier step, so `steps` is itself a valid issue
//   order for a runtime with one host thread.
// * A compute step for op o uses, for its k-th access in for_each_access()
//   order (outputs, inputs, updates), object access_objects[access_begin[o] + k],
//   and for its workspace (if any) the object right after those.
// * A swap-in copies a tensor's host copy into an object; a swap-out copies
//   an object's tensor to its host copy; after a swap-out or drop the object is
//   free. A transient's object is also free after its last access.
// * A recompute step (on the compute stream) runs an op again to recreate
//   its outputs: it reads the op's inputs, at the versions the op read when
//   it ran, from its objects objects_of_step(s) (one per access slot, as a
//   compute step's, in for_each_access order, then the workspace), and
//   writes the outputs into free objects there. A recreated output is then
//   on the device at version 1 (the op may not have updates, and the output
//   must not have been updated since); one past its last access only passes
//   through its object. A drop may lose a transient's only copy when a
//   recompute recreates it before its next use.
// * initial_resident lists the persistent tensors that are on the device, in
//   the given objects and at their latest value, when the iteration starts;
//   the plan must leave them there, at their latest value, when it ends. This
//   makes the planned iteration the steady state: the next one starts where
//   this one ended. All other tensors start in host memory only.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace sa {

using StepId = int32_t;
using ObjectId = int32_t;
using ClassId = int32_t;
inline constexpr ObjectId kNoObject = -1;

// kRecompute runs an op again (Note [Plan semantics]); it is added last so
// that the others keep their values.
enum class StepKind : uint8_t { kCompute, kSwapIn, kSwapOut, kDrop, kRecompute };
// kCollective runs the collective ops of data-parallel plans (Note [Data
// parallelism as a graph transformation] in plan/data_parallel.h).
enum class Stream : uint8_t { kCompute = 0, kH2D = 1, kD2H = 2, kCollective = 3, kNone = 4 };
inline constexpr int kNumStreams = 4;  // real streams: compute, H2D, D2H, collective

// The stream a step runs on (the one way to ask; Note [Plan semantics]):
// compute and recompute steps on the compute stream, except that a compute
// step of a collective op runs on the collective stream; swap-ins on H2D,
// swap-outs on D2H; drops on none (done when what they wait for is done).
class Step;
inline Stream stream_of(const Graph& g, const Step& s);
std::string_view to_string(StepKind k);  // "compute", "swap_in", "swap_out", "drop", "recompute"
std::string_view to_string(Stream s);    // "compute", "h2d", "d2h", "collective", "none"

// What an object holds: a tensor, or the workspace of an op. One encoding
// for the simulator, the verifier and the report (a tensor id, -2 - o for
// op o's workspace, -1 for nothing), so that none of them decodes it its
// own way.
class Occupant {
 public:
  constexpr Occupant() = default;  // nothing
  static constexpr Occupant of_tensor(TensorId t) { return Occupant(t); }
  static constexpr Occupant of_workspace(OpId o) { return Occupant(-2 - o); }
  constexpr bool empty() const { return id_ == -1; }
  constexpr bool is_tensor() const { return id_ >= 0; }
  constexpr bool is_workspace() const { return id_ <= -2; }
  TensorId tensor() const {
    if (!is_tensor()) wrong_kind();
    return id_;
  }
  OpId workspace_op() const {
    if (!is_workspace()) wrong_kind();
    return -2 - id_;
  }
  constexpr bool operator==(const Occupant&) const = default;

 private:
  explicit constexpr Occupant(int32_t id) : id_(id) {}
  [[noreturn]] void wrong_kind() const;  // an internal error (a bug)
  int32_t id_ = -1;
};

class Step {
 public:
  Step() = default;
  // A step that runs op o: StepKind::kCompute or kRecompute (whose objects
  // are then set with obj_begin, obj_end).
  static Step run(StepKind kind, OpId o) {
    if (kind != StepKind::kCompute && kind != StepKind::kRecompute) wrong_subject(kind);
    return Step(kind, o, kNoObject);
  }
  // A swap or a drop of tensor t in object x.
  static Step move(StepKind kind, TensorId t, ObjectId x) {
    if (kind == StepKind::kCompute || kind == StepKind::kRecompute) wrong_subject(kind);
    return Step(kind, t, x);
  }
  // A step of any kind: subject is an op for the kinds that run one, else a
  // tensor (for code that builds steps of every kind: tests, the writer).
  static Step of(StepKind kind, int32_t subject, ObjectId x) { return Step(kind, subject, x); }

  StepKind kind = StepKind::kCompute;
  ObjectId object = kNoObject;  // swaps and drops: the object; compute, recompute: kNoObject
  int32_t wait_begin = 0;       // waits are Plan::waits[wait_begin, wait_end)
  int32_t wait_end = 0;
  // Recompute: its objects are Plan::recompute_objects[obj_begin, obj_end).
  int32_t obj_begin = 0;
  int32_t obj_end = 0;

  bool runs_op() const { return kind == StepKind::kCompute || kind == StepKind::kRecompute; }
  // The subject, checked against the kind: a compute step's op, a copy's or
  // drop's tensor. (Reading a compute step's subject as a tensor id indexes
  // the tensors with an op id, out of bounds whenever ops outnumber tensors:
  // hence no public subject.)
  OpId op() const {
    if (!runs_op()) wrong_subject(kind);
    return subject_;
  }
  TensorId tensor() const {
    if (runs_op()) wrong_subject(kind);
    return subject_;
  }
  // What a swap or drop moves out of or into its object.
  Occupant occupant() const;
  [[noreturn]] static void wrong_subject(StepKind k);  // an internal error (a bug)

 private:
  Step(StepKind k, int32_t subject, ObjectId x) : kind(k), object(x), subject_(subject) {}
  int32_t subject_ = 0;  // compute, recompute: the OpId; otherwise the TensorId
};

inline Occupant Step::occupant() const {
  return Occupant::of_tensor(tensor());
}

inline Stream stream_of(const Graph& g, const Step& s) {
  switch (s.kind) {
    case StepKind::kCompute:
      return is_collective(g.ops[s.op()]) ? Stream::kCollective : Stream::kCompute;
    case StepKind::kRecompute:
      return Stream::kCompute;
    case StepKind::kSwapIn:
      return Stream::kH2D;
    case StepKind::kSwapOut:
      return Stream::kD2H;
    case StepKind::kDrop:
      return Stream::kNone;
  }
  return Stream::kNone;
}

// The paper's size-class pool (Note [Plan semantics]).
struct Pool {
  std::vector<int64_t> class_bytes;  // object size of each class
  std::vector<int32_t> class_count;  // number of objects of each class

  int num_classes() const { return static_cast<int>(class_bytes.size()); }
  int64_t total_bytes() const;
  int num_objects() const;
  ObjectId first_object(ClassId c) const;  // the lowest object id of class c
};

// An object: a range of the device arena that holds one tenant at a time.
struct Block {
  int64_t offset = 0;
  int64_t bytes = 0;
  ClassId cls = -1;  // size-class plans: the object's class; arena plans: -1
  int64_t end() const { return offset + bytes; }
};

// The objects of a pool, class by class (Note [Plan semantics]).
std::vector<Block> pool_layout(const Pool& pool);

// How a planner lays out device memory: the paper's size-class pool, or
// planned offsets in one arena, placed as the walk goes or packed
// afterwards (Note [Arena planning] in plan/swap_planner.h). The one name of
// that choice for the walk, the search and the front ends; a plan records
// only what the runtime must allocate (allocator_of).
enum class MemoryLayout : uint8_t { kSizeClass, kPlaced, kPacked };

enum class Allocator : uint8_t { kSizeClass, kArena };
constexpr Allocator allocator_of(MemoryLayout l) {
  return l == MemoryLayout::kSizeClass ? Allocator::kSizeClass : Allocator::kArena;
}
std::string_view to_string(Allocator a);  // "size-class", "arena"
std::optional<Allocator> allocator_from_string(std::string_view s);
// What plan, compare, report, the baselines and the search use unless told.
inline constexpr Allocator kDefaultAllocator = Allocator::kArena;

// What a data-parallel plan plans: one rank of `ranks` (Note [Data
// parallelism as a graph transformation] in plan/data_parallel.h). Its graph
// is data_parallel_graph() of the graph it is read with.
struct DataParallel {
  int ranks = 1;
  bool shard_optimizer = false;              // ZeRO stage 1
  int64_t bucket_bytes = int64_t{25} << 20;  // gradient bytes per collective

  bool active() const { return ranks > 1; }
};

// The most ranks the tools accept.
inline constexpr int kMaxRanks = 65536;

struct ResidentTensor {
  TensorId tensor;
  ObjectId object;
};

struct Plan {
  std::string method;         // who made it: "swapadvisor", "odswap", ...
  int64_t memory_budget = 0;  // bytes; every object lies within [0, memory_budget)
  Allocator allocator = Allocator::kSizeClass;
  std::vector<OpId> order;  // the compute order
  Pool pool;                // size-class plans only
  std::vector<Block> objects;
  std::vector<ClassId> tensor_class;     // size-class plans: per tensor
  std::vector<ClassId> workspace_class;  // size-class plans: per op; -1 without workspace
  std::vector<Step> steps;
  std::vector<StepId> waits;
  std::vector<int32_t> access_begin;  // per op, size num_ops + 1
  std::vector<ObjectId> access_objects;
  std::vector<ResidentTensor> initial_resident;
  std::vector<ObjectId> recompute_objects;  // the recompute steps' objects
  DataParallel data_parallel;               // one rank of a data-parallel run
  // Note [Host tier] (plan/host_tier.h): bytes of host memory the plan may
  // use (0: unlimited), and the tensors kept on NVMe instead (ascending).
  int64_t host_budget = 0;
  std::vector<TensorId> nvme_tensors;

  int num_steps() const { return static_cast<int>(steps.size()); }
  int num_objects() const { return static_cast<int>(objects.size()); }
  std::span<const StepId> waits_of(StepId s) const {
    return {waits.data() + steps[s].wait_begin, waits.data() + steps[s].wait_end};
  }
  std::span<const ObjectId> objects_of(OpId o) const {
    return {access_objects.data() + access_begin[o], access_objects.data() + access_begin[o + 1]};
  }
  // The objects a compute or recompute step uses, in access-slot order.
  std::span<const ObjectId> objects_of_step(StepId s) const {
    const Step& st = steps[s];
    if (st.kind == StepKind::kCompute) return objects_of(st.op());
    return {recompute_objects.data() + st.obj_begin, recompute_objects.data() + st.obj_end};
  }
  // The bytes of the arena the objects reach: the pool's total for a
  // size-class plan, the highest object end for an arena plan.
  int64_t arena_bytes() const;
  // Size-class plans: objects from the pool (pool_layout).
  void layout_pool() { objects = pool_layout(pool); }
  void clear();  // empties everything, keeping capacity (for reuse in search)
};

// Turns a size-class plan into an arena plan with the same objects at the
// same offsets (the pool's layout is one way to plan offsets): no classes.
void offsets_from_classes(Plan* p);

// Number of objects a step that runs op uses: its accesses, in
// for_each_step_access order, plus one for a workspace. A recompute step of
// an op whose recompute skips its updates has no slots for them (Note
// [Recompute without updates], graph/graph.h).
inline int num_step_slots(const Op& op, bool recompute) {
  return static_cast<int>(op.inputs.size() + op.outputs.size() +
                          (step_touches_updates(op, recompute) ? op.updates.size() : 0)) +
         (op.workspace_bytes > 0 ? 1 : 0);
}
// Number of objects a compute step of op uses.
inline int num_access_slots(const Op& op) {
  return num_step_slots(op, false);
}

// Calls f(occupant, access) for each object slot of a step that runs op o,
// in slot order (Plan::objects_of_step): the tensors it touches in
// for_each_step_access order, then its workspace (a kCreate: it holds
// nothing before the op). The one enumeration of the slots for the
// simulator, the verifier and the runtime.
template <typename F>
void for_each_step_slot(const Graph& g, OpId o, bool recompute, F&& f) {
  const Op& op = g.ops[o];
  for_each_step_access(op, recompute, [&](TensorId t, Access a) { f(Occupant::of_tensor(t), a); });
  if (op.workspace_bytes > 0) f(Occupant::of_workspace(o), Access::kCreate);
}

// Bytes each way that the plan copies.
struct PlanTraffic {
  int64_t swap_in_bytes = 0;
  int64_t swap_out_bytes = 0;
  int swap_ins = 0;
  int swap_outs = 0;
  int drops = 0;
  int recomputes = 0;
};
PlanTraffic plan_traffic(const Graph& g, const Plan& p);

}  // namespace sa
