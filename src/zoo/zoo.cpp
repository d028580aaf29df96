// The zoo's registry: model names (fixed and parameterised), their parsing,
// and the dispatch to the generators in models.h.

#include "zoo/zoo.h"

#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "graph/validate.h"
#include "util/error.h"
#include "util/limits.h"
#include "zoo/models.h"

namespace sa {
namespace {

using zoo::BuildContext;

// Defaults where the paper is silent, chosen to reproduce Table 1 (docs/zoo.md).
constexpr int kWResNetImage = 224;
constexpr int kInceptionImage = 363;
constexpr int kNasNetImage = 331;

std::string lower(std::string s) {
  for (char& ch : s)
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

std::vector<std::string> split_dashes(const std::string& s) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == '-') {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

// A positive decimal integer no larger than max, or an error naming the
// pattern, what it needs and what it got.
int positive(const std::string& text, const std::string& pattern, const std::string& what,
             int max) {
  int v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || p != end || v <= 0)
    throw Error(pattern + " needs a positive " + what + ", got '" + text + "'");
  if (v > max)
    throw Error(pattern + ": " + what + " " + text + " is too large (at most " +
                std::to_string(max) + ")");
  return v;
}

// The parameters after a family's prefix: `required` of them, then an
// optional image size (CNN families) with its default and minimum.
struct CnnArgs {
  int value = 0;
  int image = 0;
};
CnnArgs cnn_args(const std::string& rest, const std::string& pattern, const std::string& what,
                 int max, int default_image, int min_image) {
  const std::vector<std::string> parts = split_dashes(rest);
  if (parts.size() > 2)
    throw Error("unknown model '" + pattern.substr(0, pattern.find('-')) + "-" + rest +
                "': expected " + pattern + " or " + pattern + "-IMAGE");
  CnnArgs a;
  a.value = positive(parts[0], pattern, what, max);
  a.image = default_image;
  if (parts.size() == 2) {
    a.image = positive(parts[1], pattern + "-IMAGE", "image size", 4096);
    if (a.image < min_image)
      throw Error(pattern + "-IMAGE: image size " + parts[1] + " is too small (at least " +
                  std::to_string(min_image) + ")");
  }
  return a;
}

// Refuses a model over the zoo's ceiling (Note [Zoo size ceiling]) before
// anything is built; `what` names it as the user gave it.
void check_size(const std::string& what, const zoo::SizeBound& b) {
  if (b.ops <= kMaxGeneratedOps && b.tensors <= kMaxGeneratedTensors) return;
  throw Error(fmt::format(
      "{} would generate up to {} ops and {} tensors, over the zoo's ceiling of {} ops and {} "
      "tensors (the largest graph the graph reader is sure to accept; docs/zoo.md): use "
      "fewer layers or a shorter sequence",
      what, b.ops, b.tensors, kMaxGeneratedOps, kMaxGeneratedTensors));
}

Graph build_lstm_family(const BuildContext& c, const std::string& rest, bool bidirectional) {
  const std::string pattern = bidirectional ? "brnn-L-XK" : "rnn-L-XK";
  const std::vector<std::string> parts = split_dashes(rest);
  if (parts.size() != 2)
    throw Error(pattern + " needs a layer count and a hidden size, e.g. " +
                (bidirectional ? "brnn-4-8k" : "rnn-8-8k") + ", got '" + rest + "'");
  const int layers = positive(parts[0], pattern, "layer count L", 1000);
  const std::string& x = parts[1];
  if (x.empty() || x.back() != 'k')
    throw Error(pattern + " needs a hidden size like '8k' (X*1024), got '" + x + "'");
  const int k = positive(x.substr(0, x.size() - 1), pattern, "hidden size X (in K)", 64);
  check_size(fmt::format("{}-{}{}", bidirectional ? "brnn" : "rnn", rest,
                         c.seq_len > 0 ? fmt::format(" at --seq-len {}", c.seq_len) : ""),
             zoo::lstm_size_bound(layers, bidirectional, c.seq_len));
  return zoo::build_lstm(c, layers, int64_t{k} * 1024, bidirectional);
}

bool is_sequence_model(const std::string& m) {
  return starts_with(m, "rnn-") || starts_with(m, "brnn-") || starts_with(m, "bert-") ||
         starts_with(m, "gpt2");
}

}  // namespace

std::vector<ZooModelInfo> zoo_models() {
  return {
      {"wresnet152-X", "ResNet-152, channel widths x X, 224x224 (Table 1: X=10)", 64},
      {"inception-X", "Inception-V4, channel counts x X, 363x363 (Table 1: X=4)", 64},
      {"nasnet-R", "NASNet-A large, R normal cells per stack, 331x331 (Table 1: R=25)", 64},
      {"rnn-L-XK", "L-layer LSTM LM, hidden X*1024, 220 steps (Table 1: rnn-8-8k)", 256},
      {"brnn-L-XK", "bidirectional rnn-L-XK, 220 steps (Table 1: brnn-4-8k)", 128},
      {"resnet50", "torchvision ResNet-50, 25,557,032 params, 224x224", 64},
      {"resnet101", "torchvision ResNet-101, 44,549,160 params, 224x224", 64},
      {"resnet152", "torchvision ResNet-152, 60,192,808 params, 224x224", 32},
      {"bert-base", "BERT-base pretraining (MLM+NSP), 110,106,428 params, seq 512", 32},
      {"bert-large", "BERT-large pretraining (MLM+NSP), 336,226,108 params, seq 512", 8},
      {"gpt2", "GPT-2 (124M) LM, 124,439,808 params, seq 1024", 8},
      {"gpt2-medium", "GPT-2 medium LM, 354,823,168 params, seq 1024", 4},
      {"gpt2-large", "GPT-2 large LM, 774,030,080 params, seq 1024", 2},
      {"gpt2-xl", "GPT-2 XL (1.5B) LM, 1,557,611,200 params, seq 1024", 1},
      {"mlp-N", "tiny test model: N x (Linear(64,64) + ReLU), Linear(64,10)", 4},
  };
}

Graph build_zoo_model(const ZooOptions& o) {
  const std::string m = lower(o.model);
  if (m.empty()) throw Error("no model name given (see `swapadvisor zoo --list`)");
  if (o.batch <= 0) throw Error("batch size must be positive, got " + std::to_string(o.batch));
  BuildContext c;
  c.batch = o.batch;
  if (o.optimizer == "sgd")
    c.optimizer = zoo::Optimizer::kSgdMomentum;
  else if (o.optimizer == "adam")
    c.optimizer = zoo::Optimizer::kAdam;
  else if (o.optimizer == "sgd-plain")
    c.optimizer = zoo::Optimizer::kSgd;
  else
    throw Error("unknown optimizer '" + o.optimizer + "' (use sgd, sgd-plain or adam)");
  if (o.seq_len < 0)
    throw Error("sequence length must be positive, got " + std::to_string(o.seq_len));
  if (o.seq_len > 100000)
    throw Error("sequence length " + std::to_string(o.seq_len) + " is too large (at most 100000)");
  if (o.seq_len > 0 && !is_sequence_model(m))
    throw Error("--seq-len applies to sequence models only (rnn, brnn, bert, gpt2), not '" +
                o.model + "'");
  c.seq_len = o.seq_len;
  const std::string precision = lower(o.precision);
  if (precision == "fp32")
    c.precision = zoo::Precision::kFp32;
  else if (precision == "bf16")
    c.precision = zoo::Precision::kBf16;
  else if (precision == "fp16")
    c.precision = zoo::Precision::kFp16;
  else
    throw Error("unknown precision '" + o.precision + "' (use fp32, bf16 or fp16)");
  c.graph_name = m + "-b" + std::to_string(o.batch) +
                 (o.seq_len > 0 ? "-s" + std::to_string(o.seq_len) : "") +
                 (c.optimizer == zoo::Optimizer::kAdam  ? "-adam"
                  : c.optimizer == zoo::Optimizer::kSgd ? "-sgdplain"
                                                        : "") +
                 (precision == "fp32" ? "" : "-" + precision);

  Graph g;
  if (m == "resnet50" || m == "resnet101" || m == "resnet152") {
    g = zoo::build_resnet(c, std::stoi(m.substr(6)), 1, 224);
  } else if (starts_with(m, "wresnet")) {
    const std::string rest = m.substr(7);
    const size_t dash = rest.find('-');
    const std::string depth = rest.substr(0, dash);
    if (depth != "50" && depth != "101" && depth != "152")
      throw Error("unknown model '" + o.model +
                  "': WResNet depth must be 50, 101 or 152 (e.g. wresnet152-10)");
    const std::string pattern = "wresnet" + depth + "-X";
    if (dash == std::string::npos) throw Error(pattern + " needs a positive width, got ''");
    const CnnArgs a = cnn_args(rest.substr(dash + 1), pattern, "width", 64, kWResNetImage, 32);
    g = zoo::build_resnet(c, std::stoi(depth), a.value, a.image);
  } else if (starts_with(m, "inception-")) {
    const CnnArgs a = cnn_args(m.substr(10), "inception-X", "width", 64, kInceptionImage, 75);
    g = zoo::build_inception_v4(c, a.value, a.image);
  } else if (starts_with(m, "nasnet-")) {
    const CnnArgs a = cnn_args(m.substr(7), "nasnet-R", "cell count R", 1000, kNasNetImage, 32);
    check_size(m, zoo::nasnet_size_bound(a.value));
    g = zoo::build_nasnet(c, a.value, a.image);
  } else if (starts_with(m, "rnn-")) {
    g = build_lstm_family(c, m.substr(4), false);
  } else if (starts_with(m, "brnn-")) {
    g = build_lstm_family(c, m.substr(5), true);
  } else if (m == "bert-base") {
    g = zoo::build_bert(c, {12, 768, 12, 3072});
  } else if (m == "bert-large") {
    g = zoo::build_bert(c, {24, 1024, 16, 4096});
  } else if (m == "gpt2") {
    g = zoo::build_gpt2(c, {12, 768, 12});
  } else if (m == "gpt2-medium") {
    g = zoo::build_gpt2(c, {24, 1024, 16});
  } else if (m == "gpt2-large") {
    g = zoo::build_gpt2(c, {36, 1280, 20});
  } else if (m == "gpt2-xl") {
    g = zoo::build_gpt2(c, {48, 1600, 25});
  } else if (starts_with(m, "mlp-")) {
    const int layers = positive(m.substr(4), "mlp-N", "layer count", 100000);
    check_size(m, zoo::mlp_size_bound(layers));
    g = zoo::build_mlp(c, layers);
  } else {
    throw Error("unknown model '" + o.model + "' (see `swapadvisor zoo --list`)");
  }
  // The bounds of Note [Zoo size ceiling] hold; the other families are of
  // fixed size, far below the ceiling.
  SA_CHECK(g.num_ops() <= kMaxGeneratedOps && g.num_tensors() <= kMaxGeneratedTensors,
           "zoo model {} has {} ops and {} tensors, over the ceiling", g.name, g.num_ops(),
           g.num_tensors());
  validate_graph(g, g.name);  // a bug in a generator must not leave the zoo
  return g;
}

}  // namespace sa
