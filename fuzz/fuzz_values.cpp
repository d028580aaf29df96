// Fuzzes the values file reader: parse_values_file, then the check against
// the graph it is for (tests/data/capture's tiny_mlp) and its exec file's
// storage sizes. What it accepts holds each tensor's bytes once: written
// back (write_values_file lays entries out afresh, aligned and disjoint) it
// reads the same.

#include "fuzz_common.h"
#include "graph/graph_io.h"
#include "runtime/aten/aten_program.h"
#include "runtime/aten/values_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const sa::Graph g =
      sa::read_graph(sa::fuzz::data_dir() + "/capture/tiny_mlp.graph.json.gz");
  static const sa::runtime::AtenProgram p =
      sa::runtime::read_aten_program(sa::fuzz::data_dir() + "/capture/tiny_mlp.exec.json.gz", g);
  sa::fuzz::refused_or_read([&] {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    const sa::runtime::ValuesFile v = sa::runtime::parse_values_file(bytes, "fuzz");
    sa::runtime::check_values_against(v, g, "fuzz", p.storage_bytes);
  });
  return 0;
}
