// Fuzzes the values file reader: parse_values_file, then the check against
// the graph it is for (tests/data/capture's tiny_mlp).

#include "fuzz_common.h"
#include "graph/graph_io.h"
#include "runtime/values_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const sa::Graph g =
      sa::read_graph(sa::fuzz::data_dir() + "/capture/tiny_mlp.graph.json.gz");
  sa::fuzz::refused_or_read([&] {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    const sa::runtime::ValuesFile v = sa::runtime::parse_values_file(bytes, "fuzz");
    sa::runtime::check_values_against(v, g, "fuzz");
  });
  return 0;
}
