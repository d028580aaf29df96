// O1-O2 (Note [Verified rules]): each stream's order and the waits.

#include "plan/verify/verifier.h"

namespace sa::verifier {

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
          step(s), k, m, st.op(), step_of_op_[st.op()]);
    if (st.op() != p_.order[k])
      return fail("{} is compute step number {}, but position {} of the order is op {}", step(s), k,
                  k, p_.order[k]);
    step_of_op_[st.op()] = s;
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
      for_each_access(g_.ops[st.op()], [&](TensorId t, Access) {
        if (access_steps_[t].empty() || access_steps_[t].back() != s) access_steps_[t].push_back(s);
      });
    else if (st.kind == StepKind::kRecompute)
      for (TensorId t : g_.ops[st.op()].outputs)
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

}  // namespace sa::verifier
