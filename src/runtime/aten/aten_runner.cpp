// run_program_order (runtime/aten/aten_kernels.h): the captured step with every
// tensor in its own buffer, no plan. Independent of libtorch: it drives the
// AtenKernels interface.

#include <cstdlib>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "runtime/aten/aten_kernels.h"
#include "util/error.h"

namespace sa::runtime {
namespace {

struct AlignedFree {
  void operator()(std::byte* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<std::byte, AlignedFree>;

AlignedBuffer alloc64(int64_t bytes) {
  const size_t n = static_cast<size_t>((std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
  auto* p = static_cast<std::byte*>(std::aligned_alloc(64, n));
  if (!p) throw Error(fmt::format("cannot allocate {} bytes", n));
  std::memset(p, 0, n);
  return AlignedBuffer(p);
}

}  // namespace

ProgramOrderResult run_program_order(const Graph& g, const AtenProgram& p,
                                     const ValuesFile& initial, int iterations,
                                     const AtenOptions& o) {
  if (o.device != "cpu") throw Error("run_program_order runs on the CPU only (--device cpu)");
  check_values_against(initial, g, "initial values", p.storage_bytes);
  auto kernels = make_aten_kernels(g, p, o);
  const int n = g.num_tensors();
  std::vector<AlignedBuffer> persistent(n);
  for (TensorId t = 0; t < n; ++t) {
    if (!exists_at_start(g.tensors[t].kind)) continue;
    persistent[t] = alloc64(g.tensors[t].bytes);
    if (const TensorValue* v = initial.find(t))
      std::memcpy(persistent[t].get(), v->data.data(), v->data.size());
    else
      throw Error(fmt::format("no initial value for {} tensor {} ('{}')",
                              to_string(g.tensors[t].kind), t, g.tensors[t].name));
  }
  // Inputs are never written back: each iteration reads the batch afresh.
  std::vector<AlignedBuffer> batch(n);
  for (TensorId t = 0; t < n; ++t)
    if (g.tensors[t].kind == TensorKind::kInput) batch[t] = alloc64(g.tensors[t].bytes);

  ProgramOrderResult r;
  std::vector<std::byte*> ptrs;
  for (int it = 0; it < iterations; ++it) {
    std::vector<AlignedBuffer> transient(n);
    for (TensorId t = 0; t < n; ++t)
      if (batch[t]) std::memcpy(batch[t].get(), persistent[t].get(), g.tensors[t].bytes);
    for (OpId op = 0; op < g.num_ops(); ++op) {
      ptrs.clear();
      for_each_access(g.ops[op], [&](TensorId t, Access a) {
        if (a == Access::kCreate) transient[t] = alloc64(g.tensors[t].bytes);
        std::byte* ptr = batch[t]        ? batch[t].get()
                         : persistent[t] ? persistent[t].get()
                                         : transient[t].get();
        SA_CHECK(ptr != nullptr, "tensor {} used before it exists", t);
        ptrs.push_back(ptr);
      });
      kernels->run(op, ptrs, nullptr);
    }
  }
  r.losses = kernels->losses();
  r.stats = kernels->stats();
  r.final_state.graph = g.name;
  for (TensorId t = 0; t < n; ++t) {
    if (!is_persistent(g.tensors[t].kind)) continue;
    TensorValue v;
    v.tensor = t;
    v.name = g.tensors[t].name;
    v.kind = std::string(to_string(g.tensors[t].kind));
    const TensorValue* init = initial.find(t);
    v.data.resize(init ? init->data.size() : static_cast<size_t>(g.tensors[t].bytes));
    std::memcpy(v.data.data(), persistent[t].get(), v.data.size());
    r.final_state.tensors.push_back(std::move(v));
  }
  return r;
}

}  // namespace sa::runtime
