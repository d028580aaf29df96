#include "runtime/executor.h"
#include "runtime/mpi/ranks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "plan/host_tier.h"
#include "plan/plan_io.h"
#include "runtime/kernel_table.h"
#include "runtime/nvme/nvme_store.h"
#include "runtime/reference.h"
#include "runtime/synthetic_op.h"
#include "util/error.h"
#include "util/range_map.h"

namespace sa::runtime {
namespace {

using StreamSteps = std::array<StepId, kNumStreams>;  // per stream, a step id or -1
constexpr StreamSteps kNoSteps = {-1, -1, -1, -1};

// The stream the runtime runs a step on: the plan's (stream_of), except
// that a collective runs on the compute stream, as the runtime has no
// collective stream yet (docs/runtime.md; the plan's waits make that safe).
Stream run_stream(const Graph& g, const Step& s) {
  const Stream st = stream_of(g, s);
  return st == Stream::kCollective ? Stream::kCompute : st;
}

std::string tensor_label(const Graph& g, TensorId t) {
  const Tensor& x = g.tensors[t];
  return x.name.empty() ? fmt::format("tensor {}", t) : fmt::format("tensor {} '{}'", t, x.name);
}

std::string op_named(const Graph& g, OpId o) {
  const Op& op = g.ops[o];
  return op.name.empty() ? fmt::format("op {} ({})", o, op.type)
                         : fmt::format("op {} '{}' ({})", o, op.name, op.type);
}

class Executor {
 public:
  Executor(Backend& b, const Graph& g, const Plan& p, std::span<const double> op_us,
           const RunOptions& o)
      : b_(b), g_(g), p_(p), op_us_(op_us), o_(o) {}

  ~Executor() {
    // Nothing may still run against the buffers and events freed below.
    try {
      b_.synchronize();
    } catch (...) {
    }
  }

  RunResult run() {
    // Under mpirun, the ranks agree on what they run before anything is
    // allocated, and meet again after the setup, where an arena one of them
    // cannot allocate fails every rank (Note [Rank failures] in
    // runtime/mpi/ranks.h). With one rank, nothing.
    const bool ranks = o_.ranks.size > 1;
    if (ranks) {
      const RunFingerprint fp = fingerprint();
      checkpoint(&fp, nullptr);
    }
    std::exception_ptr error;
    try {
      setup();
      warm_up();
    } catch (...) {
      if (!ranks) throw;
      error = std::current_exception();
    }
    if (ranks) checkpoint(nullptr, error);
    collectives_begin();

    const bool calibrate = static_cast<bool>(o_.choose_time_scale);
    const int checked = o_.iterations + (calibrate ? 1 : 0);
    Reference ref;
    if (o_.check_integrity) {
      ref = run_reference(g_, checked, o_.ranks.rank);
      r_.integrity_checked = true;
    }
    scale_ = o_.time_scale;
    if (calibrate) {  // Note [Automatic time scale]
      scale_ = 0;
      b_.set_time_scale(0);
      issue_iteration();
      b_.synchronize();
      r_.calibration_wall_us = iteration_wall_us();
      if (o_.check_integrity) check(0, "the calibration iteration", ref);
      scale_ = o_.choose_time_scale(r_.calibration_wall_us);
      SA_CHECK(scale_ >= 0, "time scale {}", scale_);
      b_.set_time_scale(scale_);
    }
    r_.time_scale = scale_;
    for (int it = 0; it < o_.iterations; ++it) {
      if (o_.next_batch && !o_.next_batch(it)) break;
      b_.take_kernel_overrun();  // not the warm-up's
      issue_iteration();
      b_.synchronize();
      const Backend::KernelOverrun late = b_.take_kernel_overrun();
      r_.late_kernels.push_back(late.kernels);
      r_.kernel_overrun_wall_us.push_back(late.wall_us);
      collect_timing();
      if (o_.on_iteration) o_.on_iteration(it, r_.iteration_wall_us.back());
      const int ref_it = it + (calibrate ? 1 : 0);
      if (o_.check_integrity && r_.integrity_ok)
        check(ref_it, fmt::format("iteration {}", it + 1), ref);
      else if (o_.check_integrity)
        // Computed all the same: under mpirun the reference's collectives
        // must be issued on every rank, in step with the others' (Note
        // [Ranks] in runtime/mpi/ranks.h), whether this rank's check failed.
        (void)ref.slots[ref_it];
    }
    collectives_end();
    if (o_.final_value) read_back();
    return std::move(r_);
  }

