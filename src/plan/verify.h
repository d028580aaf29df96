#pragma once
// The plan verifier: the project's proof that a Plan is correct. It checks a
// plan against Note [Plan semantics] (plan/plan.h) alone, independently of the
// simulator's and the planner's state machines, and names the first rule the
// plan breaks.
//
// Note [Verified rules]
// ---------------------
// Structure (checked first, so that the rest may index freely). Size-class
// plans (the pool) and arena plans (planned offsets) differ in S1-S6 only:
//   S1  access_begin has num_ops + 1 entries with access_begin[0] = 0 and
//       access_begin[o+1] - access_begin[o] = num_access_slots(op o), and
//       access_objects access_begin[num_ops] entries. Size-class: the
//       allocator is known, tensor_class has one entry per tensor and
//       workspace_class one per op. Arena: there are no classes at all.
//   S2  size-class: the pool has as many class_count as class_bytes entries,
//       none negative, at most 2^31 - 1 objects in all, its total bytes (sum
//       of class_count x class_bytes) are at most memory_budget, and
//       `objects` is its layout (Note [Plan semantics]), checked object by
//       object without building it (the runtime places objects by `objects`).
//       Arena: every object has offset >= 0, bytes >= 0 and offset + bytes <=
//       memory_budget (computed without overflow). Either way, device bytes
//       never exceed the budget.
//   S3  size-class: every tensor's class exists and its objects are at least
//       the tensor's bytes; an op with a workspace has a workspace class
//       whose objects are at least its workspace_bytes, an op without one has
//       class -1.
//   S4  every access object exists and (size-class) is of the class of the
//       tensor (or workspace) it holds, or (arena) has at least its bytes.
//   S5  every step has a known kind; a compute step names an existing op and
//       no object; a swap-in, swap-out or drop names an existing tensor and an
//       existing object that can hold it (as S4); its waits are a valid range
//       of `waits` and every wait is an EARLIER step (so `steps` is an issue
//       order).
//   S6  initial_resident names each tensor and each object at most once; the
//       tensors are persistent (param, buffer, optimizer_state) and each
//       object can hold its tensor (as S4); in an arena plan their objects do
//       not overlap.
//   S7  with a host budget (host_budget > 0), the host slots (Note [Host
//       tier], plan/host_tier.h) of the tensors not in nvme_tensors, plus the
//       NVMe staging when any tensor is there, take at most host_budget
//       bytes; nvme_tensors are ascending tensor ids, each with a host slot.
//       Without one, nvme_tensors is empty.
// Order:
//   O1  `order` is a topological order of the graph's dataflow DAG.
//   O2  there is exactly one compute step per op, and the compute steps appear
//       in `steps` in the order of `order`.
// Happens-before (HB): step a HB step b when a chain of stream order (each of
// the compute, H2D, D2H and collective streams runs its steps in `steps`
// order; a compute step of a collective op runs on the collective stream)
// and waits
// leads from a to b; a drop, on no stream, finishes when its last wait does.
// It is computed with vector clocks over the four streams.
// The walk: steps are replayed in `steps` order, tracking for every pool
// object its tenant (a tensor, or a workspace while its op runs) and the last
// step of each stream (and the drop) that touched the tenant, and for every
// tensor its latest version (transients: version 1 at creation; persistent
// tensors and inputs: version 0 at the start, in host memory; every update
// makes a new version), its device copy (object, version, the step that wrote
// it) and its host copy (version, the swap-out that wrote it).
//   W1  tenancy (arena plans: first over arena bytes, then as below): a step
//       that moves a tenant into an object finds every object that last held
//       any of its arena bytes free, and HB-follows every step that touched
//       those objects' last tenants (a map of address ranges to the object
//       that last held them, util/range_map.h). Then, for the object itself:
//       a step that puts a tensor into an object (a swap-in, or a
//       compute step creating an output there) or runs a workspace there
//       finds the object free (its previous tenant released: a transient after
//       its last access in `order`, a workspace after its op, any tensor after
//       its swap-out or drop; initial_resident objects are occupied at the
//       start), and HB-follows every step that touched the previous tenant
//       (its accesses, its swap-in, its swap-out or drop). So no object holds
//       two tensors at once, and an update never races a copy of the object.
//   W2  release: a swap-out or drop HB-follows every step that touched its
//       tensor in that object since it arrived (the object is free after it).
//   W3  residency: the k-th access of compute step for op o finds the tensor
//       in object access_objects[access_begin[o] + k], at its latest version,
//       and HB-follows the step that put that version there (its swap-in; the
//       compute stream orders creations and updates; a collective step
//       waits for the gradients it reduces, and the optimizer for the
//       collective). A tensor swapped out or dropped and not brought back is
//       not resident.
//   W3b an update HB-follows every step that touched the tensor in its object
//       since it arrived (a collective must wait for the compute steps that
//       read what it overwrites).
//   W4  a transient is not swapped in, swapped out or dropped before its
//       creation or after its last access (it is dead: its object is free).
//   W5  swap-in: the tensor is not already on the device; it has a host copy
//       (transients only after a swap-out); the host copy holds its latest
//       version; and the swap-in HB-follows the swap-out that wrote that copy.
//   W6  swap-out: the tensor is resident in the step's object, and the
//       swap-out HB-follows the step that wrote the version it copies (its
//       creation, last update or swap-in); the host copy then holds that
//       version.
//   W7  drop: the tensor is resident in the step's object; if its device copy
//       is newer than its host copy (or it has none), its value must not be
//       needed: no later access, and not persistent ("drop loses the latest
//       value of ..."), unless a recompute recreates it before its next
//       access (R3 then checks the version).
// Recomputes (a recompute step of op o, on the compute stream):
//   R1  o's own compute step has run before.
//   R2  each input is resident in the step's object for it, at the version
//       o read when it ran, and the recompute HB-follows the step that put
//       that version there.
//   R3  each output is not on the device, goes into a free object (W1), and
//       is then resident at version 1; if in-place updates made later
//       versions, the replays of those updates (R4) must follow before the
//       next access, which W3 checks; an output past its last access only
//       passes through its object (freed at once), but the recompute and
//       replay steps before the next compute step may still read it there
//       (R2, R4: a chain through a dead input, Note [Recompute through dead
//       inputs] in plan/swap_planner.h) until another tenant takes any of
//       its bytes; the workspace as W1.
//   R4  (a replay of an in-place update, Note [Update replay] in
//       graph/graph.h) each tensor it updates is resident in the step's
//       object for it, at the version o updated when it ran, and the replay
//       HB-follows the step that put that version there; it is then at the
//       next version, the one o made. An op whose recompute skips its
//       updates (Note [Recompute without updates], graph/graph.h) has no
//       update slots in the step, and the tensors it updates keep their
//       versions.
//   S5 also checks that o may run again (may_recompute: no updates, or
//   updates its recompute skips, not marked recompute: false; or
//   may_replay_update: it only updates transients and creates nothing) and
//   that the step's objects, one per access slot of o (num_step_slots),
//   exist and fit their tensors.
// The end (steady state: the next iteration starts where this one ends):
//   E1  every initial_resident tensor is in its same object at the end, at its
//       latest version.
//   E2  every persistent tensor ends with its latest value somewhere: a host
//       copy at the latest version, or resident at the latest version in its
//       initial_resident object.
// The start: initial_resident tensors are on the device at version 0. A
// persistent one that the iteration updates has a stale host copy at the start
// (the previous, identical iteration did not write its last version back),
// unless the plan swaps it out after its last update, which makes the host
// copy current when the next iteration starts. All other persistent tensors
// and inputs have a current host copy (version 0) at the start; transients
// have none.
//
// Cost: O(tensors + ops + steps + waits + accesses) time and memory, plus a
// sort of the referenced object ids when the pool has far more objects than
// the plan references.

#include <string>

#include "graph/graph.h"
#include "plan/plan.h"

namespace sa {

struct VerifyResult {
  bool ok = true;
  // The first violation, human-readable: it names the rule's subject (step
  // id and kind, op or tensor with its name, object), e.g. "step 12 (compute
  // of op 5 'fc1' (aten::mm)) reads tensor 3 'x' from object 7, but tensor 3
  // is not on the device (swapped out at step 9 ...)". Empty when ok.
  std::string violation;
};

// REQUIRES: validate_graph(g) passed. The plan may be anything: the verifier
// checks its structure before it relies on it, and never crashes on a bad one.
VerifyResult verify_plan(const Graph& g, const Plan& p);

}  // namespace sa
