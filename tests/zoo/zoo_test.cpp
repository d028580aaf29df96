// The registry: names, parameters and the errors for bad ones.

#include <algorithm>
#include <cstdio>

#include <gtest/gtest.h>

#include "graph/graph_io.h"
#include "graph/stats.h"
#include "test_util.h"
#include "util/error.h"
#include "zoo_test_util.h"

namespace sa {
namespace {

using testing::zoo;

std::string error_of(const std::string& model, int batch = 1, const std::string& opt = "sgd",
                     int seq_len = 0) {
  try {
    zoo(model, batch, opt, seq_len);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Zoo, ListsEveryFamilyWithADefaultBatch) {
  const auto models = zoo_models();
  for (const char* name :
       {"wresnet152-X", "inception-X", "nasnet-R", "rnn-L-XK", "brnn-L-XK", "resnet50", "resnet152",
        "bert-base", "bert-large", "gpt2", "gpt2-xl", "mlp-N"}) {
    auto it = std::find_if(models.begin(), models.end(),
                           [&](const ZooModelInfo& m) { return m.name == name; });
    ASSERT_NE(it, models.end()) << name;
    EXPECT_GT(it->default_batch, 0) << name;
    EXPECT_FALSE(it->description.empty()) << name;
  }
}

TEST(Zoo, NamesAreCaseInsensitiveAndGraphsNamed) {
  EXPECT_EQ(zoo("MLP-2", 3).name, "mlp-2-b3");
  EXPECT_EQ(zoo("rnn-1-1K", 2, "adam", 5).name, "rnn-1-1k-b2-s5-adam");
}

TEST(Zoo, ClearErrorsForBadNamesAndOptions) {
  EXPECT_EQ(error_of("foo"), "unknown model 'foo' (see `swapadvisor zoo --list`)");
  EXPECT_EQ(error_of("no-such-model"),
            "unknown model 'no-such-model' (see `swapadvisor zoo --list`)");
  EXPECT_EQ(error_of("wresnet152-abc"), "wresnet152-X needs a positive width, got 'abc'");
  EXPECT_EQ(error_of("wresnet152-0"), "wresnet152-X needs a positive width, got '0'");
  EXPECT_EQ(error_of("wresnet152-999"), "wresnet152-X: width 999 is too large (at most 64)");
  EXPECT_EQ(error_of("wresnet34-2"),
            "unknown model 'wresnet34-2': WResNet depth must be 50, 101 or 152 (e.g. "
            "wresnet152-10)");
  EXPECT_EQ(error_of("inception-x"), "inception-X needs a positive width, got 'x'");
  EXPECT_EQ(error_of("inception-4-50"),
            "inception-X-IMAGE: image size 50 is too small (at least 75)");
  EXPECT_EQ(error_of("nasnet--3"), "nasnet-R needs a positive cell count R, got ''");
  EXPECT_EQ(error_of("rnn-8"),
            "rnn-L-XK needs a layer count and a hidden size, e.g. rnn-8-8k, got '8'");
  EXPECT_EQ(error_of("rnn-8-8"), "rnn-L-XK needs a hidden size like '8k' (X*1024), got '8'");
  EXPECT_EQ(error_of("brnn-0-8k"), "brnn-L-XK needs a positive layer count L, got '0'");
  EXPECT_EQ(error_of("mlp-1", 0), "batch size must be positive, got 0");
  EXPECT_EQ(error_of("mlp-1", -5), "batch size must be positive, got -5");
  EXPECT_EQ(error_of("mlp-1", 1, "rmsprop"),
            "unknown optimizer 'rmsprop' (use sgd, sgd-plain or adam)");
  EXPECT_EQ(error_of("resnet50", 1, "sgd", 128),
            "--seq-len applies to sequence models only (rnn, brnn, bert, gpt2), not 'resnet50'");
  EXPECT_EQ(error_of("bert-base", 1, "sgd", 513),
            "BERT supports sequences of at most 512 tokens, got 513");
  EXPECT_EQ(error_of("gpt2", 1, "sgd", 2048),
            "GPT-2 supports sequences of at most 1024 tokens, got 2048");
  EXPECT_EQ(error_of(""), "no model name given (see `swapadvisor zoo --list`)");
}

TEST(Zoo, SeqLenChangesSequenceModels) {
  const Graph short_seq = zoo("rnn-1-1k", 2, "sgd", 3);
  const Graph long_seq = zoo("rnn-1-1k", 2, "sgd", 6);
  // Six ops per step: two addmm, the cell and their backwards.
  EXPECT_EQ(long_seq.num_ops() - short_seq.num_ops(), 3 * 6);
  EXPECT_GT(peak_live_bytes(zoo("gpt2", 1, "sgd", 256)),
            peak_live_bytes(zoo("gpt2", 1, "sgd", 128)));
}

TEST(Zoo, AdamAddsASecondMoment) {
  const Graph sgd = zoo("resnet50", 2), adam = zoo("resnet50", 2, "adam");
  int64_t params = 0;
  for (const Tensor& t : sgd.tensors)
    if (t.kind == TensorKind::kParam) params += t.bytes;
  EXPECT_EQ(persistent_bytes(adam) - persistent_bytes(sgd), params);
  EXPECT_EQ(adam.num_ops(), sgd.num_ops());
}

TEST(Zoo, CliWritesAGraphThatReadsBack) {
  const std::string path = ::testing::TempDir() + "zoo_mlp.json";
  auto r = testing::run_cli("zoo --model mlp-2 --batch 3 -o " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Graph back = read_graph(path);
  const Graph direct = zoo("mlp-2", 3);
  EXPECT_EQ(back.num_ops(), direct.num_ops());
  EXPECT_EQ(back.num_tensors(), direct.num_tensors());
  EXPECT_EQ(peak_live_bytes(back), peak_live_bytes(direct));
  std::remove(path.c_str());

  r = testing::run_cli("zoo --list");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wresnet152-X"), std::string::npos);
  EXPECT_NE(r.out.find("gpt2-xl"), std::string::npos);

  r = testing::run_cli("zoo --model wresnet152-abc --batch 1 -o " + path);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("wresnet152-X needs a positive width, got 'abc'"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace sa