 private:
  // What every rank must agree on (Note [Rank failures]).
  RunFingerprint fingerprint() const {
    RunFingerprint fp;
    fp.graph = graph_fingerprint(g_);
    // The whole plan as its file has it: steps, waits, objects, budget.
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (const char c : plan_to_json(g_, p_))
      h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
    fp.plan = h;
    fp.graph_text =
        fmt::format("'{}' ({} ops, {} tensors)", g_.name, g_.num_ops(), g_.num_tensors());
    fp.plan_text =
        fmt::format("'{}' (budget {} B, {} steps)", p_.method, p_.memory_budget, p_.num_steps());
    fp.options =
        fmt::format("iterations: {}; integrity check: {}; calibration iteration: {}", o_.iterations,
                    o_.check_integrity ? "on" : "off", o_.choose_time_scale ? "on" : "off");
    if (!o_.agree.empty()) fp.options += "; " + o_.agree;
    return fp;
  }

  void setup() {
    if (p_.arena_bytes() > p_.memory_budget)
      throw Error(fmt::format("the plan's objects reach {} B, over its memory budget ({} B)",
                              p_.arena_bytes(), p_.memory_budget));
    r_.arena_bytes = p_.memory_budget;
    arena_ = b_.alloc_device(p_.memory_budget);
    for (const Block& b : p_.objects)
      r_.pool_end_bytes = std::max(r_.pool_end_bytes, b.end());
    SA_CHECK(r_.pool_end_bytes <= arena_.bytes(), "object past the arena's end");

    // Host storage: one arena for the slots and the NVMe staging (Note
    // [Host arena]); a load buffer for a value that only loads the device.
    const int n = g_.num_tensors();
    const HostArena layout = host_arena(g_, p_);
    host_arena_ = b_.alloc_host(layout.bytes);
    r_.host_bytes = layout.bytes;
    host_.assign(n, nullptr);
    load_.resize(n);
    for (TensorId t = 0; t < n; ++t)
      if (layout.slot_offset[t] >= 0) host_[t] = host_arena_.data() + layout.slot_offset[t];
    if (!p_.nvme_tensors.empty()) open_nvme(layout.staging_chunk);
    // (A plan that swaps in what it never copied out is wrong: it reads its
    // load buffer, and the integrity check says so.)
    std::vector<uint8_t> need(n, 0);
    for (TensorId t = 0; t < n; ++t)
      need[t] = exists_at_start(g_.tensors[t].kind);
    for (const Step& s : p_.steps)
      if (s.kind == StepKind::kSwapIn) need[s.tensor()] = 1;
    for (TensorId t = 0; t < n; ++t) {
      if (!need[t]) continue;
      if (!host_[t] && !on_nvme(t)) {
        load_[t] = b_.alloc_host(g_.tensors[t].bytes);
        host_[t] = load_[t].data();
      }
      if (exists_at_start(g_.tensors[t].kind)) init_host(t);
    }
    if (o_.next_batch) {
      for (TensorId t = 0; t < n; ++t)
        if (g_.tensors[t].kind == TensorKind::kInput) reset_inputs_.push_back(t);
    } else {
      reset_inputs_ = updated_inputs(g_);
    }

    // Kernels, checksum slots (op slots, then one per persistent tensor).
    layout_ = make_slot_layout(g_);
    // Kernel k runs op k; the recompute steps' kernels follow (kernel_table.h).
    kernel_of_step_.assign(p_.num_steps(), -1);
    int32_t next_kernel = g_.num_ops();
    for (StepId s = 0; s < p_.num_steps(); ++s)
      if (p_.steps[s].kind == StepKind::kCompute)
        kernel_of_step_[s] = p_.steps[s].op();
      else if (p_.steps[s].kind == StepKind::kRecompute)
        kernel_of_step_[s] = next_kernel++;
    for (TensorId t = 0; t < n; ++t)
      if (is_persistent(g_.tensors[t].kind)) persistent_.push_back(t);
    b_.load_kernels(make_kernel_table(g_, layout_, &p_), arena_.data(),
                    layout_.num_slots() + static_cast<int>(persistent_.size()));

    begin_ = b_.create_event();
    events_.resize(p_.num_steps());
    for (StepId s = 0; s < p_.num_steps(); ++s)
      if (run_stream(g_, p_.steps[s]) != Stream::kNone) events_[s] = b_.create_event();
    resident_object_.assign(n, kNoObject);
    for (const ResidentTensor& rt : p_.initial_resident)
      resident_object_[rt.tensor] = rt.object;

    const PlanTraffic traffic = plan_traffic(g_, p_);
    r_.swap_in_bytes = traffic.swap_in_bytes;
    r_.swap_out_bytes = traffic.swap_out_bytes;
    r_.recomputes = traffic.recomputes;
  }

