#pragma once
// The model zoo: full training graphs (forward, backward, optimizer update)
// generated in the graph IR. See docs/zoo.md for every model's parameters and
// the choices made where the paper is silent.
//
//   sa::ZooOptions o;  o.model = "resnet50";  o.batch = 64;
//   sa::Graph g = sa::build_zoo_model(o);     // throws sa::Error if unknown

#include <string>
#include <vector>

#include "graph/graph.h"

namespace sa {

struct ZooOptions {
  std::string model;              // e.g. "resnet50", "wresnet152-10", "rnn-8-8k"
  int batch = 0;                  // > 0
  std::string optimizer = "sgd";  // "sgd" (with momentum), "sgd-plain" (no state) or "adam"
  int seq_len = 0;                // sequence models; 0 = the model's default
  // "fp32", or automatic mixed precision: "bf16" or "fp16" (docs/zoo.md,
  // "Mixed precision"); the paper's models train in FP32.
  std::string precision = "fp32";
};

struct ZooModelInfo {
  std::string name;         // a name or a pattern, e.g. "wresnet152-X"
  std::string description;  // one line
  int default_batch = 0;
};

std::vector<ZooModelInfo> zoo_models();

Graph build_zoo_model(const ZooOptions& options);

}  // namespace sa
