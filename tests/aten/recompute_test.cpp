// AtenKernels::recompute (Note [ATen recompute]) driven op by op on the
// committed capture of tests/capture/entries/random_ops.py, whose ops draw
// random numbers three ways (an in-place bernoulli_, native_dropout,
// randn_like): a random op run again draws what it drew first, the ops
// after it draw what they would without it, and an op that draws without
// the exec file's mark is refused. And on tests/capture/entries/tiny_cnn.py,
// batch norm runs again without its running statistics (Note [Recompute
// without updates]).

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "graph/graph_io.h"
#include "runtime/aten/aten_kernels.h"
#include "runtime/aten/aten_program.h"
#include "runtime/aten/values_file.h"
#include "test_util.h"
#include "util/error.h"

namespace sa::runtime {
namespace {

std::string capture(const std::string& name, const std::string& what) {
  return sa::testing::data_path("capture/" + name + "." + what);
}

struct Free {
  void operator()(std::byte* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<std::byte, Free>;

Buffer buffer(int64_t bytes) {
  auto* p = static_cast<std::byte*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
  std::memset(p, 0, (bytes + 63) / 64 * 64);
  return Buffer(p);
}

// The capture run op by op, every tensor in a buffer of its own (as
// run_program_order keeps them). The kernels seed the process's generator
// when they are made: one Stepper at a time.
class Stepper {
 public:
  explicit Stepper(const std::string& name = "random_ops")
      : g_(read_graph(capture(name, "graph.json.gz"))),
        p_(read_aten_program(capture(name, "exec.json.gz"), g_)) {
    const ValuesFile init = read_values_file(capture(name, "values.bin"));
    for (const Tensor& t : g_.tensors)
      bufs_.push_back(buffer(t.bytes));
    for (const TensorValue& v : init.tensors)
      std::memcpy(bufs_[v.tensor].get(), v.data.data(), v.data.size());
  }

  void make_kernels() { k_ = make_aten_kernels(g_, p_, {}); }
  AtenKernels& kernels() { return *k_; }
  const Graph& graph() const { return g_; }
  AtenProgram& program() { return p_; }  // changes count until make_kernels()

  OpId find(const std::string& qualname) const {
    for (OpId o = 0; o < g_.num_ops(); ++o)
      if (p_.ops[o].qualname == qualname) return o;
    ADD_FAILURE() << "no " << qualname;
    return 0;
  }

  void run(OpId o) { k_->run(o, ptrs(o, nullptr), nullptr); }

  // Runs o again with its outputs in fresh buffers; returns whether they
  // hold what its first run wrote.
  bool recompute_gives_the_same(OpId o) {
    std::vector<Buffer> fresh;
    std::vector<std::byte*> out;
    for (TensorId t : g_.ops[o].outputs) {
      fresh.push_back(buffer(g_.tensors[t].bytes));
      out.push_back(fresh.back().get());
    }
    k_->recompute(o, ptrs(o, &out), nullptr);
    bool same = true;
    for (size_t j = 0; j < out.size(); ++j) {
      const TensorId t = g_.ops[o].outputs[j];
      same &= std::memcmp(out[j], bufs_[t].get(), p_.storage_bytes[t]) == 0;
    }
    return same;
  }

  const std::byte* data(TensorId t) const { return bufs_[t].get(); }

 private:
  // The op's pointers in for_each_step_access order; outputs from *outputs
  // when given (a recompute).
  std::vector<std::byte*> ptrs(OpId o, const std::vector<std::byte*>* outputs) {
    std::vector<std::byte*> v;
    size_t j = 0;
    for_each_step_access(g_.ops[o], outputs != nullptr, [&](TensorId t, Access a) {
      v.push_back(a == Access::kCreate && outputs ? (*outputs)[j++] : bufs_[t].get());
    });
    return v;
  }

  Graph g_;
  AtenProgram p_;
  std::vector<Buffer> bufs_;
  std::unique_ptr<AtenKernels> k_;
};

TEST(AtenRecompute, ARandomOpRunAgainDrawsWhatItDrewFirst) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  std::vector<double> plain_losses;  // two iterations without recomputes
  {
    Stepper plain;
    plain.make_kernels();
    for (int it = 0; it < 2; ++it)
      for (OpId o = 0; o < plain.graph().num_ops(); ++o)
        plain.run(o);
    plain_losses = plain.kernels().losses();
  }
  Stepper again;
  again.make_kernels();
  const OpId dropout = again.find("aten::native_dropout.default");
  const OpId noise = again.find("aten::randn_like.default");
  ASSERT_TRUE(again.program().ops[dropout].random);
  ASSERT_GT(noise, dropout);
  for (OpId o = 0; o < again.graph().num_ops(); ++o) {
    again.run(o);
    // Right after its first run, and once more after randn_like drew.
    if (o == dropout || o == noise) {
      EXPECT_TRUE(again.recompute_gives_the_same(dropout)) << "after op " << o;
    }
  }
  // The loss op too: no second loss.
  EXPECT_TRUE(again.recompute_gives_the_same(again.program().loss_after_op));
  const AtenStats s = again.kernels().stats();
  EXPECT_EQ(s.ops_recomputed, 3);
  EXPECT_EQ(s.random_replays, 2);
  // randn_like and the next iteration drew what they would have without the
  // recomputes: the same losses, bit for bit.
  for (OpId o = 0; o < again.graph().num_ops(); ++o)
    again.run(o);
  ASSERT_EQ(plain_losses.size(), 2u);
  EXPECT_EQ(again.kernels().losses(), plain_losses);
}

TEST(AtenRecompute, AnUnmarkedRandomOpIsRefused) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  Stepper st;
  const OpId dropout = st.find("aten::native_dropout.default");
  st.program().ops[dropout].random = false;
  st.make_kernels();
  for (OpId o = 0; o <= dropout; ++o)
    st.run(o);
  try {
    st.recompute_gives_the_same(dropout);
    FAIL() << "an unmarked random op was recomputed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not mark it random"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("aten::native_dropout"), std::string::npos) << e.what();
  }
}

TEST(AtenRecompute, BeforeItsFirstRunIsAnError) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  Stepper st;
  st.make_kernels();
  const OpId dropout = st.find("aten::native_dropout.default");
  for (OpId o = 0; o < dropout; ++o)
    st.run(o);
  EXPECT_THROW(st.recompute_gives_the_same(dropout), Error);
}

