#pragma once
// The names people read for ops and tensors, shared by the trace and the
// report so that both call a step the same thing.
//
//   op_label(g, 12)       "layer1.0.conv1"  or, unnamed, "aten::convolution #12"
//   tensor_labels(g)[40]  "layer1.0.conv1.weight"; unnamed, after the op that
//                         creates it: "layer1.0.conv1:out0" (its first output);
//                         unnamed and created by no op (an input): "tensor #40"
//
// Captured graphs often name their ops but not the activations between them,
// so an unnamed tensor takes its producer's label rather than a bare number.

#include <string>
#include <vector>

#include "graph/graph.h"

namespace sa {

std::string op_label(const Graph& g, OpId o);

// Every tensor's label, by id (one pass over the ops).
std::vector<std::string> tensor_labels(const Graph& g);

}  // namespace sa
