#include "runtime/aten/aten_run.h"

#include <cstring>

#include <fmt/format.h>

#include "runtime/cuda/cuda_backend.h"
#include "runtime/host/host_backend.h"
#include "util/error.h"

namespace sa::runtime {

AtenRunResult run_plan_aten(const Graph& g, const Plan& p, const AtenProgram& program,
                            const ValuesFile& initial, const AtenRunOptions& o) {
  if (o.aten.device != "cpu" && o.aten.device != "cuda")
    throw Error(fmt::format("--kernels aten: unknown device '{}' (cpu: the host backend, cuda)",
                            o.aten.device));
  check_values_against(initial, g, "initial values", program.storage_bytes);
  for (TensorId t = 0; t < g.num_tensors(); ++t)
    if (exists_at_start(g.tensors[t].kind) && !initial.find(t))
      throw Error(fmt::format("the values file has no value for {} tensor {} ('{}')",
                              to_string(g.tensors[t].kind), t, g.tensors[t].name));

  // The backend outlives the kernels: on CUDA their last scratch goes back on
  // the backend's compute stream (Note [ATen on CUDA]). The kernels come
  // first: on CUDA they must take libtorch's allocator before it is used.
  std::unique_ptr<Backend> backend;
  std::unique_ptr<AtenKernels> kernels = make_aten_kernels(g, program, o.aten);
  AtenKernels* k = kernels.get();

  // The op's accesses from the kernel table, less its workspace (the
  // captured ops have none), are its pointers in for_each_access order.
  // Note [Step scalars]: an iteration's values are asked for just before
  // its first op that takes one (the optimizer's, at the end of the
  // iteration), on the thread that runs the kernels, so that a training
  // loop computes them while the forward and backward passes run. Ops run
  // one at a time in the compute stream's order: no op reads the values
  // while they change.
  std::vector<char> takes_scalars(program.ops.size(), 0);
  int iteration = -1;
  int scalars_of = -1;  // the iteration whose values the kernels hold
  OpKernelHook hook = [&, k](int32_t op, bool recompute,
                             std::span<const synthetic::KernelAccess> accesses, std::byte* arena,
                             void* stream) {
    if (scalars_of != iteration && static_cast<size_t>(op) < takes_scalars.size() &&
        takes_scalars[static_cast<size_t>(op)]) {
      scalars_of = iteration;
      if (std::vector<double> v = o.step_scalars(iteration); !v.empty()) k->set_step_scalars(v);
    }
    std::byte* ptrs[64];
    std::vector<std::byte*> many;
    std::byte** out = ptrs;
    if (accesses.size() > std::size(ptrs)) {
      many.resize(accesses.size());
      out = many.data();
    }
    size_t n = 0;
    for (const synthetic::KernelAccess& a : accesses)
      if (a.role != synthetic::Role::kWorkspace) out[n++] = arena + a.offset;
    const std::span<std::byte* const> objects(out, n);
    recompute ? k->recompute(op, objects, stream) : k->run(op, objects, stream);
  };
  if (o.aten.device == "cuda") {
    CudaBackendOptions co;
    co.device = o.aten.cuda_device;
    co.kernel = std::move(hook);
    backend = make_cuda_backend(co);
  } else {
    HostBackendOptions ho;
    ho.pace = false;  // copies are plain memcpy; the kernels take their real time
    ho.kernel = std::move(hook);
    backend = make_host_backend(ho);
  }

  AtenRunResult r;
  r.final_state.graph = g.name;
  RunOptions ro;
  ro.iterations = o.iterations;
  ro.ranks = o.ranks;
  ro.time_scale = 0;
  ro.check_integrity = false;
  ro.agree = "kernels: aten";  // every rank (Note [Rank failures] in runtime/mpi/ranks.h)
  ro.nvme_path = o.nvme_path;
  ro.next_batch = o.next_batch;
  if (o.step_scalars) {
    ro.next_batch = [&](int it) {
      if (o.next_batch && !o.next_batch(it)) return false;
      iteration = it;
      return true;
    };
    for (OpId op = 0; op < static_cast<OpId>(program.ops.size()); ++op)
      takes_scalars[static_cast<size_t>(op)] = !program.ops[op].step_scalars.empty();
  }
  ro.init_host = [&](TensorId t, std::byte* host, int64_t bytes) {
    if (o.batch_value && g.tensors[t].kind == TensorKind::kInput) {
      o.batch_value(t, host, bytes);
      return;
    }
    const TensorValue* v = initial.find(t);
    std::memset(host, 0, static_cast<size_t>(bytes));
    if (v) std::memcpy(host, v->data.data(), v->data.size());
  };
  ro.final_value = [&](TensorId t, const std::byte* data, int64_t bytes) {
    const TensorValue* init = initial.find(t);
    TensorValue v;
    v.tensor = t;
    v.name = g.tensors[t].name;
    v.kind = std::string(to_string(g.tensors[t].kind));
    const int64_t n = init ? static_cast<int64_t>(init->data.size()) : bytes;
    v.data.assign(data, data + n);
    r.final_state.tensors.push_back(std::move(v));
  };
  int64_t skipped_before = 0;
  if (o.on_loss)
    ro.on_iteration = [&](int it, double) {
      const int64_t skipped = k->steps_skipped();
      o.on_loss(it, k->last_loss(), skipped != skipped_before);
      skipped_before = skipped;
    };
  const std::vector<double> op_us(g.num_ops(), 0.0);
  r.run = run_plan(*backend, g, p, op_us, ro);
  r.losses = kernels->losses();
  r.stats = kernels->stats();
  r.kernels = kernels->description();
  return r;
}

std::optional<std::pair<OpId, OpId>> random_ops_out_of_order(const Plan& p,
                                                             const AtenProgram& program) {
  OpId last = kNoOp;
  for (OpId o : p.order) {
    if (!program.ops[o].random) continue;
    if (last != kNoOp && o < last) return std::make_pair(last, o);
    last = o;
  }
  return std::nullopt;
}

}  // namespace sa::runtime
