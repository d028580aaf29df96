#include "report/class_memory.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "util/units.h"

namespace sa {

std::vector<ClassMemory> memory_by_class(const Graph& g, const Plan& p,
                                         std::span<const StepTiming> timeline, double end_us,
                                         int max_groups) {
  const Pool& pool = p.pool;
  std::vector<ClassId> by_bytes(pool.num_classes());
  std::iota(by_bytes.begin(), by_bytes.end(), 0);
  auto pool_bytes = [&](ClassId c) { return pool.class_bytes[c] * pool.class_count[c]; };
  std::stable_sort(by_bytes.begin(), by_bytes.end(),
                   [&](ClassId a, ClassId b) { return pool_bytes(a) > pool_bytes(b); });
  std::erase_if(by_bytes, [&](ClassId c) { return pool.class_count[c] == 0; });

  std::vector<ClassMemory> groups;
  const size_t singles =
      by_bytes.size() <= static_cast<size_t>(max_groups) ? by_bytes.size() : max_groups - 1;
  for (size_t i = 0; i < singles; ++i) {
    const ClassId c = by_bytes[i];
    groups.push_back({{c},
                      fmt::format("class {} ({} x {})", c, pool.class_count[c],
                                  format_bytes(pool.class_bytes[c])),
                      {}});
  }
  if (singles < by_bytes.size()) {
    ClassMemory rest;
    rest.classes.assign(by_bytes.begin() + singles, by_bytes.end());
    rest.label = fmt::format("{} smaller classes", rest.classes.size());
    groups.push_back(std::move(rest));
  }

  // memory_profile() with every other class's objects weighing nothing: the
  // same tenancy rules, restricted to the group.
  Plan masked = p;
  std::vector<uint8_t> in_group(pool.num_classes());
  for (ClassMemory& grp : groups) {
    std::fill(in_group.begin(), in_group.end(), 0);
    for (ClassId c : grp.classes)
      in_group[c] = 1;
    for (size_t o = 0; o < p.objects.size(); ++o)
      masked.objects[o].bytes = in_group[p.objects[o].cls] ? p.objects[o].bytes : 0;
    std::vector<MemoryPoint> pts = memory_profile(g, masked, timeline, end_us, nullptr);
    // Drop points where this group's bytes do not change.
    for (const MemoryPoint& m : pts)
      if (grp.points.empty() || grp.points.back().bytes != m.bytes) grp.points.push_back(m);
  }
  return groups;
}

}  // namespace sa
