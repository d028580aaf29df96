#pragma once
// Host memory for NVMe transfers. O_DIRECT moves bytes between the device
// and the caller's buffer without the page cache, so the buffer's address,
// the file offset and the length must all be multiples of the device's
// logical block size; 4096 covers every SSD's (512 or 4096) and the page
// size, so one constant serves all three.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

namespace sa::runtime {

inline constexpr int64_t kNvmeAlignment = 4096;

// bytes rounded up to kNvmeAlignment: the length every transfer really has
// (NvmeStore rounds lengths up inside; the caller's buffers must hold it).
constexpr int64_t nvme_round_up(int64_t bytes) {
  return (bytes + kNvmeAlignment - 1) / kNvmeAlignment * kNvmeAlignment;
}

// A kNvmeAlignment-aligned host buffer of nvme_round_up(bytes) bytes,
// freed on destruction. Contents start undefined.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(int64_t bytes) : size_(nvme_round_up(bytes)) {
    if (size_ == 0) return;
    data_ = static_cast<std::byte*>(
        std::aligned_alloc(kNvmeAlignment, static_cast<std::size_t>(size_)));
    if (!data_) throw std::bad_alloc();
  }
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  int64_t size() const { return size_; }  // rounded up

 private:
  std::byte* data_ = nullptr;
  int64_t size_ = 0;
};

}  // namespace sa::runtime
