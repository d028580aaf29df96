// The walk's use of free memory outside the placed arena (the structures
// are in free_memory.h): the pool's objects, the packed arena's tenancies.

#include "plan/swap/pass.h"

namespace sa {
using namespace swap_plan;  // this folder's types (pass.h)

void SwapPlanner::Pass::ring_push(ClassId c, ObjectId obj) {
  if (arena()) return;  // release() freed the bytes
  free_objects_.push(c, obj);
}

ObjectId SwapPlanner::Pass::ring_pop(ClassId c) {
  const ObjectId obj = free_objects_.pop(c);
  if (obj != kNoObject) peak_in_use[c] = std::max(peak_in_use[c], free_objects_.in_use(c));
  return obj;
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
