#include "graph/graph_io.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "graph/validate.h"
#include "util/error.h"
#include "util/file_io.h"

namespace sa {
namespace {

using json = nlohmann::json;

// Where in the document a value sits, formatted only when an error needs it:
// "tensors[3].bytes", "ops[17].inputs[2]".
struct Loc {
  const char* array = nullptr;  // "tensors" or "ops"; nullptr at top level
  int index = -1;
  const char* field = nullptr;
  int sub = -1;

  std::string str() const {
    std::string s;
    if (array) s = fmt::format("{}[{}]", array, index);
    if (field) s += (s.empty() ? "" : ".") + std::string(field);
    if (sub >= 0) s += fmt::format("[{}]", sub);
    return s.empty() ? "(document)" : s;
  }
  Loc at(const char* f) const { return {array, index, f, -1}; }
  Loc at(int i) const { return {array, index, field, i}; }
};

std::string describe(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return fmt::format("the number {}", j.get<double>());
    default: return fmt::format("the number {}", j.dump());
  }
}

class Reader {
 public:
  explicit Reader(std::string_view origin) : origin_(origin) {}

  [[noreturn]] void fail(const Loc& loc, const std::string& what) const {
    throw Error(fmt::format("{}: {}: {}", origin_, loc.str(), what));
  }

  const json& field(const json& obj, const Loc& loc, const char* name) const {
    auto it = obj.find(name);
    if (it == obj.end()) fail(loc, fmt::format("missing required field \"{}\"", name));
    return *it;
  }
  const json* optional_field(const json& obj, const char* name) const {
    auto it = obj.find(name);
    return it == obj.end() ? nullptr : &*it;
  }

  int64_t integer(const json& j, const Loc& loc) const {
    if (j.is_number_unsigned()) {
      if (j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(loc, fmt::format("integer {} is too large", j.dump()));
      return static_cast<int64_t>(j.get<uint64_t>());
    }
    if (j.is_number_integer()) return j.get<int64_t>();
    if (j.is_number_float()) {
      // nlohmann stores integers beyond 64 bits as floats.
      const double d = j.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) >= 9.2e18)
        fail(loc, fmt::format("integer {} is too large", j.dump()));
      fail(loc, fmt::format("expected an integer, got {}", describe(j)));
    }
    fail(loc, fmt::format("expected an integer, got {}", describe(j)));
  }

  int32_t id(const json& j, const Loc& loc) const {
    const int64_t v = integer(j, loc);
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      fail(loc, fmt::format("id {} is out of range", v));
    return static_cast<int32_t>(v);
  }

  double number(const json& j, const Loc& loc) const {
    if (!j.is_number()) fail(loc, fmt::format("expected a number, got {}", describe(j)));
    return j.get<double>();
  }

  const std::string& string(const json& j, const Loc& loc) const {
    if (!j.is_string()) fail(loc, fmt::format("expected a string, got {}", describe(j)));
    return j.get_ref<const std::string&>();
  }

  const json& array(const json& j, const Loc& loc) const {
    if (!j.is_array()) fail(loc, fmt::format("expected an array, got {}", describe(j)));
    return j;
  }

  const json& object(const json& j, const Loc& loc) const {
    if (!j.is_object()) fail(loc, fmt::format("expected an object, got {}", describe(j)));
    return j;
  }

  std::vector<TensorId> id_list(const json& obj, const Loc& loc, const char* name,
                                bool required) const {
    std::vector<TensorId> out;
    const json* j = required ? &field(obj, loc, name) : optional_field(obj, name);
    if (!j) return out;
    const Loc at = loc.at(name);
    array(*j, at);
    out.reserve(j->size());
    for (size_t i = 0; i < j->size(); ++i) out.push_back(id((*j)[i], at.at(static_cast<int>(i))));
    return out;
  }

  Tensor tensor(const json& j, int index) const {
    const Loc loc{"tensors", index};
    object(j, loc);
    Tensor t;
    const int64_t id_value = integer(field(j, loc, "id"), loc.at("id"));
    if (id_value != index)
      fail(loc.at("id"), fmt::format("id out of order: expected {} (its index), got {}", index, id_value));
    t.bytes = integer(field(j, loc, "bytes"), loc.at("bytes"));
    if (t.bytes <= 0) fail(loc.at("bytes"), fmt::format("bytes must be > 0, got {}", t.bytes));
    const std::string& kind = string(field(j, loc, "kind"), loc.at("kind"));
    auto k = parse_tensor_kind(kind);
    if (!k)
      fail(loc.at("kind"), fmt::format("bad kind \"{}\" (expected param, buffer, optimizer_state, "
                                       "input, activation, gradient or temp)",
                                       kind));
    t.kind = *k;
    if (const json* name = optional_field(j, "name")) t.name = string(*name, loc.at("name"));
    if (const json* dtype = optional_field(j, "dtype")) t.dtype = string(*dtype, loc.at("dtype"));
    if (const json* shape = optional_field(j, "shape")) {
      array(*shape, loc.at("shape"));
      for (size_t i = 0; i < shape->size(); ++i)
        t.shape.push_back(integer((*shape)[i], loc.at("shape").at(static_cast<int>(i))));
    }
    return t;
  }

