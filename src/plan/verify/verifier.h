#pragma once
// The plan verifier's internals (Note [Verified rules] in plan/verify.h),
// shared by the files of this folder, one role each:
//   structure.cpp  S1-S6: the plan's tables, objects and steps are well formed;
//   order.cpp      O1-O2: the streams' order and the waits;
//   walk.cpp       W, R, E: the steps run in an order the waits allow,
//                  each finding its tensors where and as they must be.
// Written from Note [Plan semantics] alone: it shares no state machine with
// the simulator or the planner. Only these files and plan/verify.cpp include
// this header.

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

namespace sa::verifier {

constexpr int32_t kNoHost = -2;         // host version of a transient never swapped out
constexpr int32_t kStaleHost = -1;      // host version older than version 0
constexpr StepId kStart = -1;           // "before the iteration": happens before every step
constexpr TensorId kFree = -1;          // tenant of a free object
constexpr int kDropSlot = kNumStreams;  // touch slot of drops (after the streams)

using VectorClock = std::array<int32_t, kNumStreams>;

inline std::string_view verb(Access a) {
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
        return fmt::format("step {} (compute of {})", s, op(st.op()));
      case StepKind::kSwapIn:
        return fmt::format("step {} (swap_in of {} into object {})", s, tensor(st.tensor()),
                           st.object);
      case StepKind::kSwapOut:
        return fmt::format("step {} (swap_out of {} from object {})", s, tensor(st.tensor()),
                           st.object);
      case StepKind::kDrop:
        return fmt::format("step {} (drop of {} from object {})", s, tensor(st.tensor()),
                           st.object);
      case StepKind::kRecompute:
        return fmt::format("step {} (recompute of {})", s, op(st.op()));
    }
    return fmt::format("step {}", s);
  }
  // A tenant: a tensor id, or -(2 + o) for the workspace of op o.
  std::string tenant_name(Occupant who) const {
    if (who.empty()) return "no tensor";
    return who.is_tensor() ? tensor(who.tensor())
                           : fmt::format("the workspace of {}", op(who.workspace_op()));
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
  bool structure_layout();
  bool structure_accesses();
  bool structure_steps();
  bool structure_resident();
  bool structure_host();
  bool order();
  bool walk();
  bool end();
  bool compute_step(StepId s);
  bool recompute_step(StepId s);
  bool recreated_before_use(StepId s, TensorId t) const;
  bool swap_in(StepId s);
  bool swap_out(StepId s);
  bool drop(StepId s);
  bool arrive(StepId s, ObjectId x, Occupant who, int slot);
  // The touch slot of a step that runs an op: its stream (compute, or
  // collective for a collective op's compute step).
  int slot(StepId s) const { return static_cast<int>(stream_of(g_, p_.steps[s])); }
  // What a compute or recompute step of op o does on its objects besides
  // its outputs: the workspace arrives, the inputs are read at s.
  bool run_on_objects(StepId s, OpId o, const ObjectId* objs) {
    const Op& oo = g_.ops[o];
    const int nout = static_cast<int>(oo.outputs.size());
    const bool again = p_.steps[s].kind == StepKind::kRecompute;
    if (oo.workspace_bytes > 0 &&
        !arrive(s, objs[num_step_slots(oo, again) - 1], Occupant::of_workspace(o), slot(s)))
      return false;
    for (size_t i = 0; i < oo.inputs.size(); ++i)
      touch_[loc(objs[nout + i])][slot(s)] = s;
    return true;
  }
  bool arrive_bytes(StepId s, ObjectId x, Occupant who);
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
  std::vector<Occupant> prev_;    // last tenant (see tenant_name), for messages
  std::vector<std::array<StepId, kNumStreams + 1>> touch_;  // last step per stream (+ drop)
  std::vector<TensorId> ghost_;  // R3: the dead output still readable there, or -1
  std::vector<int32_t> ghosts_;  // their locations, since the last compute step
  int32_t pos_ = 0;              // compute steps run so far
};

}  // namespace sa::verifier
