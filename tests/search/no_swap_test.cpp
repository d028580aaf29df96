// search/no_swap.h: the memory-greedy order, hand-checked and against the
// plain quadratic list schedule of Note [No-swap floor] on random graphs.

#include <cstdio>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "graph/dataflow.h"
#include "random_graph.h"
#include "search/no_swap.h"
#include "test_util.h"

namespace sa {
namespace {

// Every step scans every ready op for the fewest bytes added (outputs less
// the transients it uses last), ties to the lowest id. O(m^2) on wide graphs.
std::vector<OpId> reference_memory_greedy(const Graph& g, const Dataflow& df) {
  const int m = g.num_ops();
  std::vector<int32_t> uses_left(g.num_tensors(), 0), missing(m, 0);
  for (const Op& op : g.ops)
    for_each_access(op, [&](TensorId t, Access) { ++uses_left[t]; });
  auto delta = [&](OpId o) {
    int64_t d = 0;
    for (TensorId t : g.ops[o].outputs)
      d += g.tensors[t].bytes;
    for_each_access(g.ops[o], [&](TensorId t, Access a) {
      if (a != Access::kCreate && is_transient(g.tensors[t].kind) && uses_left[t] == 1)
        d -= g.tensors[t].bytes;
    });
    return d;
  };
  std::vector<OpId> ready, order;
  for (OpId o = 0; o < m; ++o) {
    missing[o] = static_cast<int32_t>(df.preds(o).size());
    if (missing[o] == 0) ready.push_back(o);
  }
  while (!ready.empty()) {
    size_t best = 0;
    for (size_t k = 1; k < ready.size(); ++k) {
      const int64_t dk = delta(ready[k]), db = delta(ready[best]);
      if (dk < db || (dk == db && ready[k] < ready[best])) best = k;
    }
    const OpId o = ready[best];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(best));
    order.push_back(o);
    for_each_access(g.ops[o], [&](TensorId t, Access) { --uses_left[t]; });
    for (OpId s : df.succs(o))
      if (--missing[s] == 0) ready.push_back(s);
  }
  return order;
}

// Two independent chains from one input x (10 B):
//   op0: a (100) = f(x)   op1: b (1) = f(a)      (op1 frees a: -99)
//   op2: c (5) = f(x)     op3: d (50) = f(c)     (op3 frees c: +45)
// Ready at the start: op0 (+100), op2 (+5): op2. Then op0 (+100), op3
// (+45): op3. Then op0: op0, op1. Order 2, 3, 0, 1.
TEST(MemoryGreedyOrder, HandChecked) {
  testing::GraphBuilder b;
  const TensorId x = b.tensor(10, TensorKind::kInput);
  const TensorId a = b.tensor(100, TensorKind::kActivation);
  const TensorId bb = b.tensor(1, TensorKind::kActivation);
  const TensorId c = b.tensor(5, TensorKind::kActivation);
  const TensorId d = b.tensor(50, TensorKind::kActivation);
  b.op({x}, {a});
  b.op({a}, {bb});
  b.op({x}, {c});
  b.op({c}, {d});
  const Dataflow df(b.g);
  EXPECT_EQ(memory_greedy_order(b.g, df), (std::vector<OpId>{2, 3, 0, 1}));
}

// A tensor's last reader gets cheaper once the other readers ran: x (20 B,
// activation made by op0) read by op1 (out 30) and op2 (out 25). After
// op0: op1 +30, op2 +25: op2 (x has 2 uses left, none frees it). Then op1
// frees x: +10. Order 0, 2, 1 (op1's key changed while it was ready).
TEST(MemoryGreedyOrder, KeyChangesWhileReady) {
  testing::GraphBuilder b;
  const TensorId in = b.tensor(1, TensorKind::kInput);
  const TensorId x = b.tensor(20, TensorKind::kActivation);
  const TensorId y = b.tensor(30, TensorKind::kActivation);
  const TensorId z = b.tensor(25, TensorKind::kActivation);
  const TensorId w = b.tensor(1, TensorKind::kActivation);
  b.op({in}, {x});
  b.op({x}, {y});
  b.op({x}, {z});
  b.op({y, z}, {w});
  const Dataflow df(b.g);
  EXPECT_EQ(memory_greedy_order(b.g, df), (std::vector<OpId>{0, 2, 1, 3}));
  EXPECT_EQ(reference_memory_greedy(b.g, df), (std::vector<OpId>{0, 2, 1, 3}));
}

TEST(MemoryGreedyOrder, MatchesReferenceOnRandomGraphs) {
  const uint64_t seed = std::random_device{}();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 60; ++round) {
    testing::RandomGraphOptions o;
    o.layers = 1 + static_cast<int>(rng() % 40);
    o.seed = rng();
    o.skip = 0.5;
    const Graph g = testing::random_graph(o);
    const Dataflow df(g);
    ASSERT_EQ(memory_greedy_order(g, df), reference_memory_greedy(g, df))
        << "round " << round << ", layers " << o.layers << ", graph seed " << o.seed;
  }
}

}  // namespace
}  // namespace sa
