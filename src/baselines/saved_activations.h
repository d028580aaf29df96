#pragma once
// Which activations a training graph saves for backward, and when: the
// analysis behind the rule-based baselines (vdnn, swap-all, tflms, checkpoint).

#include <span>
#include <vector>

#include "graph/graph.h"

namespace sa {

struct SavedActivation {
  TensorId tensor;
  int last_forward_pos;    // last access by a forward op
  int first_backward_pos;  // first access after it by a non-forward op
};

// Transient tensors created by a forward op and read again after the forward
// ops that use them, in the given order. Empty when the graph has no phases.
std::vector<SavedActivation> saved_activations(const Graph& g, std::span<const OpId> order);

// True when some op is in the backward phase (the rule-based baselines need one).
bool has_backward(const Graph& g);

// True for ops whose inputs vDNN offloads: convolutions and matrix products.
bool is_conv_or_matmul(const Op& op);

}  // namespace sa
