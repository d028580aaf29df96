// Exact parameter counts of the common models, as their reference
// implementations publish them.

#include <gtest/gtest.h>

#include "zoo_test_util.h"

namespace sa {
namespace {

using testing::param_count;
using testing::zoo;

TEST(ZooParams, ResNetsMatchTorchvision) {
  EXPECT_EQ(param_count(zoo("resnet50", 1)), 25'557'032);
  EXPECT_EQ(param_count(zoo("resnet101", 1)), 44'549'160);
  EXPECT_EQ(param_count(zoo("resnet152", 1)), 60'192'808);
  // WResNet with width 1 is ResNet-152.
  EXPECT_EQ(param_count(zoo("wresnet152-1", 1)), 60'192'808);
}

TEST(ZooParams, InceptionV4MatchesTimm) {
  EXPECT_EQ(param_count(zoo("inception-1", 1)), 42'679'816);
}

// BertForPreTraining = BertModel with pooler (the published bert-*-uncased
// counts, the params named "bert.*") + the heads "cls.*": MLM transform
// (dense + LayerNorm), MLM output bias (the decoder weight is the tied word
// embedding) and the NSP classifier.
TEST(ZooParams, BertMatchesHuggingFace) {
  const Graph base = zoo("bert-base", 1, "sgd", 16);
  EXPECT_EQ(param_count(base, "bert."), 109'482'240);
  EXPECT_EQ(param_count(base, "cls."), (768 * 768 + 768) + 2 * 768 + 30522 + (768 * 2 + 2));
  EXPECT_EQ(param_count(base), 110'106'428);
  const Graph large = zoo("bert-large", 1, "sgd", 16);
  EXPECT_EQ(param_count(large, "bert."), 335'141'888);
  EXPECT_EQ(param_count(large), 336'226'108);
}

TEST(ZooParams, Gpt2MatchesHuggingFace) {
  const Graph g = zoo("gpt2", 1, "sgd", 16);
  EXPECT_EQ(param_count(g), 124'439'808);
  for (const Tensor& t : g.tensors)
    EXPECT_NE(t.name, "lm_head.weight");  // tied to wte
  EXPECT_EQ(param_count(zoo("gpt2-medium", 1, "sgd", 16)), 354'823'168);
  EXPECT_EQ(param_count(zoo("gpt2-large", 1, "sgd", 16)), 774'030'080);
  EXPECT_EQ(param_count(zoo("gpt2-xl", 1, "sgd", 16)), 1'557'611'200);
}

// nn.LSTM's count: per layer and direction 4H x (in + H) weights and two 4H
// biases; embedding and decoder V x H (+ V).
TEST(ZooParams, LstmCountsByFormula) {
  const int64_t h = 1024, v = 10000;
  const int64_t layer = 4 * h * (h + h) + 8 * h;
  EXPECT_EQ(param_count(zoo("rnn-2-1k", 1, "sgd", 4)), v * h + 2 * layer + v * h + v);
  const int64_t upper = 4 * h * (2 * h + h) + 8 * h;  // input: both directions
  EXPECT_EQ(param_count(zoo("brnn-2-1k", 1, "sgd", 4)),
            v * h + 2 * layer + 2 * upper + v * 2 * h + v);
}

TEST(ZooParams, ParamsNamedLikeStateDictKeys) {
  const Graph g = zoo("resnet50", 1);
  std::vector<std::string> names;
  for (const Tensor& t : g.tensors)
    if (t.kind == TensorKind::kParam) names.push_back(t.name);
  ASSERT_EQ(names.size(), 161u);
  EXPECT_EQ(names.front(), "conv1.weight");
  EXPECT_EQ(names[3], "layer1.0.conv1.weight");
  EXPECT_EQ(names.back(), "fc.bias");
  EXPECT_NE(std::find(names.begin(), names.end(), "layer4.0.downsample.1.weight"), names.end());
}

}  // namespace
}  // namespace sa
