#include "plan/swap_planner.h"

#include "plan/swap/pass.h"

namespace sa {
using namespace swap_plan;  // the walk's types (plan/swap/pass.h)

SwapPlanner::SwapPlanner(const Graph& g, const SizeTable& sizes, std::span<const double> op_us,
                         const DeviceProfile& device)
    : pass_(std::make_unique<Pass>(g, sizes, op_us, device)) {}

SwapPlanner::~SwapPlanner() = default;

std::span<const PackItem> SwapPlanner::last_packing() const {
  return pass_->pack_items();
}

std::span<const StepKey> SwapPlanner::last_keys() const {
  return pass_->keys();
}

template <class F>
PlanResult SwapPlanner::with_repairs(const PlannerOptions& options, F&& once) {
  if (!options.recompute) return once(options);
  std::vector<uint8_t> genes = *options.recompute;
  PlannerOptions opt = options;
  opt.recompute = &genes;
  std::vector<OpId> off;
  for (int repair = 0;; ++repair) {
    PlanResult r = once(opt);
    r.not_recomputed.insert(r.not_recomputed.begin(), off.begin(), off.end());
    if (r.ok || r.not_recomputed.size() == off.size() || repair == kRecomputeRepairs) return r;
    const OpId failed = r.not_recomputed.back();
    r.not_recomputed.pop_back();
    const size_t before = r.not_recomputed.size();
    auto stop = [&](OpId o) {
      genes[o] = 0;  // (an op reading two outputs of o names it once)
      r.not_recomputed.push_back(o);
    };
    if (genes[failed]) {
      stop(failed);
    } else {
      // The op found no memory for its own items beside the recomputes of
      // what it reads and updates: their producers stop recomputing instead.
      for_each_access(pass_->graph().ops[failed], [&](TensorId t, Access a) {
        if (const OpId p = pass_->producer(t); a != Access::kCreate && p != kNoOp && genes[p])
          stop(p);
      });
    }
    if (r.not_recomputed.size() == before) {  // nothing left to turn off
      r.not_recomputed.push_back(failed);
      return r;
    }
    off = r.not_recomputed;
  }
}

PlanResult SwapPlanner::plan(std::span<const OpId> order, const Allocation& a, int64_t budget,
                             const PlannerOptions& options, Plan* out,
                             const Directives* directives) {
  return with_repairs(options, [&](const PlannerOptions& opt) {
    return plan_once(order, a, budget, opt, out, directives);
  });
}

PlanResult SwapPlanner::plan_arena(std::span<const OpId> order, int64_t capacity, int64_t budget,
                                   const PlannerOptions& options, Plan* out,
                                   const Directives* directives) {
  return with_repairs(options, [&](const PlannerOptions& opt) {
    return plan_arena_once(order, capacity, budget, opt, out, directives);
  });
}

PlanResult SwapPlanner::plan_once(std::span<const OpId> order, const Allocation& a, int64_t budget,
                                  const PlannerOptions& options, Plan* out,
                                  const Directives* directives) {
  SA_CHECK(static_cast<int>(order.size()) == pass_->num_ops(), "order has {} ops, graph {}",
           order.size(), pass_->num_ops());
  SA_CHECK(is_well_formed(pass_->sizes(), a), "malformed allocation");
  PlanResult r;
  const bool unbounded = directives && directives->unbounded;
  if (!unbounded) {
    const int64_t pool = pool_bytes(pass_->sizes(), a);
    SA_CHECK(pool <= budget, "pool of {} bytes over the budget of {}", pool, budget);
  }
  if (!pass_->prepare(order, a, options, directives, !unbounded, &r.why)) return r;
  std::vector<int32_t> cnt = a.cnt;
  try {
    if (unbounded) {
      // Measure what the rules need with room for everything, then plan with
      // exactly that. Recomputes take objects that the demand without them
      // does not count (workspaces and dead outputs pass through until the
      // op that needs them has run): then every item of a class may have one.
      pass_->run_passes(options.recompute
                            ? item_counts(pass_->sizes(), a.cls)
                            : demand_counts(pass_->graph(), pass_->sizes(), a.cls, order));
      cnt = pass_->peak_in_use;
    }
    auto resident = pass_->run_passes(cnt);
    pass_->emit(cnt, budget, std::move(resident), out);
  } catch (const NoMemoryToRecompute& e) {
    r.why = no_memory_to_recompute(pass_->graph(), e.op, e.position);
    r.not_recomputed = {e.op};
    return r;
  }
  r.ok = true;
  r.arena_bytes = out->arena_bytes();
  return r;
}

PlanResult SwapPlanner::plan_arena_once(std::span<const OpId> order, int64_t capacity,
                                        int64_t budget, const PlannerOptions& options, Plan* out,
                                        const Directives* directives) {
  SA_CHECK(static_cast<int>(order.size()) == pass_->num_ops(), "order has {} ops, graph {}",
           order.size(), pass_->num_ops());
  PlanResult r;
  const bool unbounded = directives && directives->unbounded;
  // Placing chooses windows as Belady would: DTR counts bytes (kPacked).
  if (!unbounded && options.layout == MemoryLayout::kPlaced &&
      options.eviction != EvictionPolicy::kDtr) {
    const int64_t cap = std::min(capacity, budget);
    if (!pass_->prepare_arena(order, cap, true, options, directives, &r.why)) return r;
    try {
      pass_->set_capacity(cap);
      auto resident = pass_->run_passes({});
      const int64_t peak = pass_->objects_from_placements();
      pass_->emit({}, budget, std::move(resident), out);
      r.ok = true;
      r.capacity = cap;
      r.arena_bytes = peak;
      return r;
    } catch (const NoRoom&) {
      // Counting bytes and packing afterwards always finds room, if the
      // packing fits.
      PlannerOptions packed = options;
      packed.layout = MemoryLayout::kPacked;
      return plan_arena_once(order, capacity, budget, packed, out, directives);
    } catch (const NoMemoryToRecompute& e) {
      r.why = no_memory_to_recompute(pass_->graph(), e.op, e.position);
      r.not_recomputed = {e.op};
      return r;
    }
  }
  int64_t cap = unbounded ? INT64_MAX / 8 : std::min(capacity, budget);
  if (!pass_->prepare_arena(order, cap, false, options, directives, &r.why)) return r;
  const int64_t floor = pass_->max_op_bytes();
  for (int attempt = 0;; ++attempt) {
    pass_->set_capacity(cap);
    std::vector<ResidentTensor> resident;
    try {
      resident = pass_->run_passes({});
    } catch (const NoMemoryToRecompute& e) {
      r.why = no_memory_to_recompute(pass_->graph(), e.op, e.position);
      r.not_recomputed = {e.op};
      return r;
    }
    const int64_t peak = pass_->pack();
    if (unbounded || peak <= budget) {
      pass_->add_reuse_waits();
      pass_->emit({}, budget, std::move(resident), out);
      r.ok = true;
      r.capacity = cap;
      r.arena_bytes = peak;
      return r;
    }
    if (attempt >= options.max_repairs || cap <= floor) {
      r.why = fmt::format(
          "the packed offsets reach {} ({} B), over the budget of {} ({} B), even with the swaps "
          "planned for {} ({} B)",
          format_bytes(peak), peak, format_bytes(budget), budget, format_bytes(cap), cap);
      return r;
    }
    cap = std::max(floor, cap - (peak - budget));
  }
}

}  // namespace sa
