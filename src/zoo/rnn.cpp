// rnn-L-XK and brnn-L-XK: stacked LSTM language models unrolled over the
// sequence, one set of ops per layer, direction and time step, as MXNet's
// unrolled LSTMCell and PyTorch's LSTMCell loop build them.
//
//   tokens [T, B] -> embedding (V x H) -> L LSTM layers (hidden H; the
//   bidirectional model runs each layer both ways and feeds the next layer
//   both outputs) -> the top outputs concatenated -> decoder Linear(D, V)
//   -> cross entropy against labels [T*B]
//
// One cell step (layer l, direction, time t), PyTorch's fused CUDA LSTM cell:
//   gates  = x_t W_ih^T + b_ih        (addmm; a bidirectional layer above the
//                                       first reads both directions' h_t)
//   gates += h_{t-1} W_hh^T + b_hh     (addmm_, in place)
//   h_t, c_t, ws = lstm_cell(gates, c_{t-1})   (_thnn_fused_lstm_cell)
// and its backward: the cell's backward (reads h_t's and c_t's gradients,
// c_{t-1}, c_t and the workspace ws [B, 4H] of activated gates), then one
// linear_backward per addmm. Saved per step: ws, c_t and h_t (6 x B x H
// floats). Layers run one after the other (cuDNN's and PyTorch's order);
// weight gradients accumulate in place over the steps. Initial states are
// zeros (one aten::zeros op per layer and direction).

#include <string>
#include <vector>

#include "util/error.h"
#include "zoo/layers.h"
#include "zoo/models.h"

namespace sa::zoo {
namespace {

constexpr int kDefaultSeqLen = 220;  // see docs/zoo.md: fits Table 1's memory
constexpr int64_t kVocab = 10000;    // Penn Treebank's word vocabulary

struct LstmWeights {
  Var w_ih, w_hh, b_ih, b_hh;
};

class Lstm {
 public:
  Lstm(Builder& b, int64_t batch, int64_t hidden) : b_(b), n_(batch), h_(hidden) {}

  // gates (+)= [x parts] W^T (+ bias): one GEMM over the concatenated parts.
  Var fc(const std::string& name, const std::vector<Var>& xs, const Var& w_in, const Var& bias_in,
         const Var* acc) {
    // Under autocast the GEMM reads low-precision copies (Note [Mixed precision]).
    const Var w = b_.cast(w_in), bias = b_.cast(bias_in);
    const double fl = 2.0 * d(w.numel()) * d(n_);
    Var gates = acc ? b_.version(*acc) : b_.fresh({n_, 4 * h_});
    auto op = b_.op(acc ? "aten::addmm_" : "aten::addmm", name);
    for (const Var& x : xs)
      op.in(x);
    op.in(w).in(bias);
    if (acc)
      op.upd(gates);
    else
      op.out(gates);
    op.flops(fl + d(gates.numel())).emit();
    b_.on_backward({gates}, [this, name, xs, w, bias, gates, acc_var = acc ? *acc : Var{}, fl] {
      auto op = b_.op("linear_backward", name).grad_in(gates);
      for (const Var& x : xs)
        op.in(x);
      op.in(w);
      for (const Var& x : xs)
        op.grad_out(x);
      op.grad_out(w).grad_out(bias).flops(2 * fl + d(gates.numel())).emit();
      if (acc_var.tensor >= 0) b_.pass_grad(acc_var, b_.grad(gates));
    });
    return gates;
  }

  // One cell step on the parts of x_t; returns h_t and replaces *c with c_t.
  Var step(const std::string& name, const std::vector<Var>& xs, const LstmWeights& w,
           const Var& h_prev, Var* c) {
    Var gates = fc(name + ".ih", xs, w.w_ih, w.b_ih, nullptr);
    gates = fc(name + ".hh", {h_prev}, w.w_hh, w.b_hh, &gates);
    const Var c_prev = *c;
    Var h = b_.fresh({n_, h_}), c_new = b_.fresh({n_, h_}), ws = b_.fresh({n_, 4 * h_});
    b_.op("aten::_thnn_fused_lstm_cell", name)
        .in(gates)
        .in(c_prev)
        .out(h)
        .out(c_new)
        .out(ws)
        .flops(10 * d(h.numel()))
        .emit();
    b_.on_backward({h, c_new, ws}, [this, name, gates, c_prev, h, c_new, ws] {
      auto op = b_.op("aten::_thnn_fused_lstm_cell_backward", name);
      if (b_.has_grad(h)) op.grad_in(h);
      if (b_.has_grad(c_new)) op.grad_in(c_new);
      op.in(c_prev).in(c_new).in(ws).grad_out(gates).grad_out(c_prev);
      op.flops(12 * d(h.numel())).emit();
    });
    *c = c_new;
    return h;
  }

