// Every zoo model, with either optimizer, is a valid format v1 training
// graph with the structure the zoo promises (docs/zoo.md).

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "graph/validate.h"
#include "zoo_test_util.h"

namespace sa {
namespace {

struct Case {
  std::string model;
  int batch;
  int seq_len;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.model << " batch " << c.batch << " seq " << c.seq_len;
}

// Small instances of every model (the real sizes do not change the rules).
const std::vector<Case> kCases = {
    {"wresnet152-2", 2, 0}, {"wresnet50-1-64", 2, 0}, {"inception-1-75", 2, 0},
    {"inception-2", 1, 0},  {"nasnet-1", 2, 0},       {"nasnet-2-64", 1, 0},
    {"rnn-2-1k", 4, 6},     {"brnn-2-1k", 4, 6},      {"rnn-1-1k", 2, 1},
    {"resnet50", 2, 0},     {"resnet101", 1, 0},      {"resnet152", 1, 0},
    {"bert-base", 2, 16},   {"bert-large", 1, 8},     {"gpt2", 2, 16},
    {"gpt2-medium", 1, 8},  {"gpt2-large", 1, 8},     {"gpt2-xl", 1, 4},
    {"mlp-1", 3, 0},        {"mlp-5", 1, 0},
};

class ZooGraph : public ::testing::TestWithParam<std::tuple<Case, std::string>> {};

TEST_P(ZooGraph, FollowsTheRules) {
  const auto& [c, optimizer] = GetParam();
  const Graph g = testing::zoo(c.model, c.batch, optimizer, c.seq_len);
  ASSERT_NO_THROW(validate_graph(g, g.name));

  // Phases run forward, then backward, then update; every op is costed.
  Phase last = Phase::kForward;
  for (const Op& op : g.ops) {
    ASSERT_NE(op.phase, Phase::kUnknown) << op.type;
    EXPECT_GE(static_cast<int>(op.phase), static_cast<int>(last)) << op.type;
    last = op.phase;
    ASSERT_TRUE(op.flops.has_value()) << op.type;
    ASSERT_TRUE(op.bytes_accessed.has_value()) << op.type;
    EXPECT_GT(*op.bytes_accessed, 0) << op.type;
    EXPECT_FALSE(op.outputs.empty() && op.updates.empty()) << op.type << " has no effect";
  }
  EXPECT_EQ(last, Phase::kUpdate);

  // Every tensor has a shape and dtype agreeing with its bytes, and every
  // transient is accessed again after its creator (nothing computed in vain).
  std::vector<int> accesses(g.num_tensors(), 0);
  for (const Op& op : g.ops)
    for_each_access(op, [&](TensorId t, Access) { ++accesses[t]; });
  for (int t = 0; t < g.num_tensors(); ++t) {
    const Tensor& tensor = g.tensors[t];
    ASSERT_FALSE(tensor.dtype.empty());
    int64_t n = 1;
    for (int64_t d : tensor.shape)
      n *= d;
    const int64_t width = tensor.dtype == "float32" ? 4 : tensor.dtype == "int64" ? 8 : 1;
    EXPECT_EQ(n * width, tensor.bytes) << "tensor " << t << " " << tensor.name;
    if (is_transient(tensor.kind)) {
      EXPECT_GE(accesses[t], 2) << "tensor " << t << " never read";
    }
  }

  // One update op per param, updating the param and its optimizer state
  // (momentum; Adam's two moments), each the param's size; nothing else is
  // updated in the update phase, and params change nowhere else.
  const size_t states = optimizer == "adam" ? 2 : optimizer == "sgd-plain" ? 0 : 1;
  std::map<TensorId, int> param_updates;
  int num_params = 0, num_states = 0;
  for (int t = 0; t < g.num_tensors(); ++t) {
    num_params += g.tensors[t].kind == TensorKind::kParam;
    num_states += g.tensors[t].kind == TensorKind::kOptimizerState;
  }
  EXPECT_EQ(static_cast<size_t>(num_states), states * num_params);
  for (const Op& op : g.ops) {
    for (TensorId t : op.updates) {
      if (g.tensors[t].kind == TensorKind::kParam) {
        ASSERT_EQ(op.phase, Phase::kUpdate) << op.type;
        ++param_updates[t];
        ASSERT_EQ(op.updates.size(), 1 + states);
        ASSERT_EQ(op.inputs.size(), 1u);
        EXPECT_EQ(g.tensors[op.inputs[0]].kind, TensorKind::kGradient);
        EXPECT_EQ(g.tensors[op.inputs[0]].bytes, g.tensors[t].bytes);
        for (size_t i = 1; i < op.updates.size(); ++i) {
          EXPECT_EQ(g.tensors[op.updates[i]].kind, TensorKind::kOptimizerState);
          EXPECT_EQ(g.tensors[op.updates[i]].bytes, g.tensors[t].bytes);
        }
      }
    }
  }
  EXPECT_EQ(static_cast<int>(param_updates.size()), num_params);
  for (const auto& [t, n] : param_updates)
    EXPECT_EQ(n, 1) << g.tensors[t].name;
}

std::string case_name(const ::testing::TestParamInfo<ZooGraph::ParamType>& info) {
  std::string s = std::get<0>(info.param).model + "_" + std::get<1>(info.param);
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(AllModels, ZooGraph,
                         ::testing::Combine(::testing::ValuesIn(kCases),
                                            ::testing::Values("sgd", "adam", "sgd-plain")),
                         case_name);

}  // namespace
}  // namespace sa
