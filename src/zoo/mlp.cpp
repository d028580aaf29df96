// mlp-N: a tiny model whose every number can be checked by hand (see the
// HandCheckedMlp test), for fast tests of the tools that read graphs.

#include "zoo/layers.h"
#include "zoo/models.h"

namespace sa::zoo {

// Note [Zoo size ceiling]: per hidden layer at most 12 ops and 15 tensors
// (Linear, ReLU, their backwards, two params' updates, state, casts and
// unscales), 21 ops and 28 tensors for the head, the loss and the inputs.
SizeBound mlp_size_bound(int layers) {
  return {.ops = 21 + 12 * int64_t{layers}, .tensors = 28 + 15 * int64_t{layers}};
}

Graph build_mlp(const BuildContext& c, int layers) {
  Builder b(c.graph_name,
            "swapadvisor zoo: MLP with " + std::to_string(layers) +
                " hidden Linear(64,64)+ReLU layers and a Linear(64,10) head",
            c.optimizer, c.precision);
  Var x = b.input("data", {c.batch, 64});
  Var labels = b.input("labels", {c.batch}, DType::kI64);
  for (int i = 0; i < layers; ++i)
    x = relu_(b, linear(b, "layers." + std::to_string(i), x, 64));
  Var logits = linear(b, "head", x, 10);
  return b.finish(cross_entropy(b, "loss", logits, labels));
}

}  // namespace sa::zoo
