// Fuzzes the ATen exec file reader (the part that needs no libtorch):
// parse_aten_program against the tiny captured graph the input names
// (tests/data/capture: tiny_mlp or tiny_cnn; tiny_mlp when it names
// neither or is not JSON). What it accepts names only operators on the
// allow-list (Note [ATen allow-list]), with short overload names: an exec
// file the reader accepts never reaches libtorch with another operator.

#include "fuzz_common.h"
#include "graph/graph_io.h"
#include "runtime/aten/aten_allowlist.h"
#include "runtime/aten/aten_program.h"

namespace {

const sa::Graph& graph(const std::string& name) {
  static const sa::Graph mlp =
      sa::read_graph(sa::fuzz::data_dir() + "/capture/tiny_mlp.graph.json.gz");
  static const sa::Graph cnn =
      sa::read_graph(sa::fuzz::data_dir() + "/capture/tiny_cnn.graph.json.gz");
  return name == cnn.name ? cnn : mlp;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sa::fuzz::refused_or_read([&] {
    const std::string text = sa::fuzz::input(data, size);
    const sa::runtime::AtenProgram p =
        sa::runtime::parse_aten_program(text, "fuzz", graph(sa::fuzz::graph_name(text)));
    for (const sa::runtime::AtenOp& op : p.ops) {
      if (!sa::runtime::find_allowed_aten_op(op.name))
        sa::fuzz::fuzz_fail("an operator off the allow-list was accepted");
      if (op.overload.size() > 64) sa::fuzz::fuzz_fail("a long overload name was accepted");
    }
  });
  return 0;
}
