#pragma once
// Helpers shared by the zoo's tests.

#include <string>

#include "graph/graph.h"
#include "zoo/zoo.h"

namespace sa::testing {

inline Graph zoo(const std::string& model, int batch, const std::string& optimizer = "sgd",
                 int seq_len = 0) {
  ZooOptions o;
  o.model = model;
  o.batch = batch;
  o.optimizer = optimizer;
  o.seq_len = seq_len;
  return build_zoo_model(o);
}

// Sum of element counts of param tensors (4-byte floats); tied weights are
// one tensor, so they count once.
inline int64_t param_count(const Graph& g, const std::string& prefix = "") {
  int64_t n = 0;
  for (const Tensor& t : g.tensors)
    if (t.kind == TensorKind::kParam && t.name.rfind(prefix, 0) == 0) n += t.bytes / 4;
  return n;
}

}  // namespace sa::testing
