#include "runtime/reference.h"

#include "runtime/synthetic_op.h"

namespace sa::runtime {
namespace {

using synthetic::KernelAccess;

// One word per sample, per tensor.
struct CompactMem {
  std::vector<std::vector<uint64_t>>* words;
  uint64_t load(const KernelAccess& a, int64_t i) const {
    return a.tensor < 0 ? 0 : (*words)[a.tensor][i];
  }
  void store(const KernelAccess& a, int64_t i, uint64_t v) const {
    if (a.tensor >= 0) (*words)[a.tensor][i] = v;
  }
};

void init_tensor(const Graph& g, TensorId t, std::vector<uint64_t>& w) {
  const int64_t bytes = g.tensors[t].bytes;
  w.resize(synthetic::num_samples(bytes));
  for (int64_t i = 0; i < static_cast<int64_t>(w.size()); ++i) {
    int len = 0;
    synthetic::sample_offset(bytes, i, &len);
    w[i] = synthetic::mask_word(synthetic::init_word(t, i), len);
  }
}

}  // namespace

std::vector<TensorId> updated_inputs(const Graph& g) {
  std::vector<uint8_t> seen(g.num_tensors(), 0);
  std::vector<TensorId> out;
  for (const Op& op : g.ops)
    for (TensorId t : op.updates)
      if (g.tensors[t].kind == TensorKind::kInput && !seen[t]) {
        seen[t] = 1;
        out.push_back(t);
      }
  return out;
}

Reference run_reference(const Graph& g, int iterations) {
  Reference ref;
  ref.layout = make_slot_layout(g);
  const KernelTable table = make_kernel_table(g, ref.layout, nullptr);
  for (TensorId t = 0; t < g.num_tensors(); ++t)
    if (is_persistent(g.tensors[t].kind)) ref.persistent.push_back(t);

  // Transients are freed after their last access.
  std::vector<OpId> last_use(g.num_tensors(), kNoOp);
  for (OpId o = 0; o < g.num_ops(); ++o)
    for_each_access(g.ops[o], [&](TensorId t, Access) { last_use[t] = o; });

  std::vector<std::vector<uint64_t>> words(g.num_tensors());
  for (TensorId t = 0; t < g.num_tensors(); ++t)
    if (exists_at_start(g.tensors[t].kind)) init_tensor(g, t, words[t]);
  const std::vector<TensorId> reset = updated_inputs(g);
  CompactMem mem{&words};
  for (int it = 0; it < iterations; ++it) {
    for (TensorId t : reset)
      init_tensor(g, t, words[t]);
    std::vector<uint64_t> slots(ref.layout.num_slots(), 0);
    for (OpId o = 0; o < g.num_ops(); ++o) {
      for (TensorId t : g.ops[o].outputs)
        words[t].assign(synthetic::num_samples(g.tensors[t].bytes), 0);
      synthetic::run_op(o, table.of(o), mem, slots.data());
      for_each_access(g.ops[o], [&](TensorId t, Access) {
        if (last_use[t] == o && is_transient(g.tensors[t].kind))
          std::vector<uint64_t>().swap(words[t]);
      });
    }
    std::vector<uint64_t> sums;
    sums.reserve(ref.persistent.size());
    for (TensorId t : ref.persistent) {
      uint64_t s = 0;
      for (int64_t i = 0; i < static_cast<int64_t>(words[t].size()); ++i)
        s += synthetic::checksum_term(words[t][i], i);
      sums.push_back(s);
    }
    ref.slots.push_back(std::move(slots));
    ref.persistent_sums.push_back(std::move(sums));
  }
  return ref;
}

}  // namespace sa::runtime
