// From the walk's steps to a Plan: offsets packed (arena), waits for reused
// memory, the copy order (Note [Copy order]) and the plan written.

#include "plan/swap/pass.h"

namespace sa {
using namespace swap_plan;  // this folder's types (pass.h)

int64_t SwapPlanner::Pass::objects_from_placements() {
  // One object per distinct range: a tensor back at its offset at the end
  // of the iteration reuses the object it started in.
  std::map<std::pair<int64_t, int64_t>, int32_t> object_of;
  const int nt = static_cast<int>(tenancies_.size());
  tenancy_unit_.assign(nt, -1);
  unit_offset_.clear();
  unit_bytes_.clear();
  int64_t peak = 0;
  for (int t = 0; t < nt; ++t) {
    const Tenancy& x = tenancies_[t];
    const std::pair<int64_t, int64_t> range{x.offset, bytes_[x.item]};
    auto [it, fresh] = object_of.try_emplace(range, static_cast<int32_t>(unit_offset_.size()));
    if (fresh) {
      unit_offset_.push_back(range.first);
      unit_bytes_.push_back(range.second);
      peak = std::max(peak, range.first + range.second);
    }
    tenancy_unit_[t] = it->second;
  }
  tighten_swap_in_keys();
  return peak;
}

int64_t SwapPlanner::Pass::pack() {
  const int nt = static_cast<int>(tenancies_.size());
  const int32_t end_of_iteration = when(m_ + 1, StepKind::kCompute);
  tenancy_unit_.assign(nt, -1);
  pack_items_.clear();
  for (int t = 0; t < nt; ++t) {
    const Tenancy& x = tenancies_[t];
    // A joined tenancy's unit is an earlier tenancy, already numbered.
    int32_t& u = tenancy_unit_[t];
    u = x.unit == t ? static_cast<int32_t>(pack_items_.size()) : tenancy_unit_[x.unit];
    if (u == static_cast<int32_t>(pack_items_.size())) pack_items_.push_back({bytes_[x.item], {}});
    const Interval life{x.begin, x.end == INT32_MAX ? end_of_iteration : x.end};
    SA_CHECK(life.begin <= life.end, "tenancy {} of item {} ends at {} before it begins at {}", t,
             x.item, life.end, life.begin);
    PackItem& item = pack_items_[u];
    (item.life[0].empty() ? item.life[0] : item.life[1]) = life;
  }
  unit_bytes_.resize(pack_items_.size());
  for (size_t u = 0; u < pack_items_.size(); ++u)
    unit_bytes_[u] = pack_items_[u].bytes;
  return packer_.pack(pack_items_, &unit_offset_, opt_.packing);
}

void SwapPlanner::Pass::add_reuse_waits() {
  const int nt = static_cast<int>(tenancies_.size());
  std::vector<int32_t> by_begin(nt);
  for (int t = 0; t < nt; ++t)
    by_begin[t] = t;
  std::stable_sort(by_begin.begin(), by_begin.end(),
                   [&](int32_t a, int32_t b) { return tenancies_[a].begin < tenancies_[b].begin; });
  reuse_waits_.clear();
  RangeMap<int32_t> last;  // arena address -> the last tenancy there
  for (int32_t t : by_begin) {
    const Tenancy& x = tenancies_[t];
    const int64_t offset = unit_offset_[tenancy_unit_[t]];
    last.assign(offset, offset + bytes_[x.item], t, [&](int64_t, int64_t, int32_t prev) {
      SA_CHECK(tenancies_[prev].end < x.begin,
               "tenancy {} (item {}) overlaps tenancy {} (item {}) in time and in the arena", t,
               x.item, prev, tenancies_[prev].item);
      if (x.first < 0) return;
      // A creating compute step follows the previous tenant's last compute
      // step on the compute stream already.
      if (steps_[x.first].kind == StepKind::kSwapIn && rel_compute_[prev] >= 0)
        reuse_waits_.push_back({x.first, rel_compute_[prev]});
      if (rel_copy_[prev] >= 0) reuse_waits_.push_back({x.first, rel_copy_[prev]});
    });
  }
  if (!reuse_waits_.empty()) {
    // Merge them into each step's waits.
    std::sort(reuse_waits_.begin(), reuse_waits_.end());
    std::vector<StepId> merged;
    merged.reserve(waits_.size() + reuse_waits_.size());
    size_t k = 0;
    for (StepId s = 0; s < static_cast<StepId>(steps_.size()); ++s) {
      TempStep& st = steps_[s];
      const int32_t begin = static_cast<int32_t>(merged.size());
      merged.insert(merged.end(), waits_.begin() + st.wait_begin, waits_.begin() + st.wait_end);
      for (; k < reuse_waits_.size() && reuse_waits_[k].first == s; ++k)
        merged.push_back(reuse_waits_[k].second);
      std::sort(merged.begin() + begin, merged.end());
      merged.erase(std::unique(merged.begin() + begin, merged.end()), merged.end());
      st.wait_begin = begin;
      st.wait_end = static_cast<int32_t>(merged.size());
    }
    waits_ = std::move(merged);
  }
  tighten_swap_in_keys();
}

// A swap-in was keyed where the walk had room for it; its place in the
// arena may have been free earlier. Keyed at its latest wait instead, it
// enters the copy order as soon as it can start (Note [Copy order] admits a
// copy once the op at its key has run).
void SwapPlanner::Pass::tighten_swap_in_keys() {
  for (TempStep& st : steps_) {
    if (st.kind != StepKind::kSwapIn) continue;
    int32_t key = -1;
    for (int32_t w = st.wait_begin; w < st.wait_end; ++w)
      key = std::max(key, steps_[waits_[w]].key_pos);
    st.key_pos = key;
  }
}

// The steps sorted on (key_pos, rank), stably in the order of `visit` (a
// counting sort): result[k] is the step that goes k-th.
std::vector<int32_t> SwapPlanner::Pass::by_key(std::span<const int32_t> visit) const {
  const int buckets = (m_ + 1) * 3;
  std::vector<int32_t> begin(buckets + 1, 0);
  auto bucket_of = [&](const TempStep& t) { return (t.key_pos + 1) * 3 + rank_of(t.kind); };
  for (const TempStep& t : steps_)
    ++begin[bucket_of(t) + 1];
  for (int b = 0; b < buckets; ++b)
    begin[b + 1] += begin[b];
  std::vector<int32_t> sorted(steps_.size());
  for (int32_t k : visit)
    sorted[begin[bucket_of(steps_[k])]++] = k;
  return sorted;
}

// Writes the steps into *out sorted on (key_pos, rank), stably in the order
// of `visit`; *old_of[k] is the step that went k-th.
void SwapPlanner::Pass::write_plan(std::span<const int32_t> visit, std::span<const int32_t> cnt,
                                   int64_t budget, const std::vector<ResidentTensor>& resident,
                                   Plan* out, std::vector<StepId>* old_of_out) {
  Plan& p = *out;
  p.clear();
  const int num_steps = static_cast<int>(steps_.size());
  *old_of_out = by_key(visit);
  const std::vector<StepId>& old_of = *old_of_out;
  std::vector<StepId> new_id(num_steps);
  for (int k = 0; k < num_steps; ++k)
    new_id[old_of[k]] = k;
  // Arena: the walk's objects are tenancies; the plan's are their units.
  auto object = [&](ObjectId obj) { return arena() && obj >= 0 ? tenancy_unit_[obj] : obj; };
  p.steps.resize(num_steps);
  p.waits.reserve(waits_.size());
  for (StepId id = 0; id < num_steps; ++id) {
    const TempStep& t = steps_[old_of[id]];
    Step& st = p.steps[id];
    st = Step::of(t.kind, t.subject, object(t.object));
    if (t.kind == StepKind::kRecompute) {
      st.obj_begin = static_cast<int32_t>(p.recompute_objects.size());
      for (int32_t k = t.obj_begin; k < t.obj_end; ++k)
        p.recompute_objects.push_back(object(recompute_objs_[k]));
      st.obj_end = static_cast<int32_t>(p.recompute_objects.size());
    }
    st.wait_begin = static_cast<int32_t>(p.waits.size());
    for (int w = t.wait_begin; w < t.wait_end; ++w) {
      const StepId target = new_id[waits_[w]];
      SA_CHECK(target < id, "step {} ({} of {}, key {}) waits for later step {} ({} of {}, key {})",
               id, to_string(t.kind), t.subject, t.key_pos, target,
               to_string(steps_[waits_[w]].kind), steps_[waits_[w]].subject,
               steps_[waits_[w]].key_pos);
      p.waits.push_back(target);
    }
    st.wait_end = static_cast<int32_t>(p.waits.size());
  }
  p.memory_budget = budget;
  p.order.assign(order_.begin(), order_.end());
  if (arena()) {
    p.allocator = Allocator::kArena;
    p.objects.resize(unit_offset_.size());
    for (size_t u = 0; u < unit_offset_.size(); ++u)
      p.objects[u] = {unit_offset_[u], unit_bytes_[u], -1};
  } else {
    p.allocator = Allocator::kSizeClass;
    p.pool.class_bytes = class_bytes_;
    p.pool.class_count.assign(cnt.begin(), cnt.end());
    p.layout_pool();
    p.tensor_class.assign(class_.begin(), class_.begin() + n_);
    p.workspace_class.assign(class_.begin() + n_, class_.end());
  }
  p.access_begin = access_begin_;
  p.access_objects.resize(access_objects_.size());
  for (size_t k = 0; k < access_objects_.size(); ++k)
    p.access_objects[k] = object(access_objects_[k]);
  p.initial_resident = resident;
  for (ResidentTensor& r : p.initial_resident)
    r.object = object(r.object);
  std::sort(p.initial_resident.begin(), p.initial_resident.end(),
            [](const ResidentTensor& a, const ResidentTensor& b) { return a.tensor < b.tensor; });
  add_collective_waits(g_, &p);  // data-parallel plans: the collective stream's waits
}

void SwapPlanner::Pass::emit(std::span<const int32_t> cnt, int64_t budget,
                             std::vector<ResidentTensor> resident, Plan* out) {
  const int num_steps = static_cast<int>(steps_.size());
  std::vector<int32_t> visit(num_steps);
  for (int k = 0; k < num_steps; ++k)
    visit[k] = k;
  std::vector<StepId> old_of;
  write_plan(visit, cnt, budget, resident, out, &old_of);
  // For the copy-order stage (Note [Planning stages]): where each step
  // stands, and the order the walk made it in.
  keys_.resize(num_steps);
  for (StepId s = 0; s < num_steps; ++s)
    keys_[s] = {steps_[old_of[s]].key_pos, old_of[s]};
}

}  // namespace sa