  std::byte* object_ptr(ObjectId k) { return arena_.data() + p_.objects[k].offset; }

  void init_host(TensorId t) {
    const int64_t bytes = g_.tensors[t].bytes;
    AlignedBuffer scratch;  // Note [Host tier]: filled here, then written to NVMe
    std::byte* dst = host_[t];
    if (on_nvme(t)) {
      scratch = AlignedBuffer(bytes);
      dst = scratch.data();
    }
    if (o_.init_host)
      o_.init_host(t, dst, bytes);
    else
      synthetic::init_buffer(dst, bytes, t, init_salt(g_.tensors[t].kind, o_.ranks.rank));
    if (on_nvme(t)) nvme_->wait(nvme_->submit_write(nvme_offset_[t], dst, bytes));
  }

  // Note [Host tier]: the NVMe tier. Each tensor on NVMe has its place in
  // the file, 4096-aligned; its copies go through two staging chunks per
  // direction (nvme_staging_bytes, the first bytes of the host arena: Note
  // [Host arena]), on the copy's stream: a host task reads
  // a chunk from the file, then the link copies it to the device (swap-in),
  // or the link copies a chunk out and a host task writes it (swap-out). In
  // stream order, a chunk's buffer is filled again only after its copy.
  void open_nvme(int64_t plan_chunk) {
    if (o_.nvme_path.empty())
      throw Error(fmt::format(
          "the plan keeps {} tensors on NVMe: give the file to hold them (run --nvme-file PATH, "
          "on a disk file system that takes O_DIRECT)",
          p_.nvme_tensors.size()));
    nvme_offset_.assign(g_.num_tensors(), -1);
    int64_t at = 0;
    for (TensorId t : p_.nvme_tensors) {
      nvme_offset_[t] = at;
      at += nvme_round_up(g_.tensors[t].bytes);
    }
    // Under mpirun every rank has a file of its own.
    const std::string path =
        o_.ranks.size > 1 ? fmt::format("{}.rank{}", o_.nvme_path, o_.ranks.rank) : o_.nvme_path;
    nvme_ = std::make_unique<NvmeStore>(path, at);
    staging_chunk_ = plan_chunk;  // as the plan counts it
    if (o_.nvme_chunk_bytes > 0)
      staging_chunk_ = std::min(staging_chunk_, nvme_round_up(o_.nvme_chunk_bytes));
    for (int i = 0; i < 4; ++i)
      staging_[i / 2][i % 2] = host_arena_.data() + i * plan_chunk;
    r_.nvme_bytes = at;
    r_.nvme_backend = nvme_->backend_name();
  }
  bool on_nvme(TensorId t) const { return !nvme_offset_.empty() && nvme_offset_[t] >= 0; }

  // The host value of t (streams idle): its host copy, or read from NVMe
  // into *scratch.
  const std::byte* host_value(TensorId t, AlignedBuffer* scratch) {
    if (!on_nvme(t)) return host_[t];
    *scratch = AlignedBuffer(g_.tensors[t].bytes);
    nvme_->wait(nvme_->submit_read(nvme_offset_[t], scratch->data(), g_.tensors[t].bytes));
    return scratch->data();
  }

