#pragma once
// The names people read for ops and tensors, shared by the trace and the
// report so that both call a step the same thing.
//
//   op_label(g, 12)      "layer1.0.conv1"  or, unnamed, "aten::convolution #12"
//   tensor_label(g, 40)  "layer1.0.conv1.weight"  or, unnamed, "tensor #40"

#include <string>

#include "graph/graph.h"

namespace sa {

std::string op_label(const Graph& g, OpId o);
std::string tensor_label(const Graph& g, TensorId t);

}  // namespace sa