  LstmWeights weights(const std::string& suffix, int64_t in) {
    return {b_.param("lstm.weight_ih_" + suffix, {4 * h_, in}),
            b_.param("lstm.weight_hh_" + suffix, {4 * h_, h_}),
            b_.param("lstm.bias_ih_" + suffix, {4 * h_}),
            b_.param("lstm.bias_hh_" + suffix, {4 * h_})};
  }

  // Runs one layer in one direction over inputs[t] (each a list of parts).
  std::vector<Var> layer(const std::string& suffix, const std::vector<std::vector<Var>>& inputs,
                         bool reverse) {
    int64_t in = 0;
    for (const Var& p : inputs[0])
      in += p.dim(-1);
    const LstmWeights w = weights(suffix, in);
    const int steps = static_cast<int>(inputs.size());
    std::vector<Var> hs(steps);
    // Zero initial states, constants.
    Var h = b_.fresh({n_, h_}), c = b_.fresh({n_, h_});
    b_.op("aten::zeros", "lstm." + suffix + ".init").out(h).out(c).flops(0).emit();
    b_.no_grad(h);
    b_.no_grad(c);
    for (int i = 0; i < steps; ++i) {
      const int t = reverse ? steps - 1 - i : i;
      hs[t] = step("lstm." + suffix + ".t" + std::to_string(t), inputs[t], w, h, &c);
      h = hs[t];
    }
    return hs;
  }

 private:
  Builder& b_;
  int64_t n_, h_;
};

}  // namespace

// Note [Zoo size ceiling]. Per layer and direction (LD of them) and step:
// 6 ops (addmm, addmm_, the cell, and their three backwards) and 7 tensors,
// and 1 tensor per step (the embedding's split); per LD 17 ops and 25
// tensors at most (the init, four params with their updates, state, casts
// and unscales); 27 ops and 35 tensors for the rest (embedding, decoder,
// loss).
SizeBound lstm_size_bound(int layers, bool bidirectional, int seq_len) {
  const int64_t ld = int64_t{layers} * (bidirectional ? 2 : 1);
  const int64_t seq = seq_len > 0 ? seq_len : kDefaultSeqLen;
  return {.ops = 27 + 17 * ld + 6 * ld * seq, .tensors = 35 + 25 * ld + seq * (7 * ld + 1)};
}

Graph build_lstm(const BuildContext& c, int layers, int64_t hidden, bool bidirectional) {
  const int seq = c.seq_len > 0 ? c.seq_len : kDefaultSeqLen;
  const int64_t n = c.batch, h = hidden;
  Builder b(c.graph_name,
            "swapadvisor zoo: " + std::to_string(layers) + "-layer " +
                (bidirectional ? "bidirectional " : "") + "LSTM LM, hidden " + std::to_string(h) +
                ", " + std::to_string(seq) + " steps, vocabulary " + std::to_string(kVocab),
            c.optimizer, c.precision);
  Var tokens = b.input("tokens", {seq, n}, DType::kI64);
  Var labels = b.input("labels", {seq * n}, DType::kI64);
  Var emb_w = b.param("encoder.weight", {kVocab, h});
  Var emb = embedding(b, "encoder", emb_w, tokens);
  std::vector<std::vector<Var>> inputs;
  for (const Var& x : split(b, emb, 0, std::vector<int64_t>(seq, 1)))
    inputs.push_back({reshape(b, x, {n, h})});

  Lstm lstm(b, n, h);
  for (int l = 0; l < layers; ++l) {
    const std::string suffix = fmt::format("l{}", l);  // ("l" + to_string: g++ 12 -Wrestrict)
    std::vector<Var> fwd = lstm.layer(suffix, inputs, false);
    std::vector<Var> bwd;
    if (bidirectional) bwd = lstm.layer(suffix + "_reverse", inputs, true);
    for (int t = 0; t < seq; ++t) {
      inputs[t] = {fwd[t]};
      if (bidirectional) inputs[t].push_back(bwd[t]);
    }
  }
  std::vector<Var> top;
  for (const auto& parts : inputs)
    for (const Var& p : parts)
      top.push_back(p);
  const int64_t dout = bidirectional ? 2 * h : h;
  Var out = reshape(b, cat(b, top, 0, "output"), {seq * n, dout});
  Var logits = linear(b, "decoder", out, kVocab);
  return b.finish(cross_entropy(b, "loss", logits, labels));
}

}  // namespace sa::zoo
