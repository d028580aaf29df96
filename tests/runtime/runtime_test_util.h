#pragma once
// Helpers of the runtime tests: a small graph whose plan swaps, and finding
// steps in a plan.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/dataflow.h"
#include "plan/swap_planner.h"
#include "test_util.h"

// Sanitizer builds run the kernels and copies several times slower than the
// emulated device allows, so their timings mean nothing: timing checks are
// skipped there (correctness checks still run). SA_UNDER_TSAN: tests that
// race by design, or that are too slow under ThreadSanitizer, adapt to it.
#if defined(__SANITIZE_THREAD__)
#define SA_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SA_UNDER_TSAN 1
#endif
#endif
#if defined(SA_UNDER_TSAN) || defined(__SANITIZE_ADDRESS__)
#define SA_SANITIZED_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SA_SANITIZED_BUILD 1
#endif
#endif
#ifndef SA_SANITIZED_BUILD
#define SA_SANITIZED_BUILD 0
#endif

namespace sa::testing {

inline constexpr bool kSanitizedBuild = SA_SANITIZED_BUILD;

// Six activations of `bytes` each, three objects of one class, op times of
// op_us:
//   op0: a = f()        op1: b = g(a)      op2: c = h(b)
//   op3: d = k(b, c)    op4: e = m(c, d)   op5: x = n(a, e)
// At op3 four tensors are live (a idle), so a is swapped out of object 0
// after op1, op3 creates d in object 0, and a comes back into it once op4,
// d's last reader, is done:
//   C0 C1 out(a) C2 C3[waits out(a)] C4 in(a)[waits C4, out(a)] C5[waits in(a)]
struct SwapChain {
  Graph g;
  Plan plan;
  std::vector<double> op_us;
  DeviceProfile link;
};

inline SwapChain swap_chain(int64_t bytes, double op_us, double link_gbps) {
  SwapChain s;
  GraphBuilder b;
  const char* names[] = {"a", "b", "c", "d", "e", "x"};
  std::vector<TensorId> t;
  for (const char* n : names)
    t.push_back(b.tensor(bytes, TensorKind::kActivation, n));
  b.op({}, {t[0]}, {}, op_us, "test::f");
  b.op({t[0]}, {t[1]}, {}, op_us, "test::g");
  b.op({t[1]}, {t[2]}, {}, op_us, "test::h");
  b.op({t[1], t[2]}, {t[3]}, {}, op_us, "test::k");
  b.op({t[2], t[3]}, {t[4]}, {}, op_us, "test::m");
  b.op({t[0], t[4]}, {t[5]}, {}, op_us, "test::n");
  s.g = std::move(b.g);
  for (OpId o = 0; o < s.g.num_ops(); ++o)
    s.g.ops[o].name = std::string("op") + std::to_string(o);
  s.op_us.assign(s.g.num_ops(), op_us);
  s.link.name = "test-link";
  s.link.h2d_gbps = link_gbps;
  s.link.d2h_gbps = link_gbps;
  s.link.duplex_gbps = 1.5 * link_gbps;
  const SizeTable sizes = make_size_table(s.g);
  SwapPlanner planner(s.g, sizes, s.op_us, s.link);
  const PlanResult planned =
      planner.plan(program_order(s.g.num_ops()), Allocation{{0}, {3}}, 3 * bytes, {}, &s.plan);
  EXPECT_TRUE(planned.ok) << planned.why;
  return s;
}

// The first step of `kind` on `subject`, or -1.
inline StepId find_step(const Plan& p, StepKind kind, int32_t subject) {
  for (StepId s = 0; s < p.num_steps(); ++s)
    if (p.steps[s].kind == kind && testing::subject_of(p.steps[s]) == subject) return s;
  return -1;
}

// Removes wait w from step s's waits (the plan's waits array is rebuilt).
inline void remove_wait(Plan& p, StepId s, StepId w) {
  std::vector<StepId> waits;
  for (StepId i = 0; i < p.num_steps(); ++i) {
    const auto old = p.waits_of(i);
    const int32_t begin = static_cast<int32_t>(waits.size());
    for (StepId x : old)
      if (!(i == s && x == w)) waits.push_back(x);
    p.steps[i].wait_begin = begin;
    p.steps[i].wait_end = static_cast<int32_t>(waits.size());
  }
  p.waits = std::move(waits);
}

}  // namespace sa::testing
