#include "planner_cases.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "cost/op_cost.h"
#include "graph/stats.h"
#include "plan/bounds.h"
#include "plan/planner.h"
#include "plan/simulator.h"
#include "plan/verify.h"
#include "test_util.h"

namespace sa::testing {

uint64_t test_seed() {
  static const uint64_t seed = [] {
    const uint64_t s = seed_from_env(20260412);
    std::cout << "[ verify_test ] SA_TEST_SEED=" << s << "\n";
    return s;
  }();
  return seed;
}

DeviceProfile slow_link() {
  DeviceProfile d;
  d.name = "slow-link";
  d.h2d_gbps = 0.001;
  d.d2h_gbps = 0.001;
  d.duplex_gbps = 0.0015;
  d.launch_overhead_us = 1;
  return d;
}

std::vector<OpId> random_order(const Dataflow& df, std::mt19937_64& rng) {
  const int m = df.num_ops();
  std::vector<int> missing(m);
  std::vector<OpId> ready, order;
  for (OpId o = 0; o < m; ++o) {
    missing[o] = static_cast<int>(df.preds(o).size());
    if (missing[o] == 0) ready.push_back(o);
  }
  while (!ready.empty()) {
    const size_t i = rng() % ready.size();
    const OpId o = ready[i];
    ready[i] = ready.back();
    ready.pop_back();
    order.push_back(o);
    for (OpId s : df.succs(o))
      if (--missing[s] == 0) ready.push_back(s);
  }
  return order;
}

int64_t min_feasible_budget(const Graph& g, const SizeTable& t) {
  std::vector<ClassId> cls(t.num_sizes());
  for (int i = 0; i < t.num_sizes(); ++i)
    cls[i] = i;
  const auto cnt = min_counts(g, t, cls);
  const auto bytes = class_bytes(t, cls);
  int64_t sum = 0;
  for (size_t c = 0; c < cnt.size(); ++c)
    sum += cnt[c] * bytes[c];
  return std::max(sum, min_budget(g));
}

void Tally::print(const char* what, uint64_t seed) const {
  std::cout << "[ verify_test ] " << what << " (seed " << seed << "): " << planned << " plans, "
            << planned - failures << " verified, " << recompute_steps << " recompute steps ("
            << replay_steps << " replays of in-place updates, " << state_skips
            << " without the op's updates), " << repaired
            << " plans repaired (Note [Recompute repair])\n";
}

bool verify_case(const Graph& g, const Plan& p, const std::string& what, Tally* tally) {
  ++tally->planned;
  const VerifyResult r = verify_plan(g, p);
  if (r.ok) return true;
  ++tally->failures;
  ADD_FAILURE() << what << ": " << r.violation;
  return false;
}

void plan_and_verify(const Graph& g, const std::string& label, std::mt19937_64& rng,
                     std::vector<PlannedCase>* out, Tally* tally) {
  const Dataflow df(g);
  const SizeTable t = make_size_table(g);
  const DeviceProfile dev = rng() % 2 ? slow_link() : load_device("v100-16gb");
  const std::vector<double> op_us = op_times_us(g, dev);
  Simulator sim;
  const int64_t lo = min_feasible_budget(g, t);
  for (int which = 0; which < 2; ++which) {
    const std::vector<OpId> order = which == 0 ? program_order(g.num_ops()) : random_order(df, rng);
    const int64_t hi = std::max(lo, peak_live_bytes(g, order));
    for (int k = 0; k < 2; ++k) {
      const int64_t budget =
          k == 0 ? lo + static_cast<int64_t>(rng() % (hi - lo + 1)) : lo + (hi - lo) / 8;
      const Problem pb(g, dev, budget);
      Planner planner(pb);  // every stage (Note [Planning stages])
      Allocation a;
      std::string why;
      ASSERT_TRUE(default_allocation(g, t, order, budget, &a, &why)) << label << ": " << why;
      for (EvictionPolicy ev : {EvictionPolicy::kBelady, EvictionPolicy::kLru}) {
        for (int variant = 0; variant < 4; ++variant) {
          const bool steady = variant < 2;
          PlannerOptions opt;
          opt.eviction = ev;
          opt.steady_state = steady;
          // The search's steady state prunes R in a pass between (Note
          // [Steady-state passes]); the baselines' does not.
          opt.max_passes = variant == 0 ? 1 : 0;
          opt.deadline_copy_order = variant % 2 == 0;
          // Note [Home offsets] (placed arena) at the tighter budget.
          opt.home_offsets = variant == 0 && k == 1;
          // Half the variants recompute: random genes (Note [Recompute genes]).
          std::vector<uint8_t> genes(g.num_ops());
          for (auto& x : genes)
            x = static_cast<uint8_t>(rng() % 2);
          if (variant == 0 || variant == 3) opt.recompute = &genes;
          for (Allocator alloc : {Allocator::kSizeClass, Allocator::kArena}) {
            Plan p;
            const std::string what = fmt::format(
                "{}, {} order, budget {} (min {}, peak {}), {}, steady_state {} ({} passes "
                "between{}), {} copy order, {}, {}, {}",
                label, which == 0 ? "program" : "random", budget, lo, hi,
                ev == EvictionPolicy::kBelady ? "belady" : "lru", steady, opt.max_passes,
                opt.home_offsets ? ", home offsets" : "",
                opt.deadline_copy_order ? "deadline" : "release", dev.name, to_string(alloc),
                opt.recompute ? "recompute" : "swap only");
            SimResult picked;
            const PlanResult planned =
                planner.plan(order, alloc == Allocator::kArena ? nullptr : &a, opt, &p, &picked);
            if (!planned.ok && (alloc == Allocator::kArena || opt.recompute)) {
              // Only a packing that stays above the budget, or recomputing more
              // than fits, may refuse.
              EXPECT_TRUE(planned.why.find("packed offsets") != std::string::npos ||
                          (opt.recompute &&
                           planned.why.find("no memory to recompute") != std::string::npos))
                  << what << ": " << planned.why;
              continue;
            }
            if (opt.recompute) {
              tally->recompute_steps += plan_traffic(g, p).recomputes;
              for (const Step& st : p.steps) {
                if (st.kind != StepKind::kRecompute) continue;
                const Op& op = g.ops[st.op()];
                tally->replay_steps += !op.updates.empty() && op.outputs.empty();
                tally->state_skips += op.recompute_skips_updates;
              }
              // Note [Recompute repair]: what found no memory is not recomputed.
              tally->repaired += planned.ok && !planned.not_recomputed.empty();
              for (const Step& st : p.steps) {
                if (st.kind == StepKind::kRecompute) {
                  EXPECT_EQ(std::count(planned.not_recomputed.begin(), planned.not_recomputed.end(),
                                       st.op()),
                            0)
                      << what;
                }
              }
            }
            ASSERT_TRUE(planned.ok) << what << ": " << planned.why;
            if (alloc == Allocator::kArena) {
              EXPECT_LE(p.arena_bytes(), budget) << what;
              EXPECT_LE(planned.capacity, budget) << what;
            }
            if (!verify_case(g, p, what, tally)) continue;
            const SimResult s = sim.run(g, p, op_us, dev);
            EXPECT_TRUE(s.ok) << what << ": verified, but the simulator says: " << s.error;
            // The planner's simulation (the one that chose the deadline
            // order, or stage 3's) is the plan's.
            EXPECT_EQ(picked.iteration_us, s.iteration_us) << what;
            EXPECT_EQ(picked.stall_us, s.stall_us) << what;
            EXPECT_EQ(picked.swap_in_bytes, s.swap_in_bytes) << what;
            // No plan that remakes nothing beats the transfer bound of its
            // order (Note [Transfer bound]); one that does may (seed 5 found
            // one that did, and this checked every plan).
            const TimeBound tb = time_bound(g, p.order, op_us, dev, budget);
            const bool remakes = std::any_of(p.steps.begin(), p.steps.end(), [](const Step& st) {
              return st.kind == StepKind::kRecompute;
            });
            if (!remakes)
              EXPECT_GE(s.iteration_us, tb.bound_us() * (1 - 1e-9))
                  << what << ": beats its lower bound (transfer " << tb.transfer_us << " us at op "
                  << tb.at_op << ", " << tb.off_device_bytes << " B in)";
            // Nor the bound whatever it recomputes (Note [Recompute bound]).
            const TimeBound rc = time_bound(g, p.order, op_us, dev, budget, true);
            EXPECT_GE(s.iteration_us, rc.bound_us() * (1 - 1e-9))
                << what << ": beats its recompute bound (" << rc.off_device_bytes << " B in at op "
                << rc.at_op << ", " << rc.remake_us << " us of remaking)";
            EXPECT_LE(rc.bound_us(), tb.bound_us() * (1 + 1e-12)) << what;
            if (out && rng() % 4 == 0) out->push_back({what, std::move(p)});
          }
        }
      }
    }
  }
}

}  // namespace sa::testing
