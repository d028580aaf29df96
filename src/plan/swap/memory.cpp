// Free memory outside the placed arena: the size-class pool's rings of free
// objects, and the packed arena's free bytes by release position.

#include "plan/swap/pass.h"

namespace sa {
using namespace swap_plan;  // this folder's types (pass.h)

void SwapPlanner::Pass::ring_push(ClassId c, ObjectId obj) {
  if (arena()) return;  // release() freed the bytes
  const int32_t cap = class_first_[c + 1] - class_first_[c];
  ring_[class_first_[c] + (ring_head_[c] + ring_size_[c]) % cap] = obj;
  ++ring_size_[c];
}

ObjectId SwapPlanner::Pass::ring_pop(ClassId c) {
  if (ring_size_[c] == 0) return kNoObject;
  const int32_t cap = class_first_[c + 1] - class_first_[c];
  const ObjectId obj = ring_[class_first_[c] + ring_head_[c]];
  ring_head_[c] = (ring_head_[c] + 1) % cap;
  --ring_size_[c];
  peak_in_use[c] = std::max(peak_in_use[c], cap - ring_size_[c]);
  return obj;
}

void SwapPlanner::Pass::free_bytes(int32_t key, int64_t bytes) {
  if (bytes == 0) return;
  if (free_at_[key + 1] == 0) free_keys_.insert(key);
  free_at_[key + 1] += bytes;
  free_total_ += bytes;
}

// Takes `bytes` free bytes, the earliest released first (or the latest), and
// returns the latest release key among them (-1: the start).
int32_t SwapPlanner::Pass::take_bytes(int64_t bytes, bool earliest) {
  SA_CHECK(bytes <= free_total_, "taking {} bytes of {} free", bytes, free_total_);
  free_total_ -= bytes;
  int32_t latest = -1;
  while (bytes > 0) {
    const int32_t key = earliest ? *free_keys_.begin() : *free_keys_.rbegin();
    int64_t& have = free_at_[key + 1];
    const int64_t t = std::min(bytes, have);
    have -= t;
    bytes -= t;
    latest = std::max(latest, key);
    if (have == 0) free_keys_.erase(key);
  }
  return latest;
}

// Arena: a new tenancy of x, whose memory is free from free_key on.
ObjectId SwapPlanner::Pass::open_tenancy(ItemId x, int32_t free_key) {
  const ObjectId t = static_cast<ObjectId>(tenancies_.size());
  tenancies_.push_back({x, 0, INT32_MAX, -1, t, 0});
  tenant_.push_back(-1);
  rel_compute_.push_back(-1);
  rel_copy_.push_back(-1);
  rel_pos_.push_back(free_key);  // a swap-in into it starts no earlier (swap_in())
  return t;
}

}  // namespace sa