  // f(k, offset in t, length, offset in the file) for each chunk k of NVMe
  // tensor t; the chunk's staging buffer is staging_[direction][k % 2].
  template <class F>
  void for_each_chunk(TensorId t, F&& f) {
    const int64_t bytes = g_.tensors[t].bytes;
    for (int64_t off = 0, k = 0; off < bytes; off += staging_chunk_, ++k)
      f(k, off, std::min(staging_chunk_, bytes - off), nvme_offset_[t] + off);
  }
  int64_t num_chunks(TensorId t) const {
    return (g_.tensors[t].bytes + staging_chunk_ - 1) / staging_chunk_;
  }
  // Note [Host tier]: the disk and the link overlap across chunks. A
  // swap-in reads chunks 0 and 1 at once; before copying chunk k it waits
  // for its read, and starts chunk k + 1's into the buffer chunk k - 1's
  // copy has left (stream order: that copy is done). The tickets live in
  // pending_ and only the stream's host tasks touch them, one at a time.
  void copy_in(std::byte* device, TensorId t) {
    if (!on_nvme(t)) return b_.copy_h2d(device, host_[t], g_.tensors[t].bytes);
    const int64_t n = num_chunks(t), bytes = g_.tensors[t].bytes, base = nvme_offset_[t];
    auto read = [this, n, bytes, base](int64_t k) {
      if (k >= n) return;
      const int64_t off = k * staging_chunk_;
      pending_[0][k % 2] =
          nvme_->submit_read(base + off, staging_[0][k % 2], std::min(staging_chunk_, bytes - off));
    };
    b_.host_task(Stream::kH2D, [read] {
      read(0);
      read(1);
    });
    for_each_chunk(t, [&](int64_t k, int64_t off, int64_t len, int64_t) {
      b_.host_task(Stream::kH2D, [this, read, k] {
        nvme_->wait(std::exchange(pending_[0][k % 2], 0));
        if (k >= 1) read(k + 1);
      });
      b_.copy_h2d(device + off, staging_[0][k % 2], len);
    });
  }
  // A swap-out writes chunk k while chunk k + 1 is copied out; before a
  // copy fills a buffer again it waits for that buffer's write, and the
  // copy's last host task waits for every write, so that the copy's event
  // means the tensor is on NVMe.
  void copy_out(TensorId t, const std::byte* device) {
    if (!on_nvme(t)) return b_.copy_d2h(host_[t], device, g_.tensors[t].bytes);
    auto settle = [this](int64_t buf) {
      if (pending_[1][buf] != 0) nvme_->wait(std::exchange(pending_[1][buf], 0));
    };
    for_each_chunk(t, [&](int64_t k, int64_t off, int64_t len, int64_t at) {
      std::byte* buf = staging_[1][k % 2];
      if (k >= 2) b_.host_task(Stream::kD2H, [settle, k] { settle(k % 2); });
      b_.copy_d2h(buf, device + off, len);
      b_.host_task(Stream::kD2H, [this, at, buf, len, k] {
        pending_[1][k % 2] = nvme_->submit_write(at, buf, len);
      });
    });
    b_.host_task(Stream::kD2H, [settle] {
      settle(0);
      settle(1);
    });
  }

  // Every persistent tensor's latest value, to o_.final_value (streams idle).
  void read_back() {
    for (TensorId t = 0; t < g_.num_tensors(); ++t) {
      if (!is_persistent(g_.tensors[t].kind)) continue;
      const int64_t bytes = g_.tensors[t].bytes;
      const ObjectId k = resident_object_[t];
      if (k != kNoObject && tenant_[k] == Occupant::of_tensor(t)) {
        Buffer tmp = b_.alloc_host(bytes);
        b_.copy_d2h(tmp.data(), object_ptr(k), bytes);
        b_.synchronize();
        o_.final_value(t, tmp.data(), bytes);
      } else if (host_[t] || on_nvme(t)) {
        AlignedBuffer scratch;
        o_.final_value(t, host_value(t, &scratch), bytes);
      }
    }
  }

  // The initial resident set, loaded before the first iteration (untimed).
  void warm_up() {
    // Where every tensor is before the first iteration (read_back reads it
    // there when next_batch ends the run before one).
    tenant_.assign(p_.num_objects(), Occupant());
    std::vector<AlignedBuffer> scratch(p_.initial_resident.size());  // NVMe values, until synced
    for (size_t i = 0; i < p_.initial_resident.size(); ++i) {
      const ResidentTensor& rt = p_.initial_resident[i];
      b_.copy_h2d(object_ptr(rt.object), host_value(rt.tensor, &scratch[i]),
                  g_.tensors[rt.tensor].bytes);
      tenant_[rt.object] = Occupant::of_tensor(rt.tensor);
    }
    b_.synchronize();
  }

