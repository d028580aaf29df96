#include <algorithm>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "graph/graph_io.h"
#include "graph/stats.h"
#include "test_util.h"

namespace sa {
namespace {

using testing::GraphBuilder;

// input x (100), param w (10); op0: a(200) = f(x, w); op1: g(10) = f'(a) with
// workspace 7; op2: w -= g.
//   op0 live: 110 persistent + a 200           = 310
//   op1 live: 110 + a 200 + g 10 + ws 7        = 327
//   op2 live: 110 + g 10                       = 120
TEST(Stats, HandCheckedPeak) {
  GraphBuilder b;
  TensorId x = b.tensor(100, TensorKind::kInput);
  TensorId w = b.tensor(10, TensorKind::kParam);
  TensorId a = b.tensor(200, TensorKind::kActivation);
  TensorId g = b.tensor(10, TensorKind::kGradient);
  b.op({x, w}, {a});
  b.op({a}, {g});
  b.g.ops[1].workspace_bytes = 7;
  b.op({g}, {}, {w});
  EXPECT_EQ(persistent_bytes(b.g), 110);
  EXPECT_EQ(live_bytes_profile(b.g, std::vector<OpId>{0, 1, 2}),
            (std::vector<int64_t>{310, 327, 120}));
  EXPECT_EQ(peak_live_bytes(b.g), 327);
  EXPECT_EQ(distinct_sizes(b.g), 3);  // 100, 10, 200
}

// A tensor created and never read is live only at its creator.
TEST(Stats, UnreadTensorLiveAtCreatorOnly) {
  GraphBuilder b;
  TensorId a = b.tensor(50, TensorKind::kActivation);
  TensorId c = b.tensor(5, TensorKind::kActivation);
  b.op({}, {a});
  b.op({}, {c});
  EXPECT_EQ(live_bytes_profile(b.g, std::vector<OpId>{0, 1}), (std::vector<int64_t>{50, 5}));
  EXPECT_EQ(live_bytes_profile(b.g, std::vector<OpId>{1, 0}), (std::vector<int64_t>{5, 50}));
}

// live_intervals: positions in the order (any permutation), not op ids;
// persistent tensors too; a tensor no op touches has none. The plan tests'
// graph (test_util.h) and an unused buffer u:
//   op0 fwd: a = f(x, w)   op1 mid: b = g(a)   op2 bwd: gw = h(b, a)   op3 sgd: w -= gw
TEST(Stats, LiveIntervalsByHand) {
  Graph g = testing::fwd_mid_bwd_sgd_graph();
  g.tensors.push_back({8, TensorKind::kBuffer, "u", {}, {}});
  auto pairs = [&](std::vector<OpId> order) {
    std::vector<std::pair<int32_t, int32_t>> out;
    for (const LiveInterval& v : live_intervals(g, order))
      out.push_back({v.first, v.last});
    return out;
  };
  using P = std::vector<std::pair<int32_t, int32_t>>;
  //                         w       x       a       b       gw      u
  EXPECT_EQ(pairs({0, 1, 2, 3}), (P{{0, 3}, {0, 0}, {0, 2}, {1, 2}, {2, 3}, {-1, -1}}));
  // Reversed: op3 at position 0, op0 at 3.
  EXPECT_EQ(pairs({3, 2, 1, 0}), (P{{0, 3}, {3, 3}, {1, 3}, {1, 2}, {0, 1}, {-1, -1}}));
  EXPECT_TRUE(live_intervals(g, std::vector<OpId>{0, 1, 2, 3})[1].accessed());
  EXPECT_FALSE(live_intervals(g, std::vector<OpId>{0, 1, 2, 3})[5].accessed());
}

// Reference implementation straight from docs/graph-format.md, quadratic.
int64_t naive_peak(const Graph& g) {
  int64_t base = 0;
  for (const auto& t : g.tensors)
    if (!is_transient(t.kind)) base += t.bytes;
  std::vector<int> creator(g.num_tensors(), -1), last(g.num_tensors(), -1);
  for (int o = 0; o < g.num_ops(); ++o) {
    for (auto t : g.ops[o].outputs)
      creator[t] = o;
    for (auto lst : {&g.ops[o].inputs, &g.ops[o].outputs, &g.ops[o].updates})
      for (auto t : *lst)
        last[t] = o;
  }
  int64_t peak = 0;
  for (int i = 0; i < g.num_ops(); ++i) {
    int64_t live = base + g.ops[i].workspace_bytes;
    for (int t = 0; t < g.num_tensors(); ++t)
      if (is_transient(g.tensors[t].kind) && creator[t] <= i && last[t] >= i)
        live += g.tensors[t].bytes;
    peak = std::max(peak, live);
  }
  return peak;
}

// `swapadvisor stats --json` equals the quantities defined in the format spec,
// computed here independently, for every captured graph.
TEST(Stats, CliJsonMatchesSpecOnSharedGraphs) {
  for (const auto& entry : std::filesystem::directory_iterator(testing::data_path("graphs"))) {
    if (!entry.path().string().ends_with(".json.gz")) continue;  // the README
    const Graph g = read_graph(entry.path().string());
    auto r = testing::run_cli("stats --json " + entry.path().string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    int64_t persistent = 0;
    std::set<int64_t> sizes;
    for (const auto& t : g.tensors) {
      if (t.kind == TensorKind::kParam || t.kind == TensorKind::kBuffer ||
          t.kind == TensorKind::kOptimizerState || t.kind == TensorKind::kInput)
        persistent += t.bytes;
      sizes.insert(t.bytes);
    }
    double flops = 0;
    for (const auto& op : g.ops)
      flops += op.flops.value_or(0);
    EXPECT_EQ(j["ops"], g.num_ops());
    EXPECT_EQ(j["tensors"], g.num_tensors());
    EXPECT_EQ(j["persistent_bytes"], persistent);
    EXPECT_EQ(j["peak_live_bytes"], naive_peak(g)) << entry.path();
    EXPECT_EQ(j["distinct_sizes"], sizes.size());
    EXPECT_DOUBLE_EQ(j["flops"].get<double>(), flops);
    EXPECT_GT(j["ideal_us"].get<double>(), 0);
  }
}

}  // namespace
}  // namespace sa
