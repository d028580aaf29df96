#include "runtime/aten/placement_slots.h"

#include <algorithm>

namespace sa::runtime {

void PlacementSlots::arm(std::vector<Slot> slots) {
  std::lock_guard lock(mutex_);
  slots_ = std::move(slots);
  armed_by_ = std::this_thread::get_id();
}

void PlacementSlots::disarm() {
  std::lock_guard lock(mutex_);
  slots_.clear();
}

void* PlacementSlots::take(int64_t bytes, bool kernel_worker) {
  std::lock_guard lock(mutex_);
  if (!kernel_worker && std::this_thread::get_id() != armed_by_) return nullptr;
  for (Slot& s : slots_) {
    if (!s.taken && s.bytes == bytes) {
      s.taken = true;
      return s.ptr;
    }
  }
  return nullptr;
}

void PlacementSlots::note_scratch(void* p, int64_t bytes) {
  std::lock_guard lock(mutex_);
  scratch_[p] = bytes;
  live_ += bytes;
  peak_ = std::max(peak_, live_);
}

bool PlacementSlots::release(void* p) {
  std::lock_guard lock(mutex_);
  auto it = scratch_.find(p);
  if (it == scratch_.end()) {
    for (Slot& s : slots_)
      if (s.ptr == p) s.taken = false;
    return false;
  }
  live_ -= it->second;
  scratch_.erase(it);
  return true;
}

int64_t PlacementSlots::scratch_live_bytes() const {
  std::lock_guard lock(mutex_);
  return live_;
}

int64_t PlacementSlots::scratch_peak_bytes() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

}  // namespace sa::runtime
