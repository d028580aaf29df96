#include "search/alloc_ops.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace sa {
namespace {

// cls from boundary bits taken from `lo` before cut and from `hi` after.
void splice(std::span<const ClassId> lo, std::span<const ClassId> hi, int cut,
            std::vector<ClassId>* out) {
  const int n = static_cast<int>(lo.size());
  out->resize(n);
  if (n == 0) return;
  (*out)[0] = 0;
  for (int i = 1; i < n; ++i) {
    const auto& src = i < cut ? lo : hi;
    (*out)[i] = (*out)[i - 1] + (src[i] != src[i - 1] ? 1 : 0);
  }
}

}  // namespace

AllocOps::AllocOps(const Graph& g, const SizeTable& t, int64_t budget,
                   std::vector<int32_t> size_cap)
    : g_(g), t_(t), budget_(budget), size_cap_(std::move(size_cap)) {
  SA_CHECK(static_cast<int>(size_cap_.size()) == t.num_sizes(), "{} caps for {} sizes",
           size_cap_.size(), t.num_sizes());
}

void AllocOps::expand(const Allocation& a, std::vector<double>* per_size) const {
  per_size->resize(a.cls.size());
  for (size_t i = 0; i < a.cls.size(); ++i)
    (*per_size)[i] = a.cnt[a.cls[i]];
}

void AllocOps::contract(std::span<const double> per_size, std::span<const ClassId> cls,
                        std::vector<int32_t>* cnt) const {
  const int nc = cls.empty() ? 0 : cls.back() + 1;
  cnt->assign(nc, 0);
  int i = 0;
  const int n = static_cast<int>(cls.size());
  while (i < n) {
    int j = i;
    double sum = 0;
    while (j < n && cls[j] == cls[i])
      sum += per_size[j++];
    (*cnt)[cls[i]] = static_cast<int32_t>(std::lround(sum / (j - i)));
    i = j;
  }
}

void AllocOps::cls_crossover(std::span<const ClassId> a, std::span<const ClassId> b, int cut,
                             std::vector<ClassId>* c1, std::vector<ClassId>* c2) const {
  SA_CHECK(a.size() == b.size(), "CLS of {} and {} sizes", a.size(), b.size());
  splice(a, b, cut, c1);
  splice(b, a, cut, c2);
}

bool AllocOps::cls_mutate(std::vector<ClassId>& cls, double p, Rng& rng) const {
  const int n = static_cast<int>(cls.size());
  bool changed = false;
  int shift = 0;
  for (int i = 1; i < n; ++i) {
    // cls[i - 1] has already been shifted; the unshifted step is old.
    const int old_step = cls[i] - (cls[i - 1] - shift);
    int step = old_step;
    if (rng.chance(p)) {
      step = 1 - old_step;
      changed = true;
    }
    const ClassId v = cls[i - 1] + step;
    shift = v - cls[i];
    cls[i] = v;
  }
  return changed;
}

void AllocOps::crossover(const Allocation& a, const Allocation& b, int cls_cut, int cnt_cut,
                         Allocation* c1, Allocation* c2) {
  expand(a, &e1_);
  expand(b, &e2_);
  const int n = static_cast<int>(e1_.size());
  x1_.resize(n);
  x2_.resize(n);
  for (int i = 0; i < n; ++i) {
    x1_[i] = i < cnt_cut ? e1_[i] : e2_[i];
    x2_[i] = i < cnt_cut ? e2_[i] : e1_[i];
  }
  cls_crossover(a.cls, b.cls, cls_cut, &c1->cls, &c2->cls);
  contract(x1_, c1->cls, &c1->cnt);
  contract(x2_, c2->cls, &c2->cnt);
  if (!repair(*c1)) *c1 = a;
  if (!repair(*c2)) *c2 = b;
}

bool AllocOps::mutate(Allocation& a, double p, double sigma, Rng& rng) {
  Allocation m = a;
  if (cls_mutate(m.cls, p, rng)) {
    expand(a, &e1_);
    contract(e1_, m.cls, &m.cnt);
  }
  for (int32_t& k : m.cnt) {
    if (!rng.chance(p)) continue;
    const double sd = std::max(1.0, sigma * k);
    k = std::max<int32_t>(0, static_cast<int32_t>(std::lround(k + sd * rng.normal())));
  }
  if (!repair(m)) return false;
  a = std::move(m);
  return true;
}

