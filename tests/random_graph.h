#pragma once
// A seeded generator of random, valid, training-like graphs for property
// tests (header-only).
//
// One iteration of a random layered network:
//   forward   layer i: h[i] (, mask) = f_i(h[i-1], W_i (, b_i) (, h[i-2])), sometimes
//             updating a buffer (running statistics; with state_update, as
//             batch norm does: recompute_skips_updates) and sometimes followed by
//             an in-place activation (relu_: an update of h[i]); W_i is now and
//             then another layer's weight (shared parameters);
//   loss      loss, g[L] = loss(h[L], labels)
//   backward  layer i: g[i-1], gW_i (, gb_i) (, partial gradient of h[i-2]) =
//             f_i'(g[i], h[i-1], W_i (, mask)); a shared weight's second
//             gradient is accumulated in place (an update of gW), partial
//             gradients of skip connections are added into g[i-2] in place;
//   update    every parameter P: sgd(gP) updates P and its momentum M.
// Sizes come from a small set, so that size classes hold several tensors;
// some ops need a workspace; every op has a time_us. The same options give
// the same graph everywhere (the generator draws from mt19937_64 without
// std distributions). Every graph passes validate_graph.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace sa::testing {

struct RandomGraphOptions {
  int layers = 8;
  uint64_t seed = 1;
  double shared_param = 0.15;  // a layer reuses an earlier layer's weight
  double bias = 0.5;           // a layer has a bias
  double skip = 0.25;          // a layer also reads h[i-2]
  double mask = 0.3;           // a layer saves a second output for backward
  double buffer = 0.2;         // a layer updates a buffer in forward
  // A layer that updates a buffer does so as batch norm updates its running
  // statistics: recompute_skips_updates (Note [Recompute without updates]).
  // Drawn only when above 0, so that the default graphs stay as they were.
  double state_update = 0;
  double inplace = 0.2;     // a layer is followed by an in-place op
  double workspace = 0.15;  // an op needs a workspace
};

namespace detail {

class RandomGraphGen {
 public:
  explicit RandomGraphGen(const RandomGraphOptions& o) : o_(o), rng_(o.seed) {}

