#pragma once
// The semantic rules of format v1 (docs/graph-format.md, "Errors"), checked on
// an in-memory Graph. read_graph() calls this after parsing; a graph built by
// hand or by a generator should be checked with it before it is planned.

#include <string_view>

#include "graph/graph.h"
#include "util/limits.h"  // kMaxBytes

namespace sa {

// Throws sa::Error "<origin>: <json path>: <problem>" for the first broken
// rule, e.g. "model.json: ops[17].inputs[2]: unknown tensor id 99 (the graph
// has 50 tensors)".
void validate_graph(const Graph& g, std::string_view origin);

}  // namespace sa