  // Makes stream st wait until `step` (a step on another stream) is done.
  // Returns true when that needed a new wait.
  bool wait_for(Stream st, StepId step) {
    const int a = static_cast<int>(st);
    const int c = static_cast<int>(run_stream(g_, p_.steps[step]));
    if (c == a || waited_[a][c] >= step) return false;
    b_.wait(st, *events_[step]);
    waited_[a][c] = step;
    return true;
  }

  // A new tenant moves into object k on stream st: wait for every other
  // stream's last step on the arena bytes it covers (Note [Executing a
  // plan]); objects may overlap in the arena (Note [Plan semantics]).
  void reuse(Stream st, ObjectId k) {
    const Block& b = p_.objects[k];
    last_touch_.assign(b.offset, b.end(), kNoSteps,
                       [&](int64_t, int64_t, const StreamSteps& touched) {
                         if (!o_.safety_net) return;
                         for (StepId s : touched)
                           if (s >= 0 && wait_for(st, s)) ++safety_waits_;
                       });
  }

  void touch(Stream st, ObjectId k, StepId s) {
    const Block& b = p_.objects[k];
    last_touch_.update(b.offset, b.end(), [&](StreamSteps& t) { t[static_cast<int>(st)] = s; });
  }

  void issue_iteration() {
    const int num_objects = p_.num_objects();
    tenant_.assign(num_objects, Occupant());
    for (const ResidentTensor& rt : p_.initial_resident)
      tenant_[rt.object] = Occupant::of_tensor(rt.tensor);
    last_touch_.clear();
    done_.assign(p_.num_steps(), kNoSteps);
    for (auto& w : waited_)
      w.fill(-1);
    safety_waits_ = 0;
    // A new batch in the inputs that the previous iteration updated (with
    // next_batch: in every input), and in the objects of those kept resident.
    for (TensorId t : reset_inputs_)
      init_host(t);
    if (o_.next_batch) {
      bool copied = false;
      std::vector<AlignedBuffer> scratch(p_.initial_resident.size());
      for (size_t i = 0; i < p_.initial_resident.size(); ++i) {
        const ResidentTensor& rt = p_.initial_resident[i];
        if (g_.tensors[rt.tensor].kind != TensorKind::kInput) continue;
        b_.copy_h2d(object_ptr(rt.object), host_value(rt.tensor, &scratch[i]),
                    g_.tensors[rt.tensor].bytes);
        copied = true;
      }
      if (copied) b_.synchronize();
    }

    b_.clear_slots();
    b_.record(Stream::kCompute, *begin_);
    b_.wait(Stream::kH2D, *begin_);
    b_.wait(Stream::kD2H, *begin_);
    for (StepId s = 0; s < p_.num_steps(); ++s) {
      const Step& step = p_.steps[s];
      const Stream st = run_stream(g_, step);
      if (st == Stream::kNone) {  // a drop: done when what it waits for is done
        for (StepId w : p_.waits_of(s))
          for (int c = 0; c < kNumStreams; ++c)
            done_[s][c] = std::max(done_[s][c], done_[w][c]);
        if (tenant_[step.object] == step.occupant()) tenant_[step.object] = Occupant();
        continue;
      }
      for (StepId w : p_.waits_of(s))
        for (StepId d : done_[w])
          if (d >= 0) wait_for(st, d);
      switch (step.kind) {
        case StepKind::kCompute:
        case StepKind::kRecompute: {
          const OpId o = step.op();
          const Op& op = g_.ops[o];
          const auto objs = p_.objects_of_step(s);
          int k = 0;
          for_each_step_slot(g_, o, step.kind == StepKind::kRecompute, [&](Occupant x, Access a) {
            if (a == Access::kCreate) {  // an output, or the workspace
              reuse(st, objs[k]);
              tenant_[objs[k]] = x;
            }
            ++k;
          });
          b_.launch_op(kernel_of_step_[s], op_us_[o] * scale_);
          for (ObjectId obj : objs)
            touch(st, obj, s);
          // The workspace (the last slot) is free once the op has run.
          if (op.workspace_bytes > 0 && tenant_[objs[k - 1]] == Occupant::of_workspace(o))
            tenant_[objs[k - 1]] = Occupant();
          break;
        }
        case StepKind::kSwapIn:
          reuse(st, step.object);
          tenant_[step.object] = step.occupant();
          copy_in(object_ptr(step.object), step.tensor());
          touch(st, step.object, s);
          break;
        case StepKind::kSwapOut:
          copy_out(step.tensor(), object_ptr(step.object));
          touch(st, step.object, s);
          if (tenant_[step.object] == step.occupant()) tenant_[step.object] = Occupant();
          break;
        case StepKind::kDrop:
          break;
      }
      b_.record(st, *events_[s]);
      done_[s][static_cast<int>(st)] = s;
    }
    r_.safety_waits = safety_waits_;
  }

