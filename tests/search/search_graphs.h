#pragma once
// Small graphs for the search tests.

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/validate.h"
#include "search/rng.h"
#include "test_util.h"

namespace sa::testing {

// A random training-like graph: `layers` layers a_l = f(a_{l-1}, W_l [, a
// skip]), a loss, the backward pass in reverse (gradients of W_l and of
// a_{l-1}), then SGD with momentum updates (scale momentum, add gradient,
// update W) at the end, as the zoo lists them. Sizes are drawn from a few
// values so that several tensors share each size.
inline Graph random_training_graph(uint64_t seed, int layers) {
  Rng rng(seed);
  GraphBuilder b;
  const int64_t act_sizes[] = {1000, 2000, 4000, 8000};
  const int64_t param_sizes[] = {100, 300, 1000, 3000};
  auto time = [&]() { return 1.0 + rng.below(10); };
  auto phase = [&](Phase p) { b.g.ops.back().phase = p; };
  std::vector<TensorId> acts{b.tensor(act_sizes[rng.below(4)], TensorKind::kInput)};
  std::vector<TensorId> params;
  std::vector<TensorId> skip(layers, -1);
  for (int l = 0; l < layers; ++l) {
    params.push_back(b.tensor(param_sizes[rng.below(4)], TensorKind::kParam));
    std::vector<TensorId> in{acts.back(), params.back()};
    if (l >= 2 && rng.chance(0.3)) {
      skip[l] = acts[rng.below(static_cast<uint32_t>(acts.size() - 1))];
      in.push_back(skip[l]);
    }
    acts.push_back(b.tensor(act_sizes[rng.below(4)], TensorKind::kActivation));
    b.op(in, {acts.back()}, {}, time());
    phase(Phase::kForward);
  }
  const TensorId loss = b.tensor(4, TensorKind::kActivation);
  b.op({acts.back()}, {loss}, {}, time());
  phase(Phase::kForward);
  TensorId grad = b.tensor(b.g.tensors[acts.back()].bytes, TensorKind::kGradient);
  b.op({loss, acts.back()}, {grad}, {}, time());
  phase(Phase::kBackward);
  std::vector<TensorId> dw(layers);
  for (int l = layers - 1; l >= 0; --l) {
    dw[l] = b.tensor(b.g.tensors[params[l]].bytes, TensorKind::kGradient);
    std::vector<TensorId> in{grad, acts[l]};
    if (skip[l] >= 0) in.push_back(skip[l]);
    b.op(in, {dw[l]}, {}, time());
    phase(Phase::kBackward);
    if (l == 0) break;
    const TensorId prev = b.tensor(b.g.tensors[acts[l]].bytes, TensorKind::kGradient);
    b.op({grad, params[l]}, {prev}, {}, time());
    phase(Phase::kBackward);
    grad = prev;
  }
  for (int l = 0; l < layers; ++l) {
    const TensorId mom = b.tensor(b.g.tensors[params[l]].bytes, TensorKind::kOptimizerState);
    b.op({}, {}, {mom}, 1.0);
    phase(Phase::kUpdate);
    b.op({dw[l]}, {}, {mom}, 1.0);
    phase(Phase::kUpdate);
    b.op({mom}, {}, {params[l]}, 1.0);
    phase(Phase::kUpdate);
  }
  validate_graph(b.g, "random_training_graph");
  return b.g;
}

}  // namespace sa::testing
