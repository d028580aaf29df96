#pragma once
// Shared by the baseline tests: a hand-checkable training chain, and what a
// plan copies, drops and recomputes.

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "baselines/baselines.h"
#include "graph/graph.h"
#include "graph/validate.h"
#include "plan/plan.h"
#include "plan/verify.h"
#include "test_util.h"

namespace sa::testing {

// An L-layer chain in which every tensor has 100 B and every op takes 1 us:
//   forward  f_j: a_j = f(a_{j-1}, w_j)              (j = 1..L; a_0 = x, the input)
//   backward b_j: d_{j-1}, g_j = b(d_j, a_{j-1}, w_j) (j = L..1; d_L = a_L; no d_0)
//   update   s_j: w_j -= g_j                          (right after b_j)
// Order f_1..f_L, b_L, s_L, ..., b_1, s_1. Every a_j is saved for backward
// (b_{j+1} reads it), as is a_L (b_L). With in_place = j > 0, a forward op
// u_j right after f_j updates a_j in place (as relu_ does), so that f_j may
// not run again (Note [Recomputation]).
struct Chain {
  Graph g;
  int layers = 0;
  TensorId x = 0;
  std::vector<TensorId> a, w;  // a[j], w[j]: j = 1..L (a[0] = x)
  std::vector<OpId> f;         // f[j]: j = 1..L
  OpId u = -1;                 // the in-place update of a[in_place] (like relu_), if any
};

inline Chain chain_graph(int layers, int in_place = 0) {
  Chain c;
  c.layers = layers;
  GraphBuilder b;
  c.x = b.tensor(100, TensorKind::kInput, "x");
  c.a.assign(layers + 1, c.x);
  c.w.assign(layers + 1, -1);
  c.f.assign(layers + 1, -1);
  for (int j = 1; j <= layers; ++j) {
    c.w[j] = b.tensor(100, TensorKind::kParam, fmt::format("w{}", j));
    c.a[j] = b.tensor(100, TensorKind::kActivation, fmt::format("a{}", j));
    c.f[j] = b.op({c.a[j - 1], c.w[j]}, {c.a[j]});
    b.g.ops[c.f[j]].phase = Phase::kForward;
    b.g.ops[c.f[j]].name = fmt::format("f{}", j);
    if (j == in_place) {
      const OpId u = b.op({}, {}, {c.a[j]});
      b.g.ops[u].phase = Phase::kForward;
      b.g.ops[u].name = fmt::format("u{}", j);
      c.u = u;
    }
  }
  TensorId d = c.a[layers];
  for (int j = layers; j >= 1; --j) {
    const TensorId g = b.tensor(100, TensorKind::kGradient, fmt::format("g{}", j));
    std::vector<TensorId> outs = {g};
    TensorId next = -1;
    if (j > 1) {
      next = b.tensor(100, TensorKind::kGradient, fmt::format("d{}", j - 1));
      outs.insert(outs.begin(), next);
    }
    const OpId bj = b.op({d, c.a[j - 1], c.w[j]}, outs);
    const OpId sj = b.op({g}, {}, {c.w[j]});
    b.g.ops[bj].phase = Phase::kBackward;
    b.g.ops[bj].name = fmt::format("b{}", j);
    b.g.ops[sj].phase = Phase::kUpdate;
    b.g.ops[sj].name = fmt::format("s{}", j);
    d = next;
  }
  b.g.name = fmt::format("chain{}", layers);
  validate_graph(b.g, b.g.name);
  c.g = std::move(b.g);
  return c;
}

// What a plan does besides computing: per step kind, the tensors (copies,
// drops) or ops (recomputes) it names, in step order.
struct StepTally {
  std::vector<TensorId> swapped_in, swapped_out, dropped;
  std::vector<OpId> recomputed;
};

inline StepTally tally_steps(const Plan& p) {
  StepTally t;
  for (const Step& st : p.steps)
    switch (st.kind) {
      case StepKind::kSwapIn:
        t.swapped_in.push_back(st.tensor());
        break;
      case StepKind::kSwapOut:
        t.swapped_out.push_back(st.tensor());
        break;
      case StepKind::kDrop:
        t.dropped.push_back(st.tensor());
        break;
      case StepKind::kRecompute:
        t.recomputed.push_back(st.op());
        break;
      case StepKind::kCompute:
        break;
    }
  return t;
}

// The transients among ids, sorted (what was dropped to be recomputed).
inline std::vector<TensorId> transients(const Graph& g, std::vector<TensorId> ids) {
  std::erase_if(ids, [&](TensorId t) { return !is_transient(g.tensors[t].kind); });
  std::sort(ids.begin(), ids.end());
  return ids;
}

inline std::vector<int32_t> sorted(std::vector<int32_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Checks the plan of a feasible baseline (`what` says which): it verifies
// and fits the budget (ideal aside: unlimited memory), and the recomputing
// baselines copy no transient. Returns what its steps do.
inline StepTally check_plan(const Graph& g, const std::string& name, const BaselinePlan& r,
                            int64_t budget, const std::string& what) {
  EXPECT_TRUE(r.feasible) << what << ": " << r.why;
  const VerifyResult v = verify_plan(g, r.plan);
  EXPECT_TRUE(v.ok) << what << ": " << v.violation;
  if (name != "ideal") {
    EXPECT_LE(r.plan.arena_bytes(), budget) << what;
  }
  const StepTally t = tally_steps(r.plan);
  if (name == "checkpoint" || name == "dtr") {
    EXPECT_EQ(transients(g, t.swapped_out), std::vector<TensorId>{}) << what;
    EXPECT_EQ(transients(g, t.swapped_in), std::vector<TensorId>{}) << what;
  }
  return t;
}

}  // namespace sa::testing
