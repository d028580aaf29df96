// The ATen kernels' all-reduce (Note [ATen data parallelism] in
// runtime/aten/aten_kernels.h) on the committed capture of tiny_mlp: the exec file
// of a data-parallel graph (with_collectives) and, with libtorch, the
// all-reduce op handing each gradient to the exchange and keeping what comes
// back. The exchange between real ranks is bench/torch-equivalence --ranks 2
// (CTest capture.torch_equivalence_ranks2).

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "cost/device.h"
#include "graph/graph_io.h"
#include "plan/data_parallel.h"
#include "runtime/aten/aten_kernels.h"
#include "runtime/aten/aten_program.h"
#include "runtime/aten/values_file.h"
#include "test_util.h"

namespace sa::runtime {
namespace {

using sa::testing::data_path;
using sa::testing::error_of;

struct Capture {
  Graph g = read_graph(data_path("capture/tiny_mlp.graph.json.gz"));
  AtenProgram p = read_aten_program(data_path("capture/tiny_mlp.exec.json.gz"), g);
};

Graph dp_graph(const Graph& g, bool shard) {
  DataParallel dp;
  dp.ranks = 2;
  dp.shard_optimizer = shard;
  dp.bucket_bytes = 256;  // a few buckets even for tiny_mlp's gradients
  return data_parallel_graph(g, dp, load_device("a100-40gb"));
}

TEST(AtenCollectives, ProgramKeepsTheCapturedOpsAndViewsEachGradientWhole) {
  const Capture c;
  const Graph g = dp_graph(c.g, false);
  const AtenProgram p = with_collectives(c.p, g);
  ASSERT_EQ(p.ops.size(), g.ops.size());
  size_t next = 0, reduces = 0;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    if (!is_collective(g.ops[o])) {
      EXPECT_EQ(p.ops[o].qualname, c.p.ops[next].qualname) << "op " << o;
      if (static_cast<OpId>(next) == c.p.loss_after_op) {
        EXPECT_EQ(p.loss_after_op, o);
      }
      ++next;
      continue;
    }
    ++reduces;
    EXPECT_EQ(p.ops[o].qualname, "sa::all_reduce");
    ASSERT_EQ(p.ops[o].args.size(), g.ops[o].updates.size());
    for (size_t i = 0; i < g.ops[o].updates.size(); ++i) {
      const TensorId t = g.ops[o].updates[i];
      const auto& v = p.ops[o].args[i];
      EXPECT_EQ(v["tensor"], t);
      EXPECT_EQ(v["dtype"], "float32");
      EXPECT_EQ(v["sizes"][0].get<int64_t>() * 4, c.p.storage_bytes[t]);
    }
  }
  EXPECT_EQ(next, c.p.ops.size());
  EXPECT_GE(reduces, 2u);
}

TEST(AtenCollectives, ShardedOptimizerPlansAreRefused) {
  const Capture c;
  const std::string e = error_of([&] { with_collectives(c.p, dp_graph(c.g, true)); });
  EXPECT_NE(e.find("sa::reduce_scatter"), std::string::npos) << e;
  EXPECT_NE(e.find("--shard-optimizer"), std::string::npos) << e;
}

TEST(AtenCollectives, GraphOfAnotherCaptureIsRefused) {
  const Capture c;
  Graph g = dp_graph(c.g, false);
  g.ops.pop_back();  // one captured op fewer
  const std::string e = error_of([&] { with_collectives(c.p, g); });
  EXPECT_NE(e.find("besides its collectives"), std::string::npos) << e;
}

struct Free {
  void operator()(std::byte* p) const { std::free(p); }
};

// Every op in order, each tensor in its own buffer; the exchange sets every
// gradient element to 0.25 and counts what it was given.
TEST(AtenCollectives, AllReduceHandsEachGradientToTheExchange) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  const Capture c;
  const Graph g = dp_graph(c.g, false);
  const AtenProgram p = with_collectives(c.p, g);
  std::vector<std::unique_ptr<std::byte, Free>> bufs;
  for (const Tensor& t : g.tensors) {
    const size_t n = (static_cast<size_t>(t.bytes) + 63) / 64 * 64;
    bufs.emplace_back(static_cast<std::byte*>(std::aligned_alloc(64, n)));
    std::memset(bufs.back().get(), 0, n);
  }
  for (const TensorValue& v : read_values_file(data_path("capture/tiny_mlp.values.bin")).tensors)
    std::memcpy(bufs[v.tensor].get(), v.data.data(), v.data.size());
  AtenOptions o;
  int64_t exchanged = 0;
  o.all_reduce_mean = [&](void* data, int64_t n, int elem_bytes) {
    ASSERT_EQ(elem_bytes, 4);
    for (int64_t i = 0; i < n; ++i)
      static_cast<float*>(data)[i] = 0.25f;
    exchanged += n;
  };
  const auto k = make_aten_kernels(g, p, o);
  int64_t expected = 0;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    std::vector<std::byte*> ptrs;
    for_each_access(g.ops[o], [&](TensorId t, Access) { ptrs.push_back(bufs[t].get()); });
    k->run(o, ptrs, nullptr);
    if (!is_collective(g.ops[o])) continue;
    for (TensorId t : g.ops[o].updates) {
      const auto* f = reinterpret_cast<const float*>(bufs[t].get());
      const int64_t n = c.p.storage_bytes[t] / 4;
      expected += n;
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(f[i], 0.25f) << "tensor " << t << " element " << i;
    }
  }
  EXPECT_EQ(exchanged, expected);
  EXPECT_GT(expected, 0);
  EXPECT_EQ(k->stats().all_reduces, std::count_if(g.ops.begin(), g.ops.end(), is_collective));
  EXPECT_EQ(k->losses().size(), 1u);
}

}  // namespace
}  // namespace sa::runtime