  // The wall time of the iteration just synchronized: from its start to the
  // last event of its steps.
  double iteration_wall_us() {
    double last = 0;
    for (StepId s = 0; s < p_.num_steps(); ++s)
      if (run_stream(g_, p_.steps[s]) != Stream::kNone)
        last = std::max(last, b_.elapsed_us(*begin_, *events_[s]));
    return last;
  }

  // Step times of the iteration just synchronized, the timeline and the
  // device bytes in use over it.
  void collect_timing() {
    const int m = p_.num_steps();
    std::vector<StepTiming> tl(m);
    std::vector<double> end(m, 0);
    double stream_free[kNumStreams] = {};
    double last = 0;
    for (StepId s = 0; s < m; ++s) {
      const Stream st = run_stream(g_, p_.steps[s]);
      double ready = 0;
      for (StepId w : p_.waits_of(s))
        ready = std::max(ready, end[w]);
      if (st == Stream::kNone) {
        tl[s] = {ready, ready};
        end[s] = ready;
        continue;
      }
      const int c = static_cast<int>(st);
      end[s] = std::max(0.0, b_.elapsed_us(*begin_, *events_[s]));
      tl[s] = {std::min(end[s], std::max(ready, stream_free[c])), end[s]};
      stream_free[c] = end[s];
      last = std::max(last, end[s]);
    }
    r_.iteration_wall_us.push_back(last);
    int64_t peak = 0;
    memory_profile(g_, p_, tl, last, &peak);
    r_.peak_device_bytes = std::max(r_.peak_device_bytes, peak);
    r_.timeline = std::move(tl);
  }

  // Compares iteration it of the reference (`label` in messages).
  void check(int it, const std::string& label, const Reference& ref) {
    // Persistent tensors where their latest value is: back in their
    // initial-resident object, or in host memory.
    std::vector<uint64_t> host_sums(persistent_.size(), 0);
    std::vector<uint8_t> on_device(persistent_.size(), 0);
    for (size_t i = 0; i < persistent_.size(); ++i) {
      const TensorId t = persistent_[i];
      const ObjectId k = resident_object_[t];
      if (k != kNoObject && tenant_[k] == Occupant::of_tensor(t)) {
        on_device[i] = 1;
        b_.launch_checksum(object_ptr(k), g_.tensors[t].bytes,
                           layout_.num_slots() + static_cast<int32_t>(i));
      } else if (host_[t] || on_nvme(t)) {
        AlignedBuffer scratch;
        host_sums[i] = synthetic::checksum_buffer(host_value(t, &scratch), g_.tensors[t].bytes);
      }
    }
    b_.synchronize();
    const std::vector<uint64_t> slots = b_.read_slots();
    const auto& want = ref.slots[it];
    for (OpId o : p_.order) {
      const Op& op = g_.ops[o];
      for (int32_t s = layout_.slot_begin[o]; s < layout_.slot_begin[o + 1]; ++s) {
        if (slots[s] == want[s]) continue;
        const int32_t j = s - layout_.slot_begin[o];
        const bool is_output = j < static_cast<int32_t>(op.outputs.size());
        const TensorId t = is_output ? op.outputs[j] : op.updates[j - op.outputs.size()];
        fail(
            fmt::format("{}: {} {} {}: checksum {:016x}, the reference run's is {:016x} (it read a "
                        "stale, misplaced or partly copied buffer)",
                        label, op_named(g_, o), is_output ? "created" : "updated",
                        tensor_label(g_, t), slots[s], want[s]));
        return;
      }
    }
    for (size_t i = 0; i < persistent_.size(); ++i) {
      const uint64_t got = on_device[i] ? slots[layout_.num_slots() + i] : host_sums[i];
      if (got == ref.persistent_sums[it][i]) continue;
      const TensorId t = persistent_[i];
      fail(fmt::format(
          "{}: at its end, persistent {} ({}) has checksum {:016x}, the reference "
          "run's is {:016x}",
          label, tensor_label(g_, t),
          on_device[i] ? fmt::format("in object {}", resident_object_[t]) : "in host memory", got,
          ref.persistent_sums[it][i]));
      return;
    }
  }

