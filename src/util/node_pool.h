#pragma once
// A memory resource for the nodes of one node-based container (a std::pmr
// map or set), all of one size, used by one thread: freed nodes go on a
// free list and are handed out again, and the memory goes back to the
// system only with the pool. Cheaper than std::pmr's general pools, which
// look up the pool of a size on every call (about 4% of a recurrent net's
// placed walk went there).
//
//   NodePool pool;
//   std::pmr::map<int64_t, Range> ranges{&pool};

#include <algorithm>
#include <cstddef>
#include <memory_resource>
#include <new>
#include <vector>

namespace sa {

class NodePool : public std::pmr::memory_resource {
 public:
  NodePool() = default;
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;
  ~NodePool() override {
    for (void* chunk : chunks_)
      ::operator delete (chunk, std::align_val_t{kAlign});
  }

 private:
  static constexpr size_t kAlign = alignof(std::max_align_t);
  static constexpr size_t kNodesPerChunk = 256;

  // The first request sets the node size; a larger or stricter one (none
  // from a map's nodes) goes to the heap.
  bool pooled(size_t bytes, size_t align) {
    if (node_ == 0) node_ = (std::max(bytes, sizeof(void*)) + kAlign - 1) / kAlign * kAlign;
    return bytes <= node_ && align <= kAlign;
  }
  void* do_allocate(size_t bytes, size_t align) override {
    if (!pooled(bytes, align)) return std::pmr::new_delete_resource()->allocate(bytes, align);
    if (free_ == nullptr) grow();
    void* p = free_;
    free_ = *static_cast<void**>(p);
    return p;
  }
  void do_deallocate(void* p, size_t bytes, size_t align) override {
    if (!pooled(bytes, align)) {
      std::pmr::new_delete_resource()->deallocate(p, bytes, align);
      return;
    }
    *static_cast<void**>(p) = free_;
    free_ = p;
  }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override {
    return this == &o;
  }
  void grow() {
    auto* chunk =
        static_cast<std::byte*>(::operator new (node_* kNodesPerChunk, std::align_val_t{kAlign}));
    chunks_.push_back(chunk);
    for (size_t k = kNodesPerChunk; k-- > 0;) {
      void* node = chunk + k * node_;
      *static_cast<void**>(node) = free_;
      free_ = node;
    }
  }

  size_t node_ = 0;       // bytes per node (0: none asked for yet)
  void* free_ = nullptr;  // the free list, linked through the nodes
  std::vector<void*> chunks_;
};

}  // namespace sa