bool AllocOps::move_budget(Allocation& a, Rng& rng) {
  const int nc = a.num_classes();
  if (nc < 2) return false;
  const auto min = min_counts(g_, t_, a.cls);
  caps(a.cls, min);
  bytes_ = class_bytes(t_, a.cls);
  const ClassId from = static_cast<ClassId>(rng.below(nc));
  ClassId to = static_cast<ClassId>(rng.below(nc - 1));
  if (to >= from) ++to;
  const int64_t surplus = static_cast<int64_t>(a.cnt[from] - min[from]) * bytes_[from];
  const int64_t room = cap_[to] - a.cnt[to];
  if (surplus < bytes_[to] || room <= 0) return false;
  const double share = 0.05 + 0.45 * rng.uniform();
  const int64_t add =
      std::clamp<int64_t>(static_cast<int64_t>(share * surplus) / bytes_[to], 1, room);
  const int64_t remove = (add * bytes_[to] + bytes_[from] - 1) / bytes_[from];
  if (remove > a.cnt[from] - min[from]) return false;
  a.cnt[from] -= static_cast<int32_t>(remove);
  a.cnt[to] += static_cast<int32_t>(add);
  SA_CHECK(pool_bytes(t_, a) <= budget_, "move_budget went over budget");
  return true;
}

bool AllocOps::favour_small(Allocation& a, int k) {
  Allocation b = a;
  const auto min = min_counts(g_, t_, b.cls);
  caps(b.cls, min);
  for (int c = 0; c < b.num_classes(); ++c)
    b.cnt[c] = c < k ? cap_[c] : min[c];
  if (!repair(b)) return false;
  a = std::move(b);
  return true;
}

void AllocOps::caps(std::span<const ClassId> cls, std::span<const int32_t> min) {
  const int nc = cls.empty() ? 0 : cls.back() + 1;
  cap_.assign(nc, 0);
  for (int i = 0; i < t_.num_sizes(); ++i)
    cap_[cls[i]] += size_cap_[i];
  for (int c = 0; c < nc; ++c)
    cap_[c] = std::max(cap_[c], min[c]);
}

bool AllocOps::repair(Allocation& a) {
  const int nc = a.num_classes();
  a.cnt.resize(nc, 0);
  const auto min = min_counts(g_, t_, a.cls);
  // Objects beyond the cap are useless (and slow the planner down).
  caps(a.cls, min);
  for (int c = 0; c < nc; ++c)
    a.cnt[c] = std::min(a.cnt[c], cap_[c]);
  if (!repair_counts(t_, min, budget_, a)) return false;
  // Fill what is left towards the caps, one common fraction of every gap.
  bytes_ = class_bytes(t_, a.cls);
  int64_t used = 0, gap_bytes = 0;
  for (int c = 0; c < nc; ++c) {
    used += bytes_[c] * a.cnt[c];
    gap_bytes += bytes_[c] * (cap_[c] - a.cnt[c]);
  }
  int64_t left = budget_ - used;
  if (left <= 0 || gap_bytes == 0) return true;
  const double f = std::min(1.0, static_cast<double>(left) / static_cast<double>(gap_bytes));
  for (int c = 0; c < nc; ++c) {
    const int32_t add = static_cast<int32_t>((cap_[c] - a.cnt[c]) * f);
    a.cnt[c] += add;
    left -= bytes_[c] * add;
  }
  // Rounding leftovers: largest classes first.
  for (int c = nc - 1; c >= 0 && left > 0; --c) {
    const int64_t add = std::min<int64_t>(cap_[c] - a.cnt[c], left / bytes_[c]);
    if (add <= 0) continue;
    a.cnt[c] += static_cast<int32_t>(add);
    left -= add * bytes_[c];
  }
  SA_CHECK(left >= 0, "repair went over budget by {} bytes", -left);
  return true;
}

bool AllocOps::is_valid(const Allocation& a) const {
  if (!is_well_formed(t_, a)) return false;
  const auto min = min_counts(g_, t_, a.cls);
  for (int c = 0; c < a.num_classes(); ++c)
    if (a.cnt[c] < min[c]) return false;
  return pool_bytes(t_, a) <= budget_;
}

}  // namespace sa