// Note [Recompute without updates]: the capture marks the training batch
// norm; run again on its input, weight and bias alone, it makes the same
// output, mean and inverse deviation, and its running statistics keep what
// its one real run folded into them (a second fold would move them).
TEST(AtenRecompute, BatchNormRunsAgainWithoutItsRunningStatistics) {
  if (!aten_available()) GTEST_SKIP() << "built without libtorch";
  Stepper st("tiny_cnn");
  st.make_kernels();
  const OpId bn = st.find("aten::native_batch_norm.default");
  const Op& op = st.graph().ops[bn];
  ASSERT_TRUE(op.recompute_skips_updates);
  ASSERT_EQ(op.updates.size(), 2u);  // running_mean, running_var
  for (OpId o = 0; o <= bn; ++o)
    st.run(o);
  std::vector<std::vector<std::byte>> stats;
  for (TensorId t : op.updates) {
    const int64_t bytes = st.program().storage_bytes[t];
    stats.emplace_back(st.data(t), st.data(t) + bytes);
  }
  EXPECT_TRUE(st.recompute_gives_the_same(bn));
  EXPECT_TRUE(st.recompute_gives_the_same(bn));
  for (size_t k = 0; k < op.updates.size(); ++k)
    EXPECT_EQ(std::memcmp(stats[k].data(), st.data(op.updates[k]), stats[k].size()), 0)
        << "running statistic " << k << " changed";
  // Run once more for real, the statistics move: the check above can fail.
  st.run(bn);
  EXPECT_NE(std::memcmp(stats[1].data(), st.data(op.updates[1]), stats[1].size()), 0);
  EXPECT_EQ(st.kernels().stats().ops_recomputed, 2);
}

}  // namespace
}  // namespace sa::runtime
