#pragma once
// Reading and writing format v1 (docs/graph-format.md), as .json or .json.gz.
//
//   sa::Graph g = sa::read_graph("resnet50-b64.json.gz");   // throws sa::Error
//   sa::write_graph(g, "copy.json");
//
// Every error names the file, the JSON path (e.g. "ops[17].inputs[2]") and
// the problem. A graph that read_graph() returns has passed validate_graph().

#include <string>
#include <string_view>

#include "graph/graph.h"

namespace sa {

Graph read_graph(const std::string& path);

// Parses format v1 text; origin names the source in error messages.
Graph parse_graph(std::string_view json_text, std::string_view origin);

// Compact JSON, one tensor or op per line.
std::string graph_to_json(const Graph& g);

// Gzipped when path ends in ".gz".
void write_graph(const Graph& g, const std::string& path);

}  // namespace sa
