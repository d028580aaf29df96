#include "runtime/reference.h"

#include "runtime/mpi/ranks.h"
#include "runtime/synthetic_collective.h"
#include "runtime/synthetic_op.h"
#include "util/error.h"

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

// Inputs differ by rank (Note [Ranks] in runtime/mpi/ranks.h).
void init_tensor(const Graph& g, TensorId t, int rank, std::vector<uint64_t>& w) {
  const int64_t bytes = g.tensors[t].bytes;
  const uint64_t salt = runtime::init_salt(g.tensors[t].kind, rank);
  w.resize(synthetic::num_samples(bytes));
  for (int64_t i = 0; i < static_cast<int64_t>(w.size()); ++i) {
    int len = 0;
    synthetic::sample_offset(bytes, i, &len);
    w[i] = synthetic::mask_word(synthetic::init_word(t, i) + salt, len);
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

struct ReferenceState {
  const Graph* g = nullptr;
  int iterations = 0;
  int rank = 0;  // whose inputs
  SlotLayout layout;
  KernelTable table;
  std::vector<TensorId> persistent;
  std::vector<OpId> last_use;  // transients are freed after their last access
  std::vector<TensorId> reset;
  std::vector<std::vector<uint64_t>> words;  // per tensor, one word per sample
  int done = 0;                              // iterations computed
  std::vector<uint64_t> slots;               // of iteration done - 1
  std::vector<uint64_t> persistent_sums;     // of iteration done - 1

  void run_iteration() {
    const Graph& graph = *g;
    for (TensorId t : reset)
      init_tensor(graph, t, rank, words[t]);
    slots.assign(layout.num_slots(), 0);
    CompactMem mem{&words};
    for (OpId o = 0; o < graph.num_ops(); ++o) {
      for (TensorId t : graph.ops[o].outputs)
        words[t].assign(synthetic::num_samples(graph.tensors[t].bytes), 0);
      if (const auto c = table.collective_of(o); c != synthetic::Collective::kNone)
        synthetic::run_collective(c, table.of(o), mem, slots.data(), runtime::exchange_words);
      else
        synthetic::run_op(o, table.of(o), mem, slots.data());
      for_each_access(graph.ops[o], [&](TensorId t, Access) {
        if (last_use[t] == o && is_transient(graph.tensors[t].kind))
          std::vector<uint64_t>().swap(words[t]);
      });
    }
    persistent_sums.clear();
    for (TensorId t : persistent) {
      uint64_t s = 0;
      for (int64_t i = 0; i < static_cast<int64_t>(words[t].size()); ++i)
        s += synthetic::checksum_term(words[t][i], i);
      persistent_sums.push_back(s);
    }
    ++done;
  }
};

const ReferenceIterations::Sums& ReferenceIterations::operator[](int it) const {
  SA_CHECK(state_ && it >= 0 && it < state_->iterations,
           "reference iteration {} asked for, of a run of {}", it, state_ ? state_->iterations : 0);
  SA_CHECK(it + 1 >= state_->done,
           "reference iteration {} asked for after iteration {}: only the latest is kept", it,
           state_->done - 1);
  while (state_->done <= it)
    state_->run_iteration();
  return (*state_).*which_;
}

Reference run_reference(const Graph& g, int iterations, int rank) {
  auto state = std::make_shared<ReferenceState>();
  ReferenceState& st = *state;
  st.g = &g;
  st.iterations = iterations;
  st.rank = rank;
  st.layout = make_slot_layout(g);
  st.table = make_kernel_table(g, st.layout, nullptr);
  for (TensorId t = 0; t < g.num_tensors(); ++t)
    if (is_persistent(g.tensors[t].kind)) st.persistent.push_back(t);
  st.last_use.assign(g.num_tensors(), kNoOp);
  for (OpId o = 0; o < g.num_ops(); ++o)
    for_each_access(g.ops[o], [&](TensorId t, Access) { st.last_use[t] = o; });
  st.words.resize(g.num_tensors());
  for (TensorId t = 0; t < g.num_tensors(); ++t)
    if (exists_at_start(g.tensors[t].kind)) init_tensor(g, t, rank, st.words[t]);
  st.reset = updated_inputs(g);

  Reference ref;
  ref.layout = st.layout;
  ref.persistent = st.persistent;
  ref.slots = ReferenceIterations(state, &ReferenceState::slots);
  ref.persistent_sums = ReferenceIterations(state, &ReferenceState::persistent_sums);
  return ref;
}

}  // namespace sa::runtime
