#pragma once
// Device bytes in use per size class over time, for the trace's counter
// tracks. A pool can have hundreds of classes; a reader can follow a handful
// of tracks, so the largest classes (by pool bytes) get one each and the rest
// share one.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "plan/plan.h"
#include "plan/simulator.h"

namespace sa {

struct ClassMemory {
  std::vector<ClassId> classes;     // one class, or (the last group) all the small ones
  std::string label;                // "class 3 (24 x 1.50 MiB)" or "12 smaller classes"
  std::vector<MemoryPoint> points;  // as SimResult::memory, for these classes only
};

// The max_groups - 1 classes with the most pool bytes, then one group of the
// others (if any). Each group's points follow memory_profile()'s rules, so
// the groups add up to SimResult::memory at every time.
// REQUIRES: timeline is the simulator's timeline of p; max_groups >= 1.
std::vector<ClassMemory> memory_by_class(const Graph& g, const Plan& p,
                                         std::span<const StepTiming> timeline, double end_us,
                                         int max_groups = 9);

}  // namespace sa
