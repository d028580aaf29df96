#pragma once
// Free memory of the walk outside the placed arena (Note [Swap planning],
// Note [Arena planning] in plan/swap_planner.h), as two small structures
// with no knowledge of the walk, each tested alone
// (tests/plan/free_memory_test.cpp):
//   FreeObjects  the size-class pool's free objects, a ring per class;
//   FreeBytes    the packed arena's free bytes, by release position.

#include <algorithm>
#include <cstdint>
#include <set>
#include <span>
#include <vector>

#include "plan/plan.h"
#include "util/error.h"

namespace sa::swap_plan {

// Per class, its free objects in the order they were freed: the walk takes
// the one freed earliest (its previous tenant's copies are the likeliest
// done). Class c's objects are [class_first[c], class_first[c + 1]).
class FreeObjects {
 public:
  void reset(std::span<const int32_t> class_first) {
    first_.assign(class_first.begin(), class_first.end());
    const int nc = static_cast<int>(first_.size()) - 1;
    ring_.assign(nc > 0 ? first_[nc] : 0, kNoObject);
    head_.assign(std::max(nc, 0), 0);
    size_.assign(std::max(nc, 0), 0);
  }
  void push(ClassId c, ObjectId obj) {
    SA_CHECK(size_[c] < capacity(c), "class {}: a free object more than it has", c);
    ring_[first_[c] + (head_[c] + size_[c]) % capacity(c)] = obj;
    ++size_[c];
  }
  // The object of class c freed earliest, or kNoObject when none is free.
  ObjectId pop(ClassId c) {
    if (size_[c] == 0) return kNoObject;
    const ObjectId obj = ring_[first_[c] + head_[c]];
    head_[c] = (head_[c] + 1) % capacity(c);
    --size_[c];
    return obj;
  }
  int32_t in_use(ClassId c) const { return capacity(c) - size_[c]; }
  bool empty(ClassId c) const { return size_[c] == 0; }

 private:
  int32_t capacity(ClassId c) const { return first_[c + 1] - first_[c]; }
  std::vector<int32_t> first_;
  std::vector<ObjectId> ring_;  // class c's ring over ring_[first_[c], first_[c + 1])
  std::vector<int32_t> head_, size_;
};

// Free bytes by the position at which they were released (key -1: free
// from the start; keys up to num_keys - 2). A swap-in takes the earliest
// released (the likeliest free by the time it runs), an op's output the
// latest (Note [Arena planning]).
class FreeBytes {
 public:
  void reset(int num_keys) {
    at_.assign(num_keys, 0);
    keys_.clear();
    total_ = 0;
  }
  void add(int32_t key, int64_t bytes) {
    if (bytes == 0) return;
    if (at_[key + 1] == 0) keys_.insert(key);
    at_[key + 1] += bytes;
    total_ += bytes;
  }
  // Takes `bytes` (at most total()), the earliest released first, or the
  // latest; returns the latest release key among them (-1: the start).
  int32_t take(int64_t bytes, bool earliest) {
    SA_CHECK(bytes <= total_, "taking {} bytes of {} free", bytes, total_);
    total_ -= bytes;
    int32_t latest = -1;
    while (bytes > 0) {
      const int32_t key = earliest ? *keys_.begin() : *keys_.rbegin();
      int64_t& have = at_[key + 1];
      const int64_t t = std::min(bytes, have);
      have -= t;
      bytes -= t;
      latest = std::max(latest, key);
      if (have == 0) keys_.erase(key);
    }
    return latest;
  }
  int64_t total() const { return total_; }

 private:
  std::vector<int64_t> at_;  // at_[key + 1]: the free bytes released at key
  std::set<int32_t> keys_;   // the keys holding any
  int64_t total_ = 0;
};

}  // namespace sa::swap_plan
