// The ATen kernel backend (Note [ATen kernels], runtime/aten/aten_kernels.h): with
// runtime/aten/aten_values.cpp, the translation units that include libtorch
// headers (they compile slowly; scripts/check-torch-api checks both).
// Written against the libtorch C++ API that is the same in 1.13 (Debian 12)
// and 2.x; the few differences are under SA_TORCH_2_3.

#include "runtime/aten/aten_kernels.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/ScalarOps.h>
#include <ATen/core/Generator.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/Storage.h>
#include <c10/core/TensorImpl.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/api/include/torch/version.h>

#include "runtime/aten/aten_access.h"
#include "runtime/aten/aten_values.h"
#include "runtime/aten/placement_slots.h"
#include "util/error.h"
#include "util/json.h"

#ifndef SA_ATEN_CUDA
#define SA_ATEN_CUDA 0  // set by aten.cmake when libtorch has CUDA
#endif
#if SA_ATEN_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "runtime/aten/aten_cuda.h"
#endif

// torch 2.3 made Allocator::allocate non-const and added copy_data.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define SA_TORCH_2_3 1
#define SA_ALLOCATE_CONST
#else
#define SA_TORCH_2_3 0
#define SA_ALLOCATE_CONST const
#endif

namespace sa::runtime {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

using namespace aten_values;  // runtime/aten/aten_values.h

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

// Kernel allocations on the CPU: the planned object for an expected output,
// aligned host memory (counted as scratch) for everything else
// (runtime/aten/placement_slots.h). Every DataPtr has its data as its context and
// one deleter (raw_allocate, which oneDNN uses, requires both).
class PlacingAllocator final : public c10::Allocator {
 public:
  PlacingAllocator() { instance_ = this; }
  ~PlacingAllocator() override { instance_ = nullptr; }

  PlacementSlots& slots() { return slots_; }

  c10::DataPtr allocate(size_t n) SA_ALLOCATE_CONST override {
    void* p = slots_.take(static_cast<int64_t>(n), at::in_parallel_region());
    if (!p) {
      p = c10::alloc_cpu(std::max<size_t>(n, 1));
      slots_.note_scratch(p, static_cast<int64_t>(n));
    }
    return c10::DataPtr(p, p, &release, c10::Device(c10::kCPU));
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
#if SA_TORCH_2_3
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
#endif

 private:
  static void release(void* p) {
    PlacingAllocator* a = instance_;
    if (a && a->slots_.release(p)) c10::free_cpu(p);
  }

  static inline PlacingAllocator* instance_ = nullptr;
  mutable PlacementSlots slots_;
};

struct PreparedOp {
  c10::OperatorHandle handle;
  const c10::FunctionSchema* schema = nullptr;
};

class TorchKernels final : public AtenKernels {
 public:
  TorchKernels(const Graph& g, const AtenProgram& p, const AtenOptions& o)
      : g_(g), p_(p), o_(o), scalars_(p.step_scalars) {
    if (o.device == "cpu") {
      device_ = c10::Device(c10::kCPU);
      key_ = c10::DispatchKey::CPU;
    } else if (o.device == "cuda") {
#if SA_ATEN_CUDA
      if (!at::hasCUDA())
        throw Error(
            fmt::format("ATen kernels on cuda: libtorch {} finds no CUDA device", TORCH_VERSION));
      device_ = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(o.cuda_device));
      key_ = c10::DispatchKey::CUDA;
#else
      throw Error(fmt::format(
          "ATen kernels on cuda: this plugin was built with libtorch {} without CUDA (build "
          "swapadvisor against the libtorch of a PyTorch with CUDA: docs/capture.md, \"CUDA\")",
          TORCH_VERSION));
#endif
    } else {
      throw Error(fmt::format("ATen kernels: unknown device {} (cpu or cuda)", o.device));
    }
    if (o.threads > 0) at::set_num_threads(o.threads);
    auto& d = c10::Dispatcher::singleton();
    ops_.reserve(p.ops.size());
    for (OpId o = 0; o < static_cast<OpId>(p.ops.size()); ++o) {
      const AtenOp& op = p.ops[o];
      if (op.name == kCollectiveTypes[0]) {  // Note [ATen data parallelism]
        ops_.push_back(std::nullopt);
        continue;
      }
      auto h = d.findSchema({op.name, op.overload});
      if (!h)
        throw Error(fmt::format("{}: libtorch {} has no operator {}{}{} (captured with torch {})",
                                p.origin, TORCH_VERSION, op.name, op.overload.empty() ? "" : ".",
                                op.overload, p.torch_version));
      // Before anything runs (Note [ATen access check]).
      check_aten_access(g, p, o, describe_schema(h->schema()));
      ops_.push_back(PreparedOp{*h, &h->schema()});
    }
    rng_before_.resize(p.ops.size());
    if (p.rng_seed) {  // as torch.manual_seed does (Note [ATen recompute])
      at::Generator gen = generator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_current_seed(*p.rng_seed);
    }
    if (o.place_outputs && device_.is_cpu()) {
      previous_ = c10::GetAllocator(c10::kCPU);
      allocator_ = std::make_unique<PlacingAllocator>();
      c10::SetAllocator(c10::kCPU, allocator_.get(), kPriority);
      slots_ = &allocator_->slots();
    }
#if SA_ATEN_CUDA
    if (o.place_outputs && device_.is_cuda()) {
      slots_ = aten_cuda::placing_allocator(o.cuda_device, &no_placing_);
      if (!slots_ && debug_)
        fmt::print(stderr, "swapadvisor: aten: outputs are copied: {}\n", no_placing_);
    }
#endif
  }

