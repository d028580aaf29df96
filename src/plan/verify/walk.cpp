// W, R, E (Note [Verified rules]): the steps in an order the waits allow,
// each finding its tensors resident, at their versions, in free objects.

#include "plan/verify/verifier.h"

namespace sa::verifier {

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

// W1: step s puts `who` (a tensor or a workspace) into object x.
// W1 over arena bytes (arena plans): who moves into object x at step s; the
// objects that last held any of x's bytes are free and their last tenants'
// steps happen before s. Then x holds those bytes.
bool Verifier::arrive_bytes(StepId s, ObjectId x, Occupant who) {
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

bool Verifier::arrive(StepId s, ObjectId x, Occupant who, int slot) {
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
  if (who.is_tensor()) tenant_[l] = who.tensor();
  return true;
}

bool Verifier::compute_step(StepId s) {
  const OpId o = p_.steps[s].op();
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
    if (!arrive(s, objs[i], Occupant::of_tensor(t), slot(s))) return false;
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
  const TensorId t = st.tensor();
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
  if (!arrive(s, st.object, Occupant::of_tensor(t), static_cast<int>(Stream::kH2D))) return false;
  dev_obj_[t] = st.object;
  dev_ver_[t] = host_ver_[t];
  data_step_[t] = s;
  return true;
}

// W4 and W2 for a swap-out or drop of st.tensor() from st.object.
bool Verifier::resident_for_release(StepId s) {
  const Step& st = p_.steps[s];
  const TensorId t = st.tensor();
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
  const TensorId t = st.tensor();
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
  const TensorId t = st.tensor();
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
  const OpId o = p_.steps[s].op();
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
    if (!arrive(s, objs[i], Occupant::of_tensor(t), static_cast<int>(Stream::kCompute)))
      return false;
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
    if (st.kind == StepKind::kSwapOut && last_update[st.tensor()] >= 0 &&
        s > last_update[st.tensor()])
      written_back[st.tensor()] = 1;
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

}  // namespace sa::verifier
