#include "runtime/values_file.h"

#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/file_io.h"
#include "util/json.h"

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

ValuesFile read_values_file(const std::string& path) {
  const std::string buf = read_file(path);
  if (buf.size() < 24 || std::memcmp(buf.data(), kMagic, 8) != 0)
    throw Error(
        fmt::format("{}: not a swapadvisor values file (it does not start with SAVALUES)", path));
  const uint32_t version = load_le<uint32_t>(buf.data() + 8);
  if (version != kVersion)
    throw Error(fmt::format("{}: unsupported values file version {} (expected {})", path, version,
                            kVersion));
  const uint64_t hlen = load_le<uint64_t>(buf.data() + 16);
  if (hlen > buf.size() - 24)
    throw Error(fmt::format("{}: header of {} bytes runs past the end of the file", path, hlen));
  const nlohmann::json h = parse_json(std::string_view(buf).substr(24, hlen), path + " (header)");
  const int64_t data_start = round_up(24 + static_cast<int64_t>(hlen));
  ValuesFile v;
  try {
    if (h.contains("graph")) v.graph = h.at("graph").get<std::string>();
    for (const auto& e : h.at("tensors")) {
      TensorValue t;
      t.tensor = e.at("tensor").get<TensorId>();
      if (e.contains("name")) t.name = e.at("name").get<std::string>();
      if (e.contains("kind")) t.kind = e.at("kind").get<std::string>();
      const int64_t bytes = e.at("bytes").get<int64_t>();
      const int64_t off = e.at("offset").get<int64_t>();
      if (bytes < 0 || off < 0 || data_start + off + bytes > static_cast<int64_t>(buf.size()))
        throw Error(
            fmt::format("{}: tensor {}: {} bytes at offset {} run past the end of the "
                        "file ({} bytes)",
                        path, t.tensor, bytes, off, buf.size()));
      t.data.resize(static_cast<size_t>(bytes));
      std::memcpy(t.data.data(), buf.data() + data_start + off, static_cast<size_t>(bytes));
      v.tensors.push_back(std::move(t));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: malformed header: {}", path, e.what()));
  }
  return v;
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

void check_values_against(const ValuesFile& v, const Graph& g, const std::string& origin) {
  for (const TensorValue& t : v.tensors) {
    if (t.tensor < 0 || t.tensor >= g.num_tensors())
      throw Error(fmt::format("{}: value for tensor {}, but graph {} has {} tensors", origin,
                              t.tensor, g.name, g.num_tensors()));
    if (static_cast<int64_t>(t.data.size()) > g.tensors[t.tensor].bytes)
      throw Error(fmt::format("{}: tensor {} ('{}'): {} bytes of value for a tensor of {} bytes",
                              origin, t.tensor, t.name, t.data.size(), g.tensors[t.tensor].bytes));
  }
}

}  // namespace sa::runtime