  Op op(const json& j, int index) const {
    const Loc loc{"ops", index};
    object(j, loc);
    Op op;
    const int64_t id_value = integer(field(j, loc, "id"), loc.at("id"));
    if (id_value != index)
      fail(loc.at("id"), fmt::format("id out of order: expected {} (its index), got {}", index, id_value));
    op.type = string(field(j, loc, "type"), loc.at("type"));
    op.inputs = id_list(j, loc, "inputs", true);
    op.outputs = id_list(j, loc, "outputs", true);
    op.updates = id_list(j, loc, "updates", false);
    if (const json* phase = optional_field(j, "phase")) {
      const std::string& p = string(*phase, loc.at("phase"));
      auto parsed = parse_phase(p);
      if (!parsed)
        fail(loc.at("phase"), fmt::format("bad phase \"{}\" (expected forward, backward or update)", p));
      op.phase = *parsed;
    }
    if (const json* v = optional_field(j, "time_us")) op.time_us = number(*v, loc.at("time_us"));
    if (const json* v = optional_field(j, "flops")) op.flops = number(*v, loc.at("flops"));
    if (const json* v = optional_field(j, "bytes_accessed"))
      op.bytes_accessed = number(*v, loc.at("bytes_accessed"));
    if (const json* v = optional_field(j, "workspace_bytes"))
      op.workspace_bytes = integer(*v, loc.at("workspace_bytes"));
    if (const json* name = optional_field(j, "name")) op.name = string(*name, loc.at("name"));
    return op;
  }

  Graph document(const json& doc) const {
    const Loc top{};
    object(doc, top);
    const std::string& format = string(field(doc, top, "format"), Loc{}.at("format"));
    if (format != "swapadvisor-graph")
      fail(Loc{}.at("format"),
           fmt::format("wrong format \"{}\" (expected \"swapadvisor-graph\")", format));
    const int64_t version = integer(field(doc, top, "version"), Loc{}.at("version"));
    if (version != 1)
      fail(Loc{}.at("version"), fmt::format("unsupported version {} (this reader supports 1)", version));
    Graph g;
    if (const json* name = optional_field(doc, "name")) g.name = string(*name, Loc{}.at("name"));
    if (const json* source = optional_field(doc, "source")) g.source = string(*source, Loc{}.at("source"));
    const json& tensors = array(field(doc, top, "tensors"), Loc{}.at("tensors"));
    g.tensors.reserve(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) g.tensors.push_back(tensor(tensors[i], static_cast<int>(i)));
    const json& ops = array(field(doc, top, "ops"), Loc{}.at("ops"));
    g.ops.reserve(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) g.ops.push_back(op(ops[i], static_cast<int>(i)));
    return g;
  }

 private:
  std::string_view origin_;
};

std::string strip_nlohmann_prefix(const std::string& what) {
  // "[json.exception.parse_error.101] parse error at line 1, column 7: ..."
  auto close = what.find("] ");
  return close == std::string::npos ? what : what.substr(close + 2);
}

void append_ids(std::string& out, const char* name, const std::vector<TensorId>& ids) {
  out += fmt::format(",\"{}\":[{}]", name, fmt::join(ids, ","));
}

// Shortest text that reads back as the same double.
std::string number_text(double v) { return json(v).dump(); }

}  // namespace

Graph parse_graph(std::string_view text, std::string_view origin) {
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    throw Error(fmt::format("{}: invalid JSON: {}", origin, strip_nlohmann_prefix(e.what())));
  }
  Graph g = Reader(origin).document(doc);
  validate_graph(g, origin);
  return g;
}

Graph read_graph(const std::string& path) { return parse_graph(read_file(path), path); }

std::string graph_to_json(const Graph& g) {
  std::string out;
  out.reserve(128 + 96 * g.tensors.size() + 160 * g.ops.size());
  out += fmt::format("{{\"format\":\"swapadvisor-graph\",\"version\":1,\"name\":{},\"source\":{},\n",
                     json(g.name).dump(), json(g.source).dump());
  out += "\"tensors\":[\n";
  for (int t = 0; t < g.num_tensors(); ++t) {
    const Tensor& x = g.tensors[t];
    out += fmt::format("{{\"id\":{},\"bytes\":{},\"kind\":\"{}\"", t, x.bytes, to_string(x.kind));
    if (!x.name.empty()) out += ",\"name\":" + json(x.name).dump();
    if (!x.shape.empty()) out += fmt::format(",\"shape\":[{}]", fmt::join(x.shape, ","));
    if (!x.dtype.empty()) out += ",\"dtype\":" + json(x.dtype).dump();
    out += t + 1 < g.num_tensors() ? "},\n" : "}\n";
  }
  out += "],\n\"ops\":[\n";
  for (int o = 0; o < g.num_ops(); ++o) {
    const Op& op = g.ops[o];
    out += fmt::format("{{\"id\":{},\"type\":{}", o, json(op.type).dump());
    if (op.phase != Phase::kUnknown) out += fmt::format(",\"phase\":\"{}\"", to_string(op.phase));
    append_ids(out, "inputs", op.inputs);
    append_ids(out, "outputs", op.outputs);
    if (!op.updates.empty()) append_ids(out, "updates", op.updates);
    if (op.time_us) out += ",\"time_us\":" + number_text(*op.time_us);
    if (op.flops) out += ",\"flops\":" + number_text(*op.flops);
    if (op.bytes_accessed) out += ",\"bytes_accessed\":" + number_text(*op.bytes_accessed);
    if (op.workspace_bytes) out += fmt::format(",\"workspace_bytes\":{}", op.workspace_bytes);
    if (!op.name.empty()) out += ",\"name\":" + json(op.name).dump();
    out += o + 1 < g.num_ops() ? "},\n" : "}\n";
  }
  out += "]}\n";
  return out;
}

void write_graph(const Graph& g, const std::string& path) { write_file(path, graph_to_json(g)); }

}  // namespace sa
