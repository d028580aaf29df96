// BERT (HF transformers BertForPreTraining) and GPT-2 (GPT2LMHeadModel) in
// eager PyTorch's granularity: one op per linear, matmul, softmax, dropout,
// layer norm, GELU and residual add; dropout everywhere the models have it
// (p = 0.1 in training), each keeping a one-byte mask for its backward.
// Simplifications: no padding mask (every token attends), GPT-2's causal
// mask is folded into its softmax, GELU is one op, and GPT-2's labels come
// pre-shifted (no copy of the shifted logits).

#include <string>

#include "util/error.h"
#include "zoo/layers.h"
#include "zoo/models.h"

namespace sa::zoo {
namespace {

// x [B, S, H] + pos [S, H], broadcast over the batch.
Var add_positions(Builder& b, const Var& x, const Var& pos) {
  Var y = b.fresh(x.shape);
  b.op("aten::add").in(x).in(pos).out(y).flops(d(y.numel())).emit();
  b.on_backward({y}, [&b, x, pos, y] {
    b.pass_grad(x, b.grad(y));
    b.op("aten::sum").grad_in(y).grad_out(pos).flops(d(y.numel())).emit();
  });
  return y;
}

// The first token's features [B, H] of x [B, S, H] (a view); its backward
// scatters into a zero gradient of x's shape.
Var first_token(Builder& b, const Var& x) {
  Var v = b.view(x, {x.dim(0), x.dim(2)});
  b.on_backward(
      {v}, [&b, x, v] { b.op("aten::select_backward").grad_in(v).grad_out(x).flops(0).emit(); });
  return v;
}

// Scaled dot-product attention over heads views q, k, v [B, S, H]:
// softmax(q k^T / sqrt(d)), dropout, times v, heads merged back to [B, S, H].
Var attention(Builder& b, const Var& q, const Var& k, const Var& v, int heads) {
  const int64_t n = q.dim(0), s = q.dim(1), h = q.dim(2), dh = h / heads;
  const Shape split = {n, heads, s, dh};
  Var qh = reshape(b, q, split), kh = reshape(b, k, split), vh = reshape(b, v, split);
  Var scores = scale(b, matmul(b, qh, kh, {n, heads, s, s}, dh));
  Var probs = dropout(b, softmax(b, scores));
  Var ctx = matmul(b, probs, vh, split, s);
  return copy(b, ctx, {n, s, h});
}

}  // namespace

Graph build_bert(const BuildContext& c, const BertConfig& cfg) {
  constexpr int64_t kVocab = 30522, kMaxPositions = 512, kTypes = 2;
  const int64_t s = c.seq_len > 0 ? c.seq_len : 512, n = c.batch, h = cfg.hidden;
  if (s > kMaxPositions)
    throw Error("BERT supports sequences of at most 512 tokens, got " + std::to_string(s));
  Builder b(c.graph_name,
            "swapadvisor zoo: HF BertForPreTraining, " + std::to_string(cfg.layers) +
                " layers, hidden " + std::to_string(h) + ", seq " + std::to_string(s),
            c.optimizer, c.precision);
  Var ids = b.input("input_ids", {n, s}, DType::kI64);
  Var types = b.input("token_type_ids", {n, s}, DType::kI64);
  Var positions = b.input("position_ids", {s}, DType::kI64);
  Var mlm_labels = b.input("labels", {n * s}, DType::kI64);
  Var nsp_labels = b.input("next_sentence_label", {n}, DType::kI64);

  const std::string e = "bert.embeddings.";
  Var word = b.param(e + "word_embeddings.weight", {kVocab, h});
  Var pos = b.param(e + "position_embeddings.weight", {kMaxPositions, h});
  Var type = b.param(e + "token_type_embeddings.weight", {kTypes, h});
  Var x = add(b, embedding(b, e + "word_embeddings", word, ids),
              embedding(b, e + "token_type_embeddings", type, types));
  x = add_positions(b, x, embedding(b, e + "position_embeddings", pos, positions));
  x = dropout(b, layer_norm(b, e + "LayerNorm", x));

  for (int l = 0; l < cfg.layers; ++l) {
    const std::string p = "bert.encoder.layer." + std::to_string(l) + ".";
    Var q = linear(b, p + "attention.self.query", x, h);
    Var k = linear(b, p + "attention.self.key", x, h);
    Var v = linear(b, p + "attention.self.value", x, h);
    Var a = linear(b, p + "attention.output.dense", attention(b, q, k, v, cfg.heads), h);
    x = layer_norm(b, p + "attention.output.LayerNorm", add(b, dropout(b, a), x));
    Var f = gelu(b, linear(b, p + "intermediate.dense", x, cfg.intermediate));
    f = dropout(b, linear(b, p + "output.dense", f, h));
    x = layer_norm(b, p + "output.LayerNorm", add(b, f, x));
  }
  Var pooled = tanh(b, linear(b, "bert.pooler.dense", first_token(b, x), h));

  // Heads: masked LM (decoder tied to the word embeddings) and next sentence.
  Var t = gelu(b, linear(b, "cls.predictions.transform.dense", x, h));
  t = reshape(b, layer_norm(b, "cls.predictions.transform.LayerNorm", t), {n * s, h});
  Var logits = linear_with(b, "cls.predictions.decoder", t, word,
                           b.param("cls.predictions.bias", {kVocab}), kVocab);
  Var mlm = cross_entropy(b, "mlm_loss", logits, mlm_labels);
  Var nsp = cross_entropy(b, "nsp_loss", linear(b, "cls.seq_relationship", pooled, 2), nsp_labels);
  return b.finish(add(b, mlm, nsp));
}

Graph build_gpt2(const BuildContext& c, const Gpt2Config& cfg) {
  constexpr int64_t kVocab = 50257, kPositions = 1024;
  const int64_t s = c.seq_len > 0 ? c.seq_len : kPositions, n = c.batch, h = cfg.hidden;
  if (s > kPositions)
    throw Error("GPT-2 supports sequences of at most 1024 tokens, got " + std::to_string(s));
  Builder b(c.graph_name,
            "swapadvisor zoo: HF GPT2LMHeadModel, " + std::to_string(cfg.layers) +
                " layers, hidden " + std::to_string(h) + ", seq " + std::to_string(s),
            c.optimizer, c.precision);
  Var ids = b.input("input_ids", {n, s}, DType::kI64);
  Var positions = b.input("position_ids", {s}, DType::kI64);
  Var labels = b.input("labels", {n * s}, DType::kI64);

  Var wte = b.param("transformer.wte.weight", {kVocab, h});
  Var wpe = b.param("transformer.wpe.weight", {kPositions, h});
  Var x = add_positions(b, embedding(b, "transformer.wte", wte, ids),
                        embedding(b, "transformer.wpe", wpe, positions));
  x = dropout(b, x);
  // GPT-2's Conv1D keeps its weight as [in, out].
  auto conv1d = [&b](const std::string& name, const Var& in, int64_t out) {
    Var w = b.param(name + ".weight", {in.dim(-1), out});
    return linear_with(b, name, in, w, b.param(name + ".bias", {out}), out);
  };
  for (int l = 0; l < cfg.layers; ++l) {
    const std::string p = "transformer.h." + std::to_string(l) + ".";
    Var qkv = conv1d(p + "attn.c_attn", layer_norm(b, p + "ln_1", x), 3 * h);
    std::vector<Var> parts = split(b, qkv, -1, {h, h, h});
    Var a = conv1d(p + "attn.c_proj", attention(b, parts[0], parts[1], parts[2], cfg.heads), h);
    x = add(b, x, dropout(b, a));
    Var f = gelu(b, conv1d(p + "mlp.c_fc", layer_norm(b, p + "ln_2", x), 4 * h));
    x = add(b, x, dropout(b, conv1d(p + "mlp.c_proj", f, h)));
  }
  x = reshape(b, layer_norm(b, "transformer.ln_f", x), {n * s, h});
  Var logits = linear_with(b, "lm_head", x, wte, Var{}, kVocab);  // tied to wte
  return b.finish(cross_entropy(b, "loss", logits, labels));
}

}  // namespace sa::zoo
