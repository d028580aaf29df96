#pragma once
// The zoo's model generators (one file each). zoo.cpp parses names and
// options and calls these; see docs/zoo.md for every model's structure.

#include <cstdint>
#include <string>

#include "graph/graph.h"
#include "zoo/builder.h"

namespace sa::zoo {

// What every generator gets besides its own parameters.
struct BuildContext {
  std::string graph_name;  // e.g. "wresnet152-10-b64"
  int batch = 0;
  Optimizer optimizer = Optimizer::kSgdMomentum;
  int seq_len = 0;  // 0 = the model's default
  Precision precision = Precision::kFp32;
};

// Note [Zoo size ceiling]
// -----------------------
// The families whose size grows with their parameters (rnn/brnn with the
// layers and the sequence, mlp-N, nasnet-R) give an upper bound on the ops
// and tensors they generate, from the parameters alone, so that zoo.cpp
// refuses a model over kMaxGeneratedOps/kMaxGeneratedTensors
// (util/limits.h) before building anything. Each bound is the family's
// count with the optimizer and precision that generate the most (FP16 adds
// casts and unscale ops per parameter, adam two state tensors), linear in
// the repeated unit; tests/zoo/zoo_test.cpp checks it against built graphs
// of every optimizer and precision. Int64: 1000 layers x 100,000 steps.
struct SizeBound {
  int64_t ops = 0;
  int64_t tensors = 0;
};
SizeBound lstm_size_bound(int layers, bool bidirectional, int seq_len);  // seq_len 0: default
SizeBound mlp_size_bound(int layers);
SizeBound nasnet_size_bound(int repeats);

// torchvision's ResNet (v1.5 bottleneck) with every channel width times width;
// depth 50, 101 or 152; image x image inputs, 1000 classes.
Graph build_resnet(const BuildContext& c, int depth, int width, int image);

// Inception-V4 (Szegedy et al. 2017, as in timm/Cadene) with every channel
// count times width; image x image inputs, 1000 classes.
Graph build_inception_v4(const BuildContext& c, int width, int image);

// NASNet-A (Zoph et al. 2018) large (F = 168): repeats normal cells per
// stack, 3 stacks; image x image inputs, 1000 classes.
Graph build_nasnet(const BuildContext& c, int repeats, int image);

// A stacked LSTM language model, unrolled over the sequence, hidden size
// hidden, layers layers (bidirectional: each layer runs both directions).
Graph build_lstm(const BuildContext& c, int layers, int64_t hidden, bool bidirectional);

struct BertConfig {
  int layers = 12;
  int64_t hidden = 768;
  int heads = 12;
  int64_t intermediate = 3072;
};
// HF transformers BertForPreTraining (BertModel with pooler + MLM and NSP heads).
Graph build_bert(const BuildContext& c, const BertConfig& cfg);

struct Gpt2Config {
  int layers = 12;
  int64_t hidden = 768;
  int heads = 12;
};
// HF transformers GPT2LMHeadModel (lm_head tied to wte).
Graph build_gpt2(const BuildContext& c, const Gpt2Config& cfg);

// A small multilayer perceptron for tests: layers hidden Linear(64, 64) +
// ReLU, then Linear(64, 10) and cross entropy, on [batch, 64] inputs.
Graph build_mlp(const BuildContext& c, int layers);

}  // namespace sa::zoo
