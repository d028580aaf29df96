#include "runtime/aten/values_file.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/checked.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/json.h"
#include "util/limits.h"

namespace sa::runtime {
namespace {

constexpr char kMagic[8] = {'S', 'A', 'V', 'A', 'L', 'U', 'E', 'S'};
constexpr uint32_t kVersion = 1;
constexpr int64_t kAlign = 64;

int64_t round_up(int64_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

template <typename T>
T load_le(const char* p) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    v |= static_cast<T>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

template <typename T>
void store_le(std::string& out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
}

}  // namespace

const TensorValue* ValuesFile::find(TensorId t) const {
  for (const TensorValue& v : tensors)
    if (v.tensor == t) return &v;
  return nullptr;
}

ValuesFile parse_values_file(std::string_view buf, const std::string& path) {
  if (buf.size() < 24 || std::memcmp(buf.data(), kMagic, 8) != 0)
    throw Error(
        fmt::format("{}: not a swapadvisor values file (it does not start with SAVALUES)", path));
  const uint32_t version = load_le<uint32_t>(buf.data() + 8);
  if (version != kVersion)
    throw Error(fmt::format("{}: unsupported values file version {} (expected {})", path, version,
                            kVersion));
  const uint64_t hlen = load_le<uint64_t>(buf.data() + 16);
  if (hlen > buf.size() - 24)
    throw Error(fmt::format("{}: header of {} bytes runs past the end of the file ({} bytes)", path,
                            hlen, buf.size()));
  const FieldReader r(path + " (header)");
  const nlohmann::json h = parse_json(buf.substr(24, hlen), r.origin());
  const int64_t size = static_cast<int64_t>(buf.size());
  const int64_t data_start = round_up(24 + static_cast<int64_t>(hlen));
  ValuesFile v;
  if (const std::string* g = r.optional_string(h, "", "graph")) v.graph = *g;
  const nlohmann::json& tensors = r.array(r.field(h, "", "tensors"), "tensors");
  std::unordered_map<TensorId, size_t> entry_of;  // per tensor id: its entry, to reject duplicates
  struct Extent {
    int64_t begin, end;  // bytes of the data
    size_t entry;
  };
  std::vector<Extent> extents;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const nlohmann::json& e = tensors[i];
    const std::string where = fmt::format("tensors[{}]", i);
    TensorValue t;
    t.tensor = static_cast<TensorId>(r.integer(r.field(e, where, "tensor"), where + ".tensor", 0,
                                               std::numeric_limits<TensorId>::max()));
    if (auto [it, inserted] = entry_of.try_emplace(t.tensor, i); !inserted)
      r.fail(where + ".tensor",
             fmt::format("tensor {} already has a value (tensors[{}])", t.tensor, it->second));
    if (const std::string* name = r.optional_string(e, where, "name")) t.name = *name;
    if (const std::string* kind = r.optional_string(e, where, "kind")) t.kind = *kind;
    const int64_t bytes = r.integer(r.field(e, where, "bytes"), where + ".bytes", 0, size);
    const int64_t off = r.integer(r.field(e, where, "offset"), where + ".offset", 0, size);
    if (off % kAlign != 0)
      r.fail(where + ".offset",
             fmt::format("{} is not a multiple of {} (the format aligns every tensor's data)", off,
                         kAlign));
    const std::optional<int64_t> end = checked_add(data_start + off, bytes);
    if (!end || *end > size)
      r.fail(where, fmt::format("{} bytes at offset {} run past the end of the file ({} bytes)",
                                bytes, off, size));
    const char* data = buf.data() + data_start + off;
    t.data.assign(reinterpret_cast<const std::byte*>(data),
                  reinterpret_cast<const std::byte*>(data + bytes));
    v.tensors.push_back(std::move(t));
    extents.push_back({off, off + bytes, i});
  }
  // No two entries share a byte: each tensor's data are its own (an edited
  // header could otherwise give two tensors, or two halves of one, the same
  // bytes). Empty entries hold no bytes.
  std::erase_if(extents, [](const Extent& x) { return x.begin == x.end; });
  std::sort(extents.begin(), extents.end(),
            [](const Extent& a, const Extent& b) { return a.begin < b.begin; });
  for (size_t k = 1; k < extents.size(); ++k) {
    const Extent& a = extents[k - 1];
    const Extent& b = extents[k];
    if (b.begin >= a.end) continue;
    const Extent& later = a.entry > b.entry ? a : b;
    const Extent& earlier = a.entry > b.entry ? b : a;
    r.fail(fmt::format("tensors[{}]", later.entry),
           fmt::format("its bytes at offsets [{}, {}) overlap those of tensors[{}] at [{}, {})",
                       later.begin, later.end, earlier.entry, earlier.begin, earlier.end));
  }
  return v;
}

ValuesFile read_values_file(const std::string& path) {
  // A values file holds tensors' bytes: as large as a model, not limited
  // like a JSON input (its header is, by parse_json).
  return parse_values_file(read_file(path, kMaxBytes), path);
}

void write_values_file(const std::string& path, const ValuesFile& v) {
  nlohmann::json entries = nlohmann::json::array();
  int64_t off = 0;
  for (const TensorValue& t : v.tensors) {
    entries.push_back({{"tensor", t.tensor},
                       {"name", t.name},
                       {"kind", t.kind},
                       {"bytes", static_cast<int64_t>(t.data.size())},
                       {"offset", off}});
    off = round_up(off + static_cast<int64_t>(t.data.size()));
  }
  const std::string header = nlohmann::json{{"graph", v.graph}, {"tensors", entries}}.dump();
  std::string out(kMagic, 8);
  store_le<uint32_t>(out, kVersion);
  store_le<uint32_t>(out, 0);
  store_le<uint64_t>(out, header.size());
  out += header;
  out.resize(static_cast<size_t>(round_up(static_cast<int64_t>(out.size()))), '\0');
  const size_t data_start = out.size();
  for (const TensorValue& t : v.tensors) {
    out.resize(
        data_start + static_cast<size_t>(round_up(static_cast<int64_t>(out.size() - data_start))),
        '\0');
    out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  }
  if (ends_with_gz(path))
    throw Error(fmt::format("{}: values files are not compressed (drop the .gz)", path));
  write_file(path, out);
}

void check_values_against(const ValuesFile& v, const Graph& g, const std::string& origin,
                          std::span<const int64_t> storage_bytes) {
  if (!v.graph.empty() && v.graph != g.name)
    throw Error(fmt::format("{}: the values of graph {}, not of {}", origin, quote(v.graph),
                            quote(g.name)));
  SA_CHECK(storage_bytes.empty() || std::ssize(storage_bytes) == g.num_tensors(),
           "{} storage sizes for {} tensors", storage_bytes.size(), g.num_tensors());
  for (size_t i = 0; i < v.tensors.size(); ++i) {
    const TensorValue& t = v.tensors[i];
    const int64_t n = static_cast<int64_t>(t.data.size());
    if (t.tensor < 0 || t.tensor >= g.num_tensors())
      throw Error(fmt::format("{}: tensors[{}]: value for tensor {}, but graph {} has {} tensors",
                              origin, i, t.tensor, quote(g.name), g.num_tensors()));
    if (n > g.tensors[t.tensor].bytes)
      throw Error(
          fmt::format("{}: tensors[{}] (tensor {}, {}): {} bytes of value for a tensor of "
                      "{} bytes",
                      origin, i, t.tensor, quote(t.name), n, g.tensors[t.tensor].bytes));
    // A shorter value would leave the rest of the storage zero (the runtime
    // fills its host copies with the value, then zeroes): a different model,
    // silently.
    if (!storage_bytes.empty() && n < storage_bytes[t.tensor])
      throw Error(
          fmt::format("{}: tensors[{}] (tensor {}, {}): {} bytes of value for a storage "
                      "of {} bytes (the exec file's storage_bytes)",
                      origin, i, t.tensor, quote(t.name), n, storage_bytes[t.tensor]));
  }
}

}  // namespace sa::runtime
