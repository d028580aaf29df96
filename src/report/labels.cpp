#include "report/labels.h"

#include <fmt/format.h>

namespace sa {

std::string op_label(const Graph& g, OpId o) {
  const Op& op = g.ops[o];
  if (!op.name.empty()) return op.name;
  return fmt::format("{} #{}", op.type.empty() ? "op" : op.type, o);
}

std::string tensor_label(const Graph& g, TensorId t) {
  const Tensor& x = g.tensors[t];
  if (!x.name.empty()) return x.name;
  return fmt::format("tensor #{}", t);
}

}  // namespace sa
