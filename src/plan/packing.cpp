#include "plan/packing.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace sa {
namespace {

constexpr int kBuckets = 128;  // time buckets of the index of placed items

int64_t length(const PackItem& it) {
  int64_t len = 0;
  for (const Interval& v : it.life)
    if (!v.empty()) len += int64_t{v.end} - v.begin + 1;
  return len;
}

bool is_empty(const PackItem& it) {
  return it.bytes == 0 || (it.life[0].empty() && it.life[1].empty());
}

}  // namespace

int64_t Packer::pack(std::span<const PackItem> items, std::vector<int64_t>* offset) {
  const int n = static_cast<int>(items.size());
  offset->assign(n, 0);
  int32_t horizon = 0;
  order_.clear();
  for (int i = 0; i < n; ++i) {
    if (is_empty(items[i])) continue;
    order_.push_back(i);
    for (const Interval& v : items[i].life)
      if (!v.empty()) horizon = std::max(horizon, v.end + 1);
  }
  std::vector<int64_t> len(n, 0);
  for (int i : order_)
    len[i] = length(items[i]);
  std::sort(order_.begin(), order_.end(), [&](int a, int b) {
    if (items[a].bytes != items[b].bytes) return items[a].bytes > items[b].bytes;
    if (len[a] != len[b]) return len[a] > len[b];
    return a < b;
  });
  const int num_buckets = std::max(1, std::min(kBuckets, horizon));
  const int32_t width = (horizon + num_buckets - 1) / num_buckets;
  buckets_.resize(num_buckets);
  for (auto& b : buckets_)
    b.clear();
  stamp_.assign(n, -1);
  auto for_each_bucket = [&](const PackItem& it, auto&& f) {
    for (const Interval& v : it.life) {
      if (v.empty()) continue;
      for (int32_t b = v.begin / width; b <= v.end / width; ++b)
        f(b);
    }
  };

  int64_t peak = 0;
  for (int k = 0; k < static_cast<int>(order_.size()); ++k) {
    const int i = order_[k];
    const PackItem& it = items[i];
    // The arena ranges of the placed items alive at the same time as it.
    ranges_.clear();
    stamp_[i] = k;
    for_each_bucket(it, [&](int32_t b) {
      for (int32_t j : buckets_[b]) {
        if (stamp_[j] == k) continue;
        stamp_[j] = k;
        if (it.overlaps(items[j])) ranges_.push_back({(*offset)[j], (*offset)[j] + items[j].bytes});
      }
    });
    std::sort(ranges_.begin(), ranges_.end(),
              [](const Range& a, const Range& b) { return a.begin < b.begin; });
    // The smallest gap that fits (the lowest on ties), else the top.
    int64_t cur = 0, best = -1, best_size = std::numeric_limits<int64_t>::max();
    for (const Range& r : ranges_) {
      if (r.begin > cur) {
        const int64_t gap = r.begin - cur;
        if (gap >= it.bytes && gap < best_size) {
          best = cur;
          best_size = gap;
        }
      }
      cur = std::max(cur, r.end);
    }
    if (best < 0) best = cur;
    (*offset)[i] = best;
    peak = std::max(peak, best + it.bytes);
    for_each_bucket(it, [&](int32_t b) {
      if (buckets_[b].empty() || buckets_[b].back() != i) buckets_[b].push_back(i);
    });
  }
  return peak;
}

int64_t max_live_bytes(std::span<const PackItem> items) {
  std::vector<std::pair<int64_t, int64_t>> events;  // (time, +-bytes); frees sort first
  for (const PackItem& it : items)
    for (const Interval& v : it.life) {
      if (v.empty() || it.bytes == 0) continue;
      events.push_back({v.begin, it.bytes});
      events.push_back({int64_t{v.end} + 1, -it.bytes});
    }
  std::sort(events.begin(), events.end());
  int64_t live = 0, best = 0;
  for (const auto& [t, delta] : events) {
    live += delta;
    best = std::max(best, live);
  }
  return best;
}

bool packing_is_valid(std::span<const PackItem> items, std::span<const int64_t> offset) {
  const size_t n = items.size();
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a + 1; b < n; ++b) {
      if (items[a].bytes == 0 || items[b].bytes == 0) continue;
      const bool apart =
          offset[a] + items[a].bytes <= offset[b] || offset[b] + items[b].bytes <= offset[a];
      if (!apart && items[a].overlaps(items[b])) return false;
    }
  return true;
}

}  // namespace sa