  ~TorchKernels() override {
    // Tensors made while it was installed may outlive it (the caller's
    // results): their scratch memory is then never freed, a leak of at most
    // the last op's results; planned objects were never the allocator's.
    if (allocator_) {
      c10::SetAllocator(c10::kCPU, previous_, kPriority);
      allocator_.release();
    }
#if SA_ATEN_CUDA
    // The losses' scratch goes back while their stream exists (the caller
    // ends its streams after this: runtime/aten/aten_run.cpp).
    pending_losses_.clear();
    for (void* s : streams_)
      aten_cuda::stream_ends(s);
#endif
  }

  std::vector<double> losses() const override {
    std::vector<double> out = losses_;
#if SA_ATEN_CUDA
    // Read only now, so that the issuing thread never waits for the GPU
    // while it queues an iteration.
    for (const auto& [stream, loss] : pending_losses_) {
      c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(stream), device_.index())
          .synchronize();
      out.push_back(loss.item().toDouble());
    }
#endif
    return out;
  }
  double last_loss() const override {
#if SA_ATEN_CUDA
    if (!pending_losses_.empty()) {
      const auto& [stream, loss] = pending_losses_.back();
      c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(stream), device_.index())
          .synchronize();
      return loss.item().toDouble();
    }
#endif
    return losses_.empty() ? std::numeric_limits<double>::quiet_NaN() : losses_.back();
  }
  int64_t steps_skipped() const override {
    return steps_skipped_;
  }

  AtenStats stats() const override {
    AtenStats s = stats_;
    if (slots_) s.scratch_peak_bytes = slots_->scratch_peak_bytes();
    return s;
  }
  std::string description() const override {
    return fmt::format(
        "libtorch {} on {}, {} intra-op threads, {}", TORCH_VERSION, o_.device,
        at::get_num_threads(),
        slots_ ? "outputs placed by allocator"
               : "outputs copied" + (no_placing_.empty() ? "" : " (" + no_placing_ + ")"));
  }

  void set_step_scalars(std::span<const double> values) override {
    if (values.size() != p_.step_scalars.size())
      throw Error(fmt::format("{} step scalars for an exec file with {} (Note [Step scalars])",
                              values.size(), p_.step_scalars.size()));
    scalars_.assign(values.begin(), values.end());
  }

  void run(OpId o, std::span<std::byte* const> ptrs, void* stream) override {
    call(o, ptrs, stream, false);
  }
  void recompute(OpId o, std::span<std::byte* const> ptrs, void* stream) override {
    call(o, ptrs, stream, true);
  }

 private:
  static constexpr uint8_t kPriority = 200;

  // run() or recompute(): on CUDA with our stream as libtorch's, errors
  // named after the op.
  void call(OpId o, std::span<std::byte* const> ptrs, void* stream, bool again) {
    try {
#if SA_ATEN_CUDA
      if (device_.is_cuda()) {
        SA_CHECK(stream != nullptr, "op {}: no CUDA stream to run on", o);
        if (streams_.insert(stream).second) aten_cuda::stream_begins(stream);
        // Our compute stream is libtorch's current stream while the op's
        // kernels are queued (Note [ATen on CUDA]).
        c10::cuda::CUDAStreamGuard guard(
            c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(stream), device_.index()));
        if (!ops_[o])
          all_reduce(o, ptrs);
        else
          again ? run_again(o, ptrs, stream) : run_first(o, ptrs, stream);
        return;
      }
#endif
      if (!ops_[o])
        all_reduce(o, ptrs);
      else
        again ? run_again(o, ptrs, stream) : run_first(o, ptrs, stream);
    } catch (const c10::Error& e) {
      throw Error(fmt::format("op {} ({}): {}", o, p_.ops[o].qualname, torch_message(e)));
    } catch (const json::exception& e) {
      throw Error(
          fmt::format("op {} ({}): bad argument encoding: {}", o, p_.ops[o].qualname, e.what()));
    } catch (const Error& e) {
      throw Error(fmt::format("op {} ({}): {}", o, p_.ops[o].qualname, e.what()));
    }
  }

  // The device's default generator: what the captured random ops draw from.
  at::Generator generator() const {
    return at::globalContext().defaultGenerator(device_);
  }
  at::Tensor rng_state() const {
    at::Generator gen = generator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    return gen.get_state();
  }
  void set_rng_state(const at::Tensor& state) {
    at::Generator gen = generator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(state);
  }

  // Note [ATen recompute]: a random op's first run keeps the state it
  // starts from.
  void run_first(OpId o, std::span<std::byte* const> ptrs, void* stream) {
    if (p_.ops[o].random) rng_before_[o] = rng_state();
    run_op(o, ptrs, stream, false);
  }

  // Note [ATen recompute]: the draws of the first run again, and none of
  // the live stream's.
  void run_again(OpId o, std::span<std::byte* const> ptrs, void* stream) {
    const bool random = p_.ops[o].random;
    if (random && !rng_before_[o].defined())
      throw Error("recomputed before it ran: there is no random state to replay");
    const at::Tensor live = rng_state();
    try {
      if (random) set_rng_state(rng_before_[o]);
      run_op(o, ptrs, stream, true);
      if (!random && !same_state(rng_state(), live))
        throw Error(
            "it drew random numbers when run again, but the exec file does not mark it random: "
            "its draws cannot be replayed, so it may not be recomputed (capture the model "
            "again with this swapadvisor-capture, or plan with --no-recompute)");
    } catch (...) {
      set_rng_state(live);
      throw;
    }
    set_rng_state(live);
    ++stats_.ops_recomputed;
    stats_.random_replays += random;
  }

  static bool same_state(const at::Tensor& a, const at::Tensor& b) {
    return a.nbytes() == b.nbytes() && std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
  }

  // The storages of one call: one per tensor the op accesses.
  struct Call {
    std::unordered_map<TensorId, std::pair<std::byte*, c10::Storage>> storage;
  };

  c10::Storage& storage_of(Call& call, TensorId t) {
    auto it = call.storage.find(t);
    if (it == call.storage.end())
      throw Error(fmt::format("tensor {} is not an access of the op", t));
    return it->second.second;
  }

  at::Tensor view(Call& call, const json& v) {
    const TensorId t = v.at("tensor").get<TensorId>();
    c10::Storage s = storage_of(call, t);
    at::Tensor x = at::detail::make_tensor<c10::TensorImpl>(
        std::move(s), c10::DispatchKeySet(key_),
        caffe2::TypeMeta::fromScalarType(scalar_type(v.at("dtype").get<std::string>())));
    const auto sizes = ints(v.at("sizes"));
    const auto strides = ints(v.at("strides"));
    x.unsafeGetTensorImpl()->set_sizes_and_strides(
        c10::IntArrayRef(sizes), c10::IntArrayRef(strides), v.at("offset").get<int64_t>());
    return x;
  }

  at::Tensor empty(const json& v) {
    return at::empty_strided(
        ints(v.at("sizes")), ints(v.at("strides")),
        at::TensorOptions().dtype(scalar_type(v.at("dtype").get<std::string>())).device(device_));
  }

  at::Tensor wrapped(const json& v) {
    at::Tensor t = at::scalar_to_tensor(number(v));
    t.unsafeGetTensorImpl()->set_wrapped_number(true);
    return t;
  }

  c10::IValue decode(const json& v, const c10::TypePtr& type, Call& call) {
    using K = c10::TypeKind;
    if (v.is_object()) {
      if (v.contains("tensor")) return view(call, v);
      if (v.contains("empty")) return empty(v);
      if (v.contains("dtype"))
        return c10::IValue(static_cast<int64_t>(scalar_type(v.at("dtype").get<std::string>())));
      if (v.contains("layout")) return c10::IValue(static_cast<int64_t>(c10::kStrided));
      if (v.contains("memory_format"))
        return c10::IValue(
            static_cast<int64_t>(memory_format(v.at("memory_format").get<std::string>())));
      if (v.contains("device")) return c10::IValue(device_);
    }
    switch (type->kind()) {
      case K::OptionalType:
        if (v.is_null()) return c10::IValue();
        return decode(v, type->expectRef<c10::OptionalType>().getElementType(), call);
      case K::TensorType:
        if (v.is_null()) return c10::IValue();
        return wrapped(v);
      case K::IntType:
      case K::SymIntType:
        return c10::IValue(v.get<int64_t>());
      case K::FloatType:
        return c10::IValue(v.is_number_integer() ? static_cast<double>(v.get<int64_t>())
                                                 : decode_float(v));
      case K::BoolType:
        return c10::IValue(v.get<bool>());
      case K::NumberType:
        return c10::IValue(number(v));
      case K::StringType:
        return c10::IValue(v.get<std::string>());
      case K::ListType:
        return decode_list(v, type->expectRef<c10::ListType>().getElementType(), call);
      case K::GeneratorType:
        if (v.is_null()) return c10::IValue();
        break;
      default:
        break;
    }
    throw Error(fmt::format("cannot pass {} as {}", excerpt(v), type->str()));
  }

  c10::IValue decode_list(const json& v, const c10::TypePtr& elem, Call& call) {
    using K = c10::TypeKind;
    if (!v.is_array()) {
      // "int[2] stride=1": a single int for a fixed-size list
      if (v.is_number_integer() && (elem->kind() == K::IntType || elem->kind() == K::SymIntType))
        return c10::IValue(c10::List<int64_t>({v.get<int64_t>()}));
      throw Error(fmt::format("expected a list, got {}", excerpt(v)));
    }
    switch (elem->kind()) {
      case K::IntType:
      case K::SymIntType: {
        c10::List<int64_t> l;
        for (const auto& x : v)
          l.push_back(x.get<int64_t>());
        return c10::IValue(std::move(l));
      }
      case K::FloatType: {
        c10::List<double> l;
        for (const auto& x : v)
          l.push_back(x.is_number_integer() ? x.get<int64_t>() : decode_float(x));
        return c10::IValue(std::move(l));
      }
      case K::BoolType: {
        c10::List<bool> l;
        for (const auto& x : v)
          l.push_back(x.get<bool>());
        return c10::IValue(std::move(l));
      }
      case K::TensorType: {
        c10::List<at::Tensor> l;
        for (const auto& x : v)
          l.push_back(decode(x, elem, call).toTensor());
        return c10::IValue(std::move(l));
      }
      case K::OptionalType: {
        const c10::TypePtr inner = elem->expectRef<c10::OptionalType>().getElementType();
        if (inner->kind() == K::TensorType) {
          c10::List<c10::optional<at::Tensor>> l;
          for (const auto& x : v) {
            if (x.is_null())
              l.push_back(c10::nullopt);
            else
              l.push_back(decode(x, inner, call).toTensor());
          }
          return c10::IValue(std::move(l));
        }
        break;
      }
      case K::NumberType: {
        c10::impl::GenericList l(c10::NumberType::get());
        for (const auto& x : v)
          l.push_back(c10::IValue(number(x)));
        return c10::IValue(std::move(l));
      }
      default:
        break;
    }
    throw Error(fmt::format("unsupported list type {}[]", elem->str()));
  }

  // Note [Skipped steps]: whether the flag (found_inf) is set this iteration.
  // It is read once per iteration, at its first op that names it (on CUDA,
  // a wait for the compute stream): the loss is read before the optimizer's
  // ops, so the count of losses tells the iterations apart.
  bool skipping(Call& call, TensorId flag) {
    const size_t iteration = losses_.size()
#if SA_ATEN_CUDA
                             + pending_losses_.size()
#endif
        ;
    if (flag_iteration_ != iteration) {
      flag_iteration_ = iteration;
      const json at = {{"tensor", flag},
                       {"dtype", "float32"},
                       {"sizes", json::array()},
                       {"strides", json::array()},
                       {"offset", 0}};
      flag_set_ = view(call, at).item().toFloat() != 0.0f;
      steps_skipped_ += flag_set_;
    }
    return flag_set_;
  }

  // Whether result r (encoded as enc) lies, even in part, in the object of an
  // output of gop other than its own.
  bool in_another_output(const Call& call, const Op& gop, const json& enc,
                         const at::Tensor& r) const {
    const TensorId own = enc.at("tensor").get<TensorId>();
    const auto* rb = static_cast<const std::byte*>(r.storage().data());
    const size_t rn = r.storage().nbytes();
    for (TensorId t : gop.outputs) {
      if (t == own) continue;
      const std::byte* obj = call.storage.at(t).first;
      if (rb < obj + g_.tensors[t].bytes && obj < rb + rn) return true;
    }
    return false;
  }

  // A result the op created: in its object with the captured geometry, or
  // copied there.
  void place(Call& call, const json& enc, const at::Tensor& r) {
    const TensorId t = enc.at("tensor").get<TensorId>();
    std::byte* obj = call.storage.at(t).first;
    const auto sizes = ints(enc.at("sizes"));
    const auto strides = ints(enc.at("strides"));
    const int64_t offset = enc.at("offset").get<int64_t>();
    if (r.sizes() != c10::IntArrayRef(sizes))
      throw Error(fmt::format("result for tensor {} has sizes {}, the capture {}", t,
                              fmt::join(r.sizes(), ","), fmt::join(sizes, ",")));
    const bool in_place = r.storage().data() == static_cast<void*>(obj) &&
                          r.strides() == c10::IntArrayRef(strides) &&
                          r.storage_offset() == offset &&
                          r.scalar_type() == scalar_type(enc.at("dtype").get<std::string>());
    if (in_place) {
      ++stats_.outputs_placed;
      return;
    }
    if (debug_)
      fmt::print(stderr,
                 "swapadvisor: aten: op {}: copying result tensor {} ({} bytes, {}): storage {} "
                 "object {}, "
                 "strides {} captured {}\n",
                 current_, t, r.storage().nbytes(), c10::toString(r.scalar_type()),
                 r.storage().data(), static_cast<void*>(obj), fmt::join(r.strides(), ","),
                 fmt::join(strides, ","));
    const auto t0 = Clock::now();
    at::Tensor dst = view(call, enc);
    const auto* rb = static_cast<const std::byte*>(r.storage().data());
    const bool overlaps = rb < obj + g_.tensors[t].bytes && obj < rb + r.storage().nbytes();
    if (overlaps)
      dst.copy_(r.clone());
    else
      dst.copy_(r);
    ++stats_.outputs_copied;
    stats_.copied_bytes += static_cast<int64_t>(r.numel()) * r.element_size();
    stats_.copy_us += us_since(t0);
  }

  // A storage over each object op o accesses (ptrs in for_each_step_access
  // order). Note [Recompute without updates]: a recompute of an op that
  // skips its updates has no objects for them; it updates zeroed scratch
  // storages of their size instead, which its outputs do not depend on.
  Call storages(OpId o, std::span<std::byte* const> ptrs, bool again = false) {
    Call call;
    size_t k = 0;
    const Op& op = g_.ops[o];
    if (!step_touches_updates(op, again))
      for (TensorId t : op.updates) {
        at::Tensor scratch =
            at::zeros({g_.tensors[t].bytes}, at::TensorOptions().dtype(c10::kByte).device(device_));
        call.storage.emplace(t, std::make_pair(nullptr, scratch.storage()));
      }
    for_each_step_access(op, again, [&](TensorId t, Access) {
      SA_CHECK(k < ptrs.size(), "op {}: {} pointers for more accesses", o, ptrs.size());
      std::byte* p = ptrs[k++];
      call.storage.emplace(
          t, std::make_pair(p, c10::Storage(c10::Storage::use_byte_size_t(),
                                            static_cast<size_t>(g_.tensors[t].bytes),
                                            c10::DataPtr(p, device_), nullptr, false)));
    });
    SA_CHECK(k == ptrs.size(), "op {}: {} pointers for {} accesses", o, ptrs.size(), k);
    return call;
  }

  // Note [ATen data parallelism]: each gradient averaged over the ranks, in
  // place, through host memory.
  void all_reduce(OpId o, std::span<std::byte* const> ptrs) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    Call call = storages(o, ptrs);
    const auto t0 = Clock::now();
    for (const json& v : p_.ops[o].args) {
      at::Tensor x = view(call, v);
      if (x.numel() == 0) continue;
      const bool in_place =
          x.is_cpu() && (x.scalar_type() == c10::kFloat || x.scalar_type() == c10::kDouble);
      // On CUDA, to() waits for the current (compute) stream's work.
      at::Tensor h =
          in_place ? x
                   : x.to(c10::kCPU, x.scalar_type() == c10::kDouble ? c10::kDouble : c10::kFloat)
                         .contiguous();
      if (o_.all_reduce_mean)
        o_.all_reduce_mean(h.data_ptr(), h.numel(), static_cast<int>(h.element_size()));
      if (!in_place) x.copy_(h);
    }
    stats_.kernel_us += us_since(t0);
    ++stats_.ops_run;
    ++stats_.all_reduces;
  }

  // Note [Step scalars]: the current value of the argument `is` picks, as a
  // JSON number (decoded as the captured number was), or null.
  template <class Pred>
  const json* step_scalar(const AtenOp& op, Pred is) {
    for (const StepScalarUse& u : op.step_scalars)
      if (is(u)) {
        scalar_json_ = scalars_[static_cast<size_t>(u.slot)];
        return &scalar_json_;
      }
    return nullptr;
  }

  // again: a recompute (Note [ATen recompute]), which does not read the loss.
  void run_op(OpId o, std::span<std::byte* const> ptrs, void* stream, bool again) {
    const Op& gop = g_.ops[o];
    const AtenOp& op = p_.ops[o];
    SA_CHECK(ops_[o].has_value(), "op {}: not an operator", o);
    const PreparedOp& prep = *ops_[o];
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    if (debug_) current_ = fmt::format("{} ({})", o, op.qualname);

    Call call = storages(o, ptrs, again);
    if (op.skip_if_nonzero >= 0 && skipping(call, op.skip_if_nonzero)) return;

    // The stack: positional arguments, keyword arguments by name, defaults.
    const auto& args = prep.schema->arguments();
    torch::jit::Stack stack;
    stack.reserve(args.size());
    size_t pos = 0;
    for (const c10::Argument& a : args) {
      if (!a.kwarg_only() && pos < op.args.size()) {
        const int at = static_cast<int>(pos++);
        const json* sub = step_scalar(op, [&](const StepScalarUse& u) { return u.position == at; });
        stack.push_back(decode(sub ? *sub : op.args[static_cast<size_t>(at)], a.type(), call));
      } else if (op.kwargs.contains(a.name())) {
        const json* sub =
            step_scalar(op, [&](const StepScalarUse& u) { return u.kwarg == a.name(); });
        stack.push_back(decode(sub ? *sub : op.kwargs.at(a.name()), a.type(), call));
      } else if (a.default_value()) {
        stack.push_back(*a.default_value());
      } else {
        throw Error(fmt::format("argument {} is missing and has no default", a.name()));
      }
    }
    if (pos != op.args.size())
      throw Error(fmt::format("{} positional arguments for a schema with {}", op.args.size(), pos));

    if (slots_) {
      std::vector<PlacementSlots::Slot> slots;
      for (TensorId t : gop.outputs)
        slots.push_back({call.storage.at(t).first, p_.storage_bytes[t], false});
      slots_->arm(std::move(slots));
    }
    const auto t0 = Clock::now();
    try {
      prep.handle.callBoxed(&stack);
    } catch (...) {
      if (slots_) slots_->disarm();
      throw;
    }
    if (slots_) slots_->disarm();
    stats_.kernel_us += us_since(t0);
    ++stats_.ops_run;

    // Results: stack holds the returns.
    const size_t nret = prep.schema->returns().size();
    if (stack.size() != nret)
      throw Error(fmt::format("{} values returned for {} returns", stack.size(), nret));
    std::vector<std::pair<const json*, at::Tensor>> results;
    for (size_t i = 0; i < nret && i < op.results.size(); ++i) {
      const json& enc = op.results[i];
      if (enc.is_null()) continue;
      if (enc.is_array()) {
        const auto list = stack[i].toTensorList();
        for (size_t j = 0; j < enc.size(); ++j) {
          if (enc[j].is_null()) continue;
          // An output the op did not return would keep what its object held.
          if (j >= list.size())
            throw Error(fmt::format("return {} is a list of {} tensors, the exec file places {}", i,
                                    list.size(), enc.size()));
          results.emplace_back(&enc[j], list.get(j));
        }
      } else {
        results.emplace_back(&enc, stack[i].toTensor());
      }
    }
    stack.clear();
    // The placing allocator gives an output's object to the first allocation
    // of its size: a kernel that allocates two outputs of one size in
    // another order than it returns them (torch 2.6's convolution_backward,
    // when grad_input and grad_weight have the same bytes) leaves each in the
    // other's object. Copying one into its object would then overwrite the
    // other before it is copied: such results are copied out first.
    for (auto& [enc, r] : results)
      if (r.defined() && in_another_output(call, gop, *enc, r)) r = r.clone();
    for (const auto& [enc, r] : results)
      place(call, *enc, r);

    if (o == p_.loss_after_op && !again) {
      if (device_.is_cpu()) {
        losses_.push_back(view(call, p_.loss_view).item().toDouble());
      } else {
#if SA_ATEN_CUDA
        // A copy on the stream (the object may be reused before losses()).
        pending_losses_.emplace_back(stream, view(call, p_.loss_view).clone());
#endif
      }
    }
    (void)stream;
  }

  const Graph& g_;
  const AtenProgram& p_;
  AtenOptions o_;
  c10::Device device_{c10::kCPU};
  c10::DispatchKey key_ = c10::DispatchKey::CPU;
  std::vector<std::optional<PreparedOp>> ops_;  // none: an all-reduce
  c10::Allocator* previous_ = nullptr;
  std::unique_ptr<PlacingAllocator> allocator_;  // CPU
  PlacementSlots* slots_ = nullptr;  // the placing allocator's, CPU or CUDA; null: outputs copied
  std::string no_placing_;           // why outputs are copied on CUDA
  // Note [Skipped steps]: the iteration (count of losses) whose flag was read,
  // what it said, and the iterations that skipped.
  size_t flag_iteration_ = SIZE_MAX;
  bool flag_set_ = false;
  int64_t steps_skipped_ = 0;
  std::vector<double> losses_;
  // Per random op: the generator state its latest run began with.
  std::vector<at::Tensor> rng_before_;
#if SA_ATEN_CUDA
  std::vector<std::pair<void*, at::Tensor>> pending_losses_;  // CUDA: (stream, loss) to read
  std::unordered_set<void*> streams_;                         // the CUDA streams run on
#endif
  AtenStats stats_;
  std::vector<double> scalars_;                           // Note [Step scalars]: this iteration's
  json scalar_json_;                                      // the one being decoded
  bool debug_ = std::getenv("SA_ATEN_DEBUG") != nullptr;  // report every copied result
  std::string current_;                                   // the op being run (for debug_)
};

}  // namespace

static std::unique_ptr<AtenKernels> make_torch_kernels(const Graph& g, const AtenProgram& p,
                                                       const AtenOptions& o) {
  return std::make_unique<TorchKernels>(g, p, o);
}

}  // namespace sa::runtime

extern "C" __attribute__((visibility("default"))) const sa::runtime::AtenPlugin* sa_aten_plugin() {
  static const sa::runtime::AtenPlugin plugin{sa::runtime::kAtenPluginAbi, SA_VERSION,
                                              TORCH_VERSION, &sa::runtime::make_torch_kernels};
  return &plugin;
}