  void fail(std::string why) {
    r_.integrity_ok = false;
    r_.integrity = std::move(why);
  }

  Backend& b_;
  const Graph& g_;
  const Plan& p_;
  std::span<const double> op_us_;
  RunOptions o_;
  RunResult r_;
  double scale_ = 1;  // the current iteration's time scale (Note [Automatic time scale])

  Buffer arena_;
  Buffer host_arena_;             // Note [Host arena]
  std::vector<std::byte*> host_;  // per tensor: its slot in host_arena_ or load_; null: none
  std::vector<Buffer> load_;      // per tensor: a load buffer (Note [Host arena])
  // Note [Host tier]: the NVMe tier (open_nvme).
  std::unique_ptr<NvmeStore> nvme_;
  std::vector<int64_t> nvme_offset_;  // per tensor, its place in the file; -1: not there
  std::byte* staging_[2][2] = {};     // [swap-in, swap-out][chunk % 2], in host_arena_
  // NVMe tickets in flight per staging buffer (0: none), touched only by
  // the host tasks of the buffer's stream (copy_in, copy_out).
  NvmeStore::Ticket pending_[2][2] = {};
  int64_t staging_chunk_ = 0;
  std::vector<TensorId> reset_inputs_;
  SlotLayout layout_;
  std::vector<TensorId> persistent_;
  std::vector<ObjectId> resident_object_;  // per tensor: its initial-resident object
  std::vector<int32_t> kernel_of_step_;    // per compute or recompute step: its kernel
  std::unique_ptr<Event> begin_;
  std::vector<std::unique_ptr<Event>> events_;  // per step on a stream

  // Issue state of the current iteration.
  std::vector<Occupant> tenant_;      // per object: a tensor, a workspace, or none
  RangeMap<StreamSteps> last_touch_;  // per arena range: the last step of each stream there
  std::vector<StreamSteps> done_;     // per step: what its completion stands for
  std::array<StreamSteps, kNumStreams> waited_;  // [stream][other]: waited up to this step
  int safety_waits_ = 0;
};

}  // namespace

double auto_time_scale(double wall_us, double simulated_us, double max_scale) {
  if (!(simulated_us > 0) || !(wall_us > 0)) return 1;
  const double x = kCalibrationHeadroom * wall_us / simulated_us;
  if (!(x > 1)) return 1;
  if (!(x < max_scale)) return max_scale;
  // Up to two significant digits; the 1e-9 keeps an exact 24 at 24.
  const double unit = std::pow(10.0, std::floor(std::log10(x)) - 1);
  return std::min(max_scale, std::ceil(x / unit - 1e-9) * unit);
}

double RunResult::median_wall_us() const {
  if (iteration_wall_us.empty()) return 0;
  std::vector<double> v = iteration_wall_us;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

RunResult run_plan(Backend& backend, const Graph& g, const Plan& p, std::span<const double> op_us,
                   const RunOptions& options) {
  SA_CHECK(static_cast<int>(op_us.size()) == g.num_ops(), "{} op times for {} ops", op_us.size(),
           g.num_ops());
  SA_CHECK(options.iterations >= 1, "iterations = {}", options.iterations);
  Executor e(backend, g, p, op_us, options);
  return e.run();
}

}  // namespace sa::runtime
