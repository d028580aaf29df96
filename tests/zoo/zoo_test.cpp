// The registry: names, parameters and the errors for bad ones.

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "graph/graph_io.h"
#include "graph/stats.h"
#include "test_util.h"
#include "util/error.h"
#include "zoo/models.h"
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

// Note [Zoo size ceiling]: every bound holds on built graphs of every
// optimizer and precision, and is tight (the most generating variant meets
// it up to the per-unit slack), so the ceiling refuses no model that fits.
TEST(ZooSizeCeiling, BoundsHoldForEveryOptimizerAndPrecision) {
  struct Case {
    std::string model;
    int seq_len;
    ::sa::zoo::SizeBound bound;
  };
  const std::vector<Case> cases = {
      {"rnn-1-1k", 1, ::sa::zoo::lstm_size_bound(1, false, 1)},
      {"rnn-1-1k", 5, ::sa::zoo::lstm_size_bound(1, false, 5)},
      {"rnn-3-1k", 4, ::sa::zoo::lstm_size_bound(3, false, 4)},
      {"brnn-2-1k", 3, ::sa::zoo::lstm_size_bound(2, true, 3)},
      {"rnn-1-1k", 0, ::sa::zoo::lstm_size_bound(1, false, 0)},  // the default 220 steps
      {"mlp-1", 0, ::sa::zoo::mlp_size_bound(1)},
      {"mlp-7", 0, ::sa::zoo::mlp_size_bound(7)},
      {"nasnet-1", 0, ::sa::zoo::nasnet_size_bound(1)},
      {"nasnet-3-64", 0, ::sa::zoo::nasnet_size_bound(3)},
  };
  for (const Case& c : cases) {
    int64_t most_ops = 0, most_tensors = 0;
    for (const char* opt : {"sgd", "sgd-plain", "adam"})
      for (const char* precision : {"fp32", "bf16", "fp16"}) {
        ZooOptions o;
        o.model = c.model;
        o.batch = 1;
        o.optimizer = opt;
        o.seq_len = c.seq_len;
        o.precision = precision;
        const Graph g = build_zoo_model(o);
        SCOPED_TRACE(c.model + " " + opt + " " + precision);
        EXPECT_LE(g.num_ops(), c.bound.ops);
        EXPECT_LE(g.num_tensors(), c.bound.tensors);
        most_ops = std::max<int64_t>(most_ops, g.num_ops());
        most_tensors = std::max<int64_t>(most_tensors, g.num_tensors());
      }
    EXPECT_EQ(most_ops, c.bound.ops) << c.model;
    EXPECT_EQ(most_tensors, c.bound.tensors) << c.model;
  }
}

// Refused from the parameters, before building (these would take minutes
// and gigabytes: rnn-1000-1k at 100,000 steps is 600 million ops).
TEST(ZooSizeCeiling, RefusesBeforeBuilding) {
  EXPECT_EQ(error_of("rnn-1000-1k", 1, "sgd", 100000),
            "rnn-1000-1k at --seq-len 100000 would generate up to 600017027 ops and 700125035 "
            "tensors, over the zoo's ceiling of 200000 ops and 250000 tensors (the largest graph "
            "the graph reader is sure to accept; docs/zoo.md): use fewer layers or a shorter "
            "sequence");
  EXPECT_NE(error_of("brnn-1-1k", 1, "sgd", 16700).find("would generate up to"), std::string::npos);
  EXPECT_NE(error_of("mlp-100000").find("mlp-100000 would generate up to 1200021 ops"),
            std::string::npos);
  EXPECT_NE(error_of("nasnet-1000").find("nasnet-1000 would generate up to 763114 ops"),
            std::string::npos);
  // Just under: the bound for brnn-1-1k at 16,600 steps is 199,261 ops.
  EXPECT_EQ(::sa::zoo::lstm_size_bound(1, true, 16600).ops, 199261);
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
