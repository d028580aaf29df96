// Fuzzes the graph reader (format v1, JSON or gzip): parse_graph with
// validate_graph, then what every command computes from a graph it read
// (stats, the dependency DAG), and the writer: a graph that reads must write
// and read back to the same text.

#include "fuzz_common.h"
#include "graph/dataflow.h"
#include "graph/graph_io.h"
#include "graph/stats.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sa::fuzz::refused_or_read([&] {
    const sa::Graph g = sa::parse_graph(sa::fuzz::input(data, size), "fuzz");
    (void)sa::compute_stats(g);
    const sa::Dataflow dataflow(g);
    sa::fuzz::check_round_trip(
        sa::graph_to_json(g), [](const std::string& t) { return sa::parse_graph(t, "written"); },
        [](const sa::Graph& read) { return sa::graph_to_json(read); });
  });
  return 0;
}