  Graph run() {
    const int L = o_.layers < 1 ? 1 : o_.layers;
    g_.name = "random-" + std::to_string(L) + "-" + std::to_string(o_.seed);
    g_.source = "tests/random_graph.h";
    const TensorId x = tensor(size(), TensorKind::kInput, "data");
    const TensorId labels = tensor(size(), TensorKind::kInput, "labels");

    struct Layer {
      TensorId w = -1, b = -1, skip = -1, mask = -1;
    };
    std::vector<Layer> layer(L + 1);
    std::vector<TensorId> h{x};
    std::vector<TensorId> weights;  // distinct weights, for sharing
    std::vector<TensorId> params;   // every parameter, in creation order
    for (int i = 1; i <= L; ++i) {
      Layer& l = layer[i];
      if (!weights.empty() && coin(o_.shared_param)) {
        l.w = weights[pick(weights.size())];
      } else {
        l.w = tensor(size(), TensorKind::kParam, "layer" + std::to_string(i) + ".weight");
        weights.push_back(l.w);
        params.push_back(l.w);
      }
      if (coin(o_.bias)) {
        l.b = tensor(size(), TensorKind::kParam, "layer" + std::to_string(i) + ".bias");
        params.push_back(l.b);
      }
      std::vector<TensorId> in{h[i - 1], l.w};
      if (l.b >= 0) in.push_back(l.b);
      if (i >= 3 && coin(o_.skip)) {
        l.skip = h[i - 2];
        in.push_back(l.skip);
      }
      const TensorId out = tensor(size(), TensorKind::kActivation, "h" + std::to_string(i));
      std::vector<TensorId> outs{out};
      if (coin(o_.mask)) {
        l.mask = tensor(size(), TensorKind::kActivation, "mask" + std::to_string(i));
        outs.push_back(l.mask);
      }
      std::vector<TensorId> upd;
      if (coin(o_.buffer))
        upd.push_back(
            tensor(size(), TensorKind::kBuffer, "layer" + std::to_string(i) + ".running_stat"));
      const bool state = !upd.empty() && o_.state_update > 0 && coin(o_.state_update);
      g_.ops[op("test::layer", Phase::kForward, in, outs, upd, "fwd" + std::to_string(i))]
          .recompute_skips_updates = state;
      if (coin(o_.inplace))
        op("test::relu_", Phase::kForward, {}, {}, {out}, "relu" + std::to_string(i));
      h.push_back(out);
    }

    // Loss and the gradient of the last activation.
    std::vector<TensorId> grad(L + 1, -1);
    const TensorId loss = tensor(64, TensorKind::kActivation, "loss");
    grad[L] = tensor(g_.tensors[h[L]].bytes, TensorKind::kGradient, "grad_h" + std::to_string(L));
    op("test::loss", Phase::kForward, {h[L], labels}, {loss, grad[L]}, {}, "loss");

    // Backward.
    std::vector<TensorId> param_grad(g_.tensors.size(), -1);  // by parameter id
    std::vector<std::vector<TensorId>> partial(L + 1);        // skip gradients to add into g[i]
    for (int i = L; i >= 1; --i) {
      for (TensorId p : partial[i])
        op("test::add_", Phase::kBackward, {p}, {}, {grad[i]}, "accumulate_h" + std::to_string(i));
      const Layer& l = layer[i];
      std::vector<TensorId> in{grad[i], h[i - 1], l.w};
      if (l.mask >= 0) in.push_back(l.mask);
      std::vector<TensorId> outs, upd;
      if (i >= 2) {
        grad[i - 1] = tensor(g_.tensors[h[i - 1]].bytes, TensorKind::kGradient,
                             "grad_h" + std::to_string(i - 1));
        outs.push_back(grad[i - 1]);
      }
      for (TensorId p : {l.w, l.b}) {
        if (p < 0) continue;
        if (param_grad[p] >= 0) {
          upd.push_back(param_grad[p]);  // gradient accumulation of a shared weight
        } else {
          param_grad[p] =
              tensor(g_.tensors[p].bytes, TensorKind::kGradient, "grad_" + g_.tensors[p].name);
          outs.push_back(param_grad[p]);
        }
      }
      if (l.skip >= 0 && i - 2 >= 1) {
        const TensorId part = tensor(g_.tensors[l.skip].bytes, TensorKind::kGradient,
                                     "partial_grad_h" + std::to_string(i - 2));
        outs.push_back(part);
        partial[i - 2].push_back(part);
      }
      op("test::layer_backward", Phase::kBackward, in, outs, upd, "bwd" + std::to_string(i));
    }

    // Optimizer: momentum SGD.
    for (TensorId p : params) {
      const TensorId m = tensor(g_.tensors[p].bytes, TensorKind::kOptimizerState,
                                g_.tensors[p].name + ".momentum");
      op("test::sgd", Phase::kUpdate, {param_grad[p]}, {}, {p, m}, "sgd_" + g_.tensors[p].name);
    }
    return std::move(g_);
  }

 private:
  uint64_t next() { return rng_(); }
  size_t pick(size_t n) { return static_cast<size_t>(next() % n); }
  bool coin(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }
  int64_t size() {
    static constexpr int64_t kSizes[] = {64, 96, 128, 256, 512, 1024};
    return kSizes[pick(6)];
  }

  TensorId tensor(int64_t bytes, TensorKind kind, std::string name) {
    g_.tensors.push_back({bytes, kind, std::move(name), {}, {}});
    return g_.num_tensors() - 1;
  }
  OpId op(std::string type, Phase phase, std::vector<TensorId> in, std::vector<TensorId> out,
          std::vector<TensorId> upd, std::string name) {
    Op o;
    o.type = std::move(type);
    o.phase = phase;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    o.updates = std::move(upd);
    o.time_us = static_cast<double>(1 + pick(50));
    if (coin(o_.workspace)) o.workspace_bytes = size();
    o.name = std::move(name);
    g_.ops.push_back(std::move(o));
    return g_.num_ops() - 1;
  }

  RandomGraphOptions o_;
  std::mt19937_64 rng_;
  Graph g_;
};

}  // namespace detail

inline Graph random_graph(const RandomGraphOptions& options) {
  return detail::RandomGraphGen(options).run();
}

inline Graph random_graph(int layers, uint64_t seed) {
  RandomGraphOptions o;
  o.layers = layers;
  o.seed = seed;
  return random_graph(o);
}

}  // namespace sa::testing
