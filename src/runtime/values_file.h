#pragma once
// The values file (docs/capture.md, "Values file"): the bytes of some graph
// tensors. swapadvisor-capture writes the initial parameters, buffers,
// optimizer state and batch of a captured model; `swapadvisor run --kernels
// aten --save-values` writes the trained state in the same format.
//
//   offset 0   "SAVALUES", u32 version (1), u32 0, u64 H (little-endian)
//         24   H bytes of JSON: {"graph": NAME, "tensors": [{"tensor": ID,
//              "name": ..., "kind": ..., "bytes": N, "offset": OFF}, ...]}
//          D   the data, D = 24 + H rounded up to 64; tensor ID's N bytes
//              at D + OFF

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace sa::runtime {

struct TensorValue {
  TensorId tensor = 0;
  std::string name;
  std::string kind;
  std::vector<std::byte> data;
};

struct ValuesFile {
  std::string graph;  // the graph's name
  std::vector<TensorValue> tensors;

  // The entry of tensor t, or nullptr.
  const TensorValue* find(TensorId t) const;
};

// Throws sa::Error naming the file and the header entry for anything
// malformed: bad magic, unsupported version, a header that is not the JSON
// above (ids, sizes and offsets are whole numbers, not 5.5 or 1e3; a tensor
// has one entry at most), data past the end.
ValuesFile read_values_file(const std::string& path);
// The same from the file's bytes; origin names it in errors.
ValuesFile parse_values_file(std::string_view bytes, const std::string& origin);
void write_values_file(const std::string& path, const ValuesFile& v);

// Checks that the values fit graph g: made for it (the header's graph name,
// when it has one, is g's), every tensor id exists and no entry is larger
// than its tensor. Throws sa::Error naming the entry.
void check_values_against(const ValuesFile& v, const Graph& g, const std::string& origin);

}  // namespace sa::runtime
