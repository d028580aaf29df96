#include "report/labels.h"

#include <fmt/format.h>

namespace sa {

std::string op_label(const Graph& g, OpId o) {
  const Op& op = g.ops[o];
  if (!op.name.empty()) return op.name;
  return fmt::format("{} #{}", op.type.empty() ? "op" : op.type, o);
}

std::vector<std::string> tensor_labels(const Graph& g) {
  std::vector<std::string> out(g.num_tensors());
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const std::vector<TensorId>& outputs = g.ops[o].outputs;
    for (size_t k = 0; k < outputs.size(); ++k)
      if (out[outputs[k]].empty()) out[outputs[k]] = fmt::format("{}:out{}", op_label(g, o), k);
  }
  for (TensorId t = 0; t < g.num_tensors(); ++t) {
    if (!g.tensors[t].name.empty())
      out[t] = g.tensors[t].name;
    else if (out[t].empty())
      out[t] = fmt::format("tensor #{}", t);
  }
  return out;
}

}  // namespace sa
