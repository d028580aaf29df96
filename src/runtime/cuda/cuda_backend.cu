// The CUDA backend (runtime/cuda/cuda_backend.h).

#include "runtime/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_kernels.h"
#include "runtime/synthetic_collective.h"
#include "runtime/synthetic_op.h"

namespace sa::runtime {
namespace {

// For destructors, which must not throw: report and carry on.
void warn_if_failed(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    std::fprintf(stderr, "swapadvisor: warning: %s failed: %s\n", what, cudaGetErrorName(e));
}

class CudaStream {
 public:
  CudaStream() { SA_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~CudaStream() { warn_if_failed(cudaStreamDestroy(s_), "cudaStreamDestroy"); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class CudaEvent final : public Event {
 public:
  CudaEvent() { SA_CUDA_CHECK(cudaEventCreate(&e_)); }  // with timing: the executor times steps
  ~CudaEvent() override { warn_if_failed(cudaEventDestroy(e_), "cudaEventDestroy"); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

cudaEvent_t cuda_event(const Event& e) {
  return static_cast<const CudaEvent&>(e).get();
}

// Device memory that is not the arena: the kernel table, scratch, slots.
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t n) : n_(n) {
    if (n > 0) SA_CUDA_CHECK(cudaMalloc(&p_, n * sizeof(T)));
  }
  ~DeviceArray() {
    if (p_) warn_if_failed(cudaFree(p_), "cudaFree");
  }
  DeviceArray(DeviceArray&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(o.n_) {}
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  T* get() const { return p_; }
  size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const CudaBackendOptions& o)
      : device_(o.device), kernel_(o.kernel), collective_(o.collective) {
    SA_CUDA_CHECK(cudaSetDevice(device_));
    SA_CUDA_CHECK(cudaGetDeviceProperties(&props_, device_));
    streams_ = std::vector<CudaStream>(kNumStreams);
  }
  ~CudaBackend() override {
    for (auto& s : streams_)
      warn_if_failed(cudaStreamSynchronize(s.get()), "cudaStreamSynchronize");
  }

  std::string name() const override { return "cuda"; }
  std::string device_name() const override { return props_.name; }
  int64_t device_memory_bytes() const override {
    return static_cast<int64_t>(props_.totalGlobalMem);
  }

  Buffer alloc_device(int64_t bytes) override {
    void* p = nullptr;
    SA_CUDA_CHECK(cudaMalloc(&p, static_cast<size_t>(std::max<int64_t>(bytes, 1))));
    SA_CUDA_CHECK(cudaMemset(p, 0, static_cast<size_t>(bytes)));
    return Buffer(static_cast<std::byte*>(p), bytes,
                  [](std::byte* q) { warn_if_failed(cudaFree(q), "cudaFree"); });
  }

  Buffer alloc_host(int64_t bytes) override {
    void* p = nullptr;
    SA_CUDA_CHECK(cudaMallocHost(&p, static_cast<size_t>(std::max<int64_t>(bytes, 1))));
    return Buffer(static_cast<std::byte*>(p), bytes,
                  [](std::byte* q) { warn_if_failed(cudaFreeHost(q), "cudaFreeHost"); });
  }

  std::unique_ptr<Event> create_event() override { return std::make_unique<CudaEvent>(); }
  void record(Stream s, Event& e) override {
    SA_CUDA_CHECK(cudaEventRecord(cuda_event(e), stream(s)));
  }
  void wait(Stream s, const Event& e) override {
    SA_CUDA_CHECK(cudaStreamWaitEvent(stream(s), cuda_event(e), 0));
  }
  double elapsed_us(const Event& from, const Event& to) override {
    float ms = 0;
    SA_CUDA_CHECK(cudaEventElapsedTime(&ms, cuda_event(from), cuda_event(to)));
    return 1e3 * static_cast<double>(ms);
  }
  void synchronize() override {
    for (auto& s : streams_)
      SA_CUDA_CHECK(cudaStreamSynchronize(s.get()));
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lock(task_mu_);
      error = std::exchange(task_error_, nullptr);
    }
    if (error) std::rethrow_exception(error);
  }

  // cudaLaunchHostFunc: f runs on a CUDA thread in the stream's order; it may
  // not call CUDA, and its exception is kept for synchronize().
  void host_task(Stream s, std::function<void()> f) override {
    auto* task = new HostTask{std::move(f), this};
    const cudaError_t e = cudaLaunchHostFunc(stream(s), &CudaBackend::run_host_task, task);
    if (e != cudaSuccess) delete task;
    SA_CUDA_CHECK(e);
  }

  void copy_h2d(std::byte* device, const std::byte* host, int64_t bytes) override {
    SA_CUDA_CHECK(cudaMemcpyAsync(device, host, static_cast<size_t>(bytes), cudaMemcpyHostToDevice,
                                  stream(Stream::kH2D)));
  }
  void copy_d2h(std::byte* host, const std::byte* device, int64_t bytes) override {
    SA_CUDA_CHECK(cudaMemcpyAsync(host, device, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost,
                                  stream(Stream::kD2H)));
  }

  void load_kernels(const KernelTable& table, std::byte* arena, int num_slots) override {
    synchronize();
    arena_ = arena;
    op_begin_ = table.op_begin;
    kernel_op_ = table.kernel_op;
    // The hook gets each op's accesses on the host, and so do collectives.
    if (kernel_ || !table.collective.empty()) table_ = table;
    const int num_ops = static_cast<int>(op_begin_.size()) - 1;
    accesses_ = DeviceArray<synthetic::KernelAccess>(table.accesses.size());
    if (!table.accesses.empty())
      SA_CUDA_CHECK(cudaMemcpy(accesses_.get(), table.accesses.data(),
                               table.accesses.size() * sizeof(synthetic::KernelAccess),
                               cudaMemcpyHostToDevice));
    blocks_.assign(num_ops, 1);
    for (int o = 0; o < num_ops; ++o) {
      int64_t most = 0;
      for (const auto& a : table.of(o))
        most = std::max(most, synthetic::num_samples(a.bytes));
      blocks_[o] = cuda::blocks_for(most, props_.multiProcessorCount);
    }
    scratch_ = DeviceArray<cuda::OpScratch>(std::max(num_ops, 1));
    slots_ = DeviceArray<unsigned long long>(std::max(num_slots, 1));
    num_slots_ = num_slots;
  }

  void clear_slots() override {
    const cudaStream_t s = stream(Stream::kCompute);
    SA_CUDA_CHECK(cudaMemsetAsync(scratch_.get(), 0, scratch_.size() * sizeof(cuda::OpScratch), s));
    SA_CUDA_CHECK(cudaMemsetAsync(slots_.get(), 0, slots_.size() * sizeof(unsigned long long), s));
  }

  void launch_op(int32_t kernel, double duration_us) override {
    if (kernel < 0 || kernel + 1 >= static_cast<int>(op_begin_.size()))
      throw_error("internal error: launch_op of an op without a kernel table");
    const int32_t op =
        kernel < static_cast<int32_t>(kernel_op_.size()) ? kernel_op_[kernel] : kernel;
    if (kernel_) {
      // The real kernels, queued on the compute stream by the issuing thread
      // (OpKernelHook), collectives too (Note [ATen data parallelism]); the
      // synthetic kernel's duration does not apply.
      kernel_(op, table_.recomputes(kernel), table_.of(kernel), arena_, stream(Stream::kCompute));
      return;
    }
    if (const auto c = table_.collective_of(kernel); c != synthetic::Collective::kNone) {
      run_collective_staged(c, kernel);
      return;
    }
    const int begin = op_begin_[kernel];
    cuda::launch_op(stream(Stream::kCompute), blocks_[kernel], arena_, accesses_.get() + begin,
                    op_begin_[kernel + 1] - begin, op, scratch_.get() + kernel, slots_.get(),
                    static_cast<uint64_t>(std::max(0.0, duration_us) * 1e3));
  }

  void launch_checksum(const std::byte* device, int64_t bytes, int32_t slot) override {
    cuda::launch_checksum(
        stream(Stream::kCompute),
        cuda::blocks_for(synthetic::num_samples(bytes), props_.multiProcessorCount), device, bytes,
        slots_.get() + slot);
  }

  std::vector<uint64_t> read_slots() override {
    synchronize();
    std::vector<uint64_t> out(num_slots_, 0);
    if (num_slots_ > 0)
      SA_CUDA_CHECK(cudaMemcpy(out.data(), slots_.get(), out.size() * sizeof(uint64_t),
                               cudaMemcpyDeviceToHost));
    return out;
  }

  void delay(Stream s, double us) override {
    cuda::launch_delay(stream(s), static_cast<uint64_t>(std::max(0.0, us) * 1e3));
  }

 private:
  cudaStream_t stream(Stream s) const { return streams_[static_cast<int>(s)].get(); }

  // A collective op's kernel, staged through host memory (Note [Ranks] in
  // runtime/mpi/ranks.h): the issuing thread waits for the compute stream, copies
  // the updates to the host, exchanges their samples there, and copies them
  // and their checksums back. Synchronous, so the collective does not
  // overlap the GPU's work; CUDA-aware MPI on device buffers would.
  void run_collective_staged(synthetic::Collective c, int32_t kernel) {
    if (!collective_)
      throw_error("the CUDA backend runs collective ops only with a collective hook");
    SA_CUDA_CHECK(cudaStreamSynchronize(stream(Stream::kCompute)));
    std::vector<synthetic::KernelAccess> acc(table_.of(kernel).begin(), table_.of(kernel).end());
    int64_t total = 0;
    for (const auto& a : acc)
      if (a.role == synthetic::Role::kUpdate) total += a.bytes;
    std::vector<std::byte> host(static_cast<size_t>(total));
    std::vector<int64_t> device_offset(acc.size(), 0);
    int64_t at = 0;
    for (size_t i = 0; i < acc.size(); ++i) {
      if (acc[i].role != synthetic::Role::kUpdate) continue;
      device_offset[i] = acc[i].offset;
      SA_CUDA_CHECK(cudaMemcpy(host.data() + at, arena_ + acc[i].offset,
                               static_cast<size_t>(acc[i].bytes), cudaMemcpyDeviceToHost));
      acc[i].offset = at;
      at += acc[i].bytes;
    }
    std::vector<uint64_t> slots(static_cast<size_t>(std::max(num_slots_, 0)), 0);
    synthetic::BufferMem mem{host.data()};
    synthetic::run_collective(c, acc, mem, slots.data(), collective_);
    for (size_t i = 0; i < acc.size(); ++i) {
      if (acc[i].role != synthetic::Role::kUpdate) continue;
      SA_CUDA_CHECK(cudaMemcpy(arena_ + device_offset[i], host.data() + acc[i].offset,
                               static_cast<size_t>(acc[i].bytes), cudaMemcpyHostToDevice));
      if (acc[i].slot >= 0)
        SA_CUDA_CHECK(cudaMemcpy(slots_.get() + acc[i].slot, &slots[acc[i].slot], sizeof(uint64_t),
                                 cudaMemcpyHostToDevice));
    }
  }

  int device_;
  OpKernelHook kernel_;
  CollectiveHook collective_;
  KernelTable table_;  // kept only for kernel_
  cudaDeviceProp props_{};
  std::vector<CudaStream> streams_;
  struct HostTask {
    std::function<void()> f;
    CudaBackend* self;
  };
  static void CUDART_CB run_host_task(void* p) {
    std::unique_ptr<HostTask> t(static_cast<HostTask*>(p));
    try {
      t->f();
    } catch (...) {
      std::lock_guard<std::mutex> lock(t->self->task_mu_);
      if (!t->self->task_error_) t->self->task_error_ = std::current_exception();
    }
  }
  std::mutex task_mu_;
  std::exception_ptr task_error_;  // the first host task's error, for synchronize()
  std::byte* arena_ = nullptr;
  std::vector<int32_t> op_begin_;
  std::vector<int32_t> kernel_op_;  // per kernel: the op it runs (KernelTable)
  std::vector<int> blocks_;
  DeviceArray<synthetic::KernelAccess> accesses_;
  DeviceArray<cuda::OpScratch> scratch_;
  DeviceArray<unsigned long long> slots_;
  int num_slots_ = 0;
};

}  // namespace

bool cuda_backend_built() {
  return true;
}

int cuda_device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why)
      *why = std::string("no usable CUDA device: ") + cudaGetErrorName(e) + " (" +
             cudaGetErrorString(e) + ")";
    cudaGetLastError();  // clear it
    return 0;
  }
  if (n == 0 && why) *why = "no CUDA device";
  return n;
}

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& o) {
  const int device = o.device;
  std::string why;
  const int n = cuda_device_count(&why);
  if (n == 0) throw_error(("the CUDA backend cannot run: " + why).c_str());
  if (device < 0 || device >= n)
    throw_error(
        ("no CUDA device " + std::to_string(device) + " (there are " + std::to_string(n) + ")")
            .c_str());
  return std::make_unique<CudaBackend>(o);
}

}  // namespace sa::runtime
