#include "baselines/baselines.h"

#include <fmt/format.h>

#include "baselines/checkpoint.h"
#include "baselines/dtr.h"
#include "baselines/run_planner.h"
#include "baselines/saved_activations.h"
#include "plan/planner.h"
#include "util/error.h"
#include "util/units.h"

namespace sa {
namespace {

// Rules of the rule-based baselines, on the program order.
enum class Rules { kNone, kVdnn, kSwapAll, kTflms };

Directives make_directives(const Problem& pb, std::span<const OpId> order, Rules rules) {
  const Graph& g = pb.graph;
  const int m = g.num_ops();
  Directives d;
  d.unbounded = true;
  if (rules == Rules::kNone) return d;
  d.evict_after.resize(m);
  d.fetch_before.resize(m);
  // vDNN prefetches at the conv/matmul backward op before the use.
  std::vector<int> layer_starts;
  for (int i = 0; i < m; ++i)
    if (g.ops[order[i]].phase == Phase::kBackward && is_conv_or_matmul(g.ops[order[i]]))
      layer_starts.push_back(i);
  // Inputs of forward conv/matmul ops.
  std::vector<uint8_t> conv_input(g.num_tensors(), 0);
  for (const Op& op : g.ops)
    if (op.phase == Phase::kForward && is_conv_or_matmul(op))
      for (TensorId x : op.inputs)
        conv_input[x] = 1;
  for (const SavedActivation& s : saved_activations(g, order)) {
    int fetch = s.first_backward_pos;
    if (rules == Rules::kVdnn) {
      if (!conv_input[s.tensor]) continue;
      auto it = std::lower_bound(layer_starts.begin(), layer_starts.end(), s.first_backward_pos);
      if (it != layer_starts.begin() && *(it - 1) > s.last_forward_pos) fetch = *(it - 1);
    } else if (rules == Rules::kTflms) {
      fetch = std::max(s.last_forward_pos + 1, s.first_backward_pos - kTflmsLookahead);
    }
    d.evict_after[s.last_forward_pos].push_back(s.tensor);
    d.fetch_before[fetch].push_back(s.tensor);
  }
  if (rules == Rules::kTflms) {
    d.never_evict.assign(g.num_tensors(), 0);
    for (TensorId x = 0; x < g.num_tensors(); ++x)
      d.never_evict[x] = is_persistent(g.tensors[x].kind);
  }
  return d;
}

}  // namespace

std::vector<std::string> baseline_names() {
  return {"ideal", "odswap", "vdnn", "swap-all", "tflms", "checkpoint", "dtr"};
}

BaselinePlan plan_baseline(std::string_view name, const Problem& pb, Allocator allocator) {
  BaselinePlan r;
  if (name == "checkpoint") return plan_checkpoint(pb, allocator).result;
  if (name == "dtr") return plan_dtr(pb, allocator);
  const Graph& g = pb.graph;
  const auto order = program_order(g.num_ops());
  Planner planner(pb);
  PlannerOptions opt;

  if (name == "odswap") {
    opt.eviction = EvictionPolicy::kLru;
    opt.deadline_copy_order = false;  // Note [Copy order] is this project's, not the baseline's
    const PlanResult planned = plan_within_budget(planner, pb, order, allocator, opt, &r.plan);
    if (!planned.ok) {
      r.why = planned.why;
      r.plan = Plan();
      return r;
    }
  } else {
    Rules rules;
    if (name == "ideal")
      rules = Rules::kNone;
    else if (name == "vdnn")
      rules = Rules::kVdnn;
    else if (name == "swap-all")
      rules = Rules::kSwapAll;
    else if (name == "tflms")
      rules = Rules::kTflms;
    else
      throw Error(fmt::format("unknown method '{}' (known: swapadvisor, {})", name,
                              fmt::join(baseline_names(), ", ")));
    if (rules != Rules::kNone && !has_backward(g)) {
      r.why = "the graph has no backward phase, which this method's rules need";
      return r;
    }
    // Room for whatever the rules keep: the plan says how much that is.
    const Directives d = make_directives(pb, order, rules);
    plan_unbounded(planner, pb, order, allocator, opt, d, name, &r.plan);
    const int64_t need = r.plan.arena_bytes();
    if (rules == Rules::kNone) {
      r.plan.memory_budget = need;  // ideal: whatever it takes
    } else if (need > pb.budget) {
      r.why = fmt::format("its rules keep up to {} on the device, over the budget of {}",
                          format_bytes(need), format_bytes(pb.budget));
      r.plan = Plan();
      return r;
    }
  }
  r.feasible = true;
  return r;
}

}  // namespace sa
