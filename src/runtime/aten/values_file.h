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
//              at D + OFF, OFF a multiple of 64, no two entries' bytes
//              overlapping

#include <cstddef>
#include <cstdint>
#include <span>
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
// has one entry at most), an offset that is not a multiple of 64, data past
// the end, two entries whose data overlap.
ValuesFile read_values_file(const std::string& path);
// The same from the file's bytes; origin names it in errors.
ValuesFile parse_values_file(std::string_view bytes, const std::string& origin);
void write_values_file(const std::string& path, const ValuesFile& v);

// Checks that the values fit graph g: made for it (the header's graph name,
// when it has one, is g's), every tensor id exists, no entry is larger than
// its tensor and, given the storages' sizes (an exec file's storage_bytes,
// one per tensor of g), none is smaller than its storage. Throws sa::Error
// naming the entry.
void check_values_against(const ValuesFile& v, const Graph& g, const std::string& origin,
                          std::span<const int64_t> storage_bytes = {});

}  // namespace sa::runtime
