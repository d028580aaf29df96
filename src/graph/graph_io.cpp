#include "graph/graph_io.h"

#include <algorithm>

#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "graph/validate.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/json.h"

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
    if (field) {
      if (!s.empty()) s += '.';
      s += field;  // (not "." + std::string(field): g++ 12 warns, -Wrestrict)
    }
    if (sub >= 0) s += fmt::format("[{}]", sub);
    return s.empty() ? "(document)" : s;
  }
  Loc at(const char* f) const { return {array, index, f, -1}; }
  Loc at(int i) const { return {array, index, field, i}; }
};

// Where an integer lies relative to an allowed range [lo, hi].
enum class Range { kBelow, kInside, kAbove };
struct Integer {
  Range range;
  int64_t value;  // meaningful when inside
};

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

  // An integer, placed relative to [lo, hi]. Whatever is not an integer
  // (a string, 1.5, 1.0) fails here; so do integral values written as
  // floating-point numbers (1e30), unless they lie outside the range, which
  // the caller reports instead: it is the more useful diagnosis.
  Integer integer_in(const json& j, const Loc& loc, int64_t lo, int64_t hi) const {
    if (j.is_number_unsigned()) {
      const uint64_t u = j.get<uint64_t>();
      if (hi < 0 || u > static_cast<uint64_t>(hi)) return {Range::kAbove, 0};
      if (static_cast<int64_t>(u) < lo) return {Range::kBelow, 0};
      return {Range::kInside, static_cast<int64_t>(u)};
    }
    if (j.is_number_integer()) {
      const int64_t v = j.get<int64_t>();
      if (v < lo) return {Range::kBelow, 0};
      if (v > hi) return {Range::kAbove, 0};
      return {Range::kInside, v};
    }
    if (j.is_number_float()) {
      // Also where nlohmann puts integers too large for 64 bits.
      const double d = j.get<double>();
      if (std::isfinite(d) && d == std::floor(d)) {
        if (d < static_cast<double>(lo)) return {Range::kBelow, 0};
        if (d > static_cast<double>(hi)) return {Range::kAbove, 0};
      }
    }
    fail(loc, fmt::format("expected an integer, got {}", describe(j)));
  }

  int64_t any_integer(const json& j, const Loc& loc) const {
    const Integer v = integer_in(j, loc, std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::max());
    if (v.range != Range::kInside)
      fail(loc, fmt::format("integer {} does not fit in 64 bits", j.dump()));
    return v.value;
  }

  // A dense id that must equal its index in "tensors" or "ops".
  void check_id(const json& obj, const Loc& loc, int index) const {
    const json& j = field(obj, loc, "id");
    if (integer_in(j, loc.at("id"), index, index).range != Range::kInside)
      fail(loc.at("id"),
           fmt::format("id out of order: expected {} (its index), got {}", index, j.dump()));
  }

  double number(const json& j, const Loc& loc) const {
    if (!j.is_number()) fail(loc, fmt::format("expected a number, got {}", describe(j)));
    return j.get<double>();
  }

  bool boolean(const json& j, const Loc& loc) const {
    if (!j.is_boolean()) fail(loc, fmt::format("expected true or false, got {}", describe(j)));
    return j.get<bool>();
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

  // Tensor ids in an op's list. Ids within the graph's range are checked
  // further by validate_graph(); one outside it is reported here, where the
  // number as written is still at hand.
  std::vector<TensorId> id_list(const json& obj, const Loc& loc, const char* name, bool required,
                                int num_tensors) const {
    std::vector<TensorId> out;
    const json* j = required ? &field(obj, loc, name) : optional_field(obj, name);
    if (!j) return out;
    const Loc at = loc.at(name);
    array(*j, at);
    out.reserve(j->size());
    for (size_t i = 0; i < j->size(); ++i) {
      const json& v = (*j)[i];
      const Loc item = at.at(static_cast<int>(i));
      const Integer id = integer_in(v, item, 0, num_tensors - 1);
      if (id.range != Range::kInside)
        fail(item,
             fmt::format("unknown tensor id {} (the graph has {} tensors)", v.dump(), num_tensors));
      out.push_back(static_cast<TensorId>(id.value));
    }
    return out;
  }

  Tensor tensor(const json& j, int index) const {
    const Loc loc{"tensors", index};
    object(j, loc);
    Tensor t;
    check_id(j, loc, index);
    const json& bytes = field(j, loc, "bytes");
    const Integer b = integer_in(bytes, loc.at("bytes"), 1, kMaxBytes);
    if (b.range == Range::kBelow)
      fail(loc.at("bytes"), fmt::format("bytes must be > 0, got {}", bytes.dump()));
    if (b.range == Range::kAbove)
      fail(loc.at("bytes"),
           fmt::format("{} bytes is over the limit of 2^50 (1 PiB)", bytes.dump()));
    t.bytes = b.value;
    const std::string& kind = string(field(j, loc, "kind"), loc.at("kind"));
    auto k = parse_tensor_kind(kind);
    if (!k)
      fail(loc.at("kind"), fmt::format("bad kind {} (expected param, buffer, optimizer_state, "
                                       "input, activation, gradient or temp)",
                                       quote(kind)));
    t.kind = *k;
    if (const json* name = optional_field(j, "name")) t.name = string(*name, loc.at("name"));
    if (const json* dtype = optional_field(j, "dtype")) t.dtype = string(*dtype, loc.at("dtype"));
    if (const json* shape = optional_field(j, "shape")) {
      array(*shape, loc.at("shape"));
      for (size_t i = 0; i < shape->size(); ++i)
        t.shape.push_back(any_integer((*shape)[i], loc.at("shape").at(static_cast<int>(i))));
    }
    return t;
  }

  Op op(const json& j, int index, int num_tensors) const {
    const Loc loc{"ops", index};
    object(j, loc);
    Op op;
    check_id(j, loc, index);
    op.type = string(field(j, loc, "type"), loc.at("type"));
    // The sa:: namespace is the collectives' that --data-parallel adds in
    // memory (graph.h); read from a file they would take collective
    // semantics silently.
    if (op.type.rfind("sa::", 0) == 0)
      fail(loc.at("type"),
           fmt::format("{} is reserved for the collectives --data-parallel adds; a graph file "
                       "cannot name an op type in the sa:: namespace",
                       quote(op.type)));
    op.inputs = id_list(j, loc, "inputs", true, num_tensors);
    op.outputs = id_list(j, loc, "outputs", true, num_tensors);
    op.updates = id_list(j, loc, "updates", false, num_tensors);
    if (const json* phase = optional_field(j, "phase")) {
      const std::string& p = string(*phase, loc.at("phase"));
      auto parsed = parse_phase(p);
      if (!parsed)
        fail(loc.at("phase"),
             fmt::format("bad phase {} (expected forward, backward or update)", quote(p)));
      op.phase = *parsed;
    }
    if (const json* v = optional_field(j, "time_us")) op.time_us = number(*v, loc.at("time_us"));
    if (const json* v = optional_field(j, "flops")) op.flops = number(*v, loc.at("flops"));
    if (const json* v = optional_field(j, "bytes_accessed"))
      op.bytes_accessed = number(*v, loc.at("bytes_accessed"));
    if (const json* v = optional_field(j, "workspace_bytes")) {
      const Integer w = integer_in(*v, loc.at("workspace_bytes"), 0, kMaxBytes);
      if (w.range != Range::kInside)
        fail(loc.at("workspace_bytes"),
             fmt::format("must be between 0 and 2^50, got {}", v->dump()));
      op.workspace_bytes = w.value;
    }
    if (const json* name = optional_field(j, "name")) op.name = string(*name, loc.at("name"));
    if (const json* v = optional_field(j, "recompute"))
      op.recompute = boolean(*v, loc.at("recompute"));
    if (const json* v = optional_field(j, "random")) op.random = boolean(*v, loc.at("random"));
    if (const json* v = optional_field(j, "recompute_skips_updates"))
      op.recompute_skips_updates = boolean(*v, loc.at("recompute_skips_updates"));
    if (const json* v = optional_field(j, "dtype")) {
      const std::string& d = string(*v, loc.at("dtype"));
      auto math = parse_math_type(d);
      if (!math)
        fail(loc.at("dtype"),
             fmt::format("bad dtype {} (expected float32, tf32, float16, bfloat16 or float8)",
                         quote(d)));
      op.math = *math;
    }
    return op;
  }

  Graph document(const json& doc) const {
    const Loc top{};
    object(doc, top);
    const std::string& format = string(field(doc, top, "format"), top.at("format"));
    if (format != "swapadvisor-graph")
      fail(top.at("format"),
           fmt::format("wrong format {} (expected \"swapadvisor-graph\")", quote(format)));
    const json& version = field(doc, top, "version");
    if (integer_in(version, top.at("version"), 1, 1).range != Range::kInside)
      fail(top.at("version"),
           fmt::format("unsupported version {} (this reader supports 1)", version.dump()));
    Graph g;
    if (const json* name = optional_field(doc, "name")) g.name = string(*name, top.at("name"));
    if (const json* source = optional_field(doc, "source"))
      g.source = string(*source, top.at("source"));
    const json& tensors = array(field(doc, top, "tensors"), top.at("tensors"));
    if (tensors.size() > static_cast<size_t>(std::numeric_limits<TensorId>::max()))
      fail(top.at("tensors"), "too many tensors");
    g.tensors.reserve(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i)
      g.tensors.push_back(tensor(tensors[i], static_cast<int>(i)));
    const json& ops = array(field(doc, top, "ops"), top.at("ops"));
    if (ops.size() > static_cast<size_t>(std::numeric_limits<OpId>::max()))
      fail(top.at("ops"), "too many ops");
    g.ops.reserve(ops.size());
    for (size_t i = 0; i < ops.size(); ++i)
      g.ops.push_back(op(ops[i], static_cast<int>(i), g.num_tensors()));
    return g;
  }

 private:
  std::string_view origin_;
};

void append_ids(std::string& out, const char* name, const std::vector<TensorId>& ids) {
  out += fmt::format(",\"{}\":[{}]", name, fmt::join(ids, ","));
}

// Shortest text that reads back as the same double.
std::string number_text(double v) {
  return json(v).dump();
}

}  // namespace

Graph parse_graph(std::string_view text, std::string_view origin) {
  const json doc = parse_json(text, origin);
  Graph g = Reader(origin).document(doc);
  validate_graph(g, origin);
  return g;
}

Graph read_graph(const std::string& path) {
  return parse_graph(read_file(path), path);
}

std::string graph_to_json(const Graph& g) {
  std::string out;
  out.reserve(128 + 96 * g.tensors.size() + 160 * g.ops.size());
  // The lowest minor version whose fields the graph uses (docs/graph-format.md):
  // 1.3 for recompute_skips_updates, 1.2 for an op's dtype, 1.1 for
  // recompute/random.
  const bool uses_skips = std::any_of(g.ops.begin(), g.ops.end(),
                                      [](const Op& op) { return op.recompute_skips_updates; });
  const bool uses_math = std::any_of(g.ops.begin(), g.ops.end(),
                                     [](const Op& op) { return op.math != MathType::kFp32; });
  const bool uses_recompute = std::any_of(g.ops.begin(), g.ops.end(),
                                          [](const Op& op) { return !op.recompute || op.random; });
  const int minor = uses_skips ? 3 : uses_math ? 2 : uses_recompute ? 1 : 0;
  out +=
      fmt::format("{{\"format\":\"swapadvisor-graph\",\"version\":1,{}\"name\":{},\"source\":{},\n",
                  minor ? fmt::format("\"minor_version\":{},", minor) : "", json(g.name).dump(),
                  json(g.source).dump());
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
    if (!op.recompute) out += ",\"recompute\":false";
    if (op.random) out += ",\"random\":true";
    if (op.recompute_skips_updates) out += ",\"recompute_skips_updates\":true";
    if (op.math != MathType::kFp32) out += fmt::format(",\"dtype\":\"{}\"", to_string(op.math));
    out += o + 1 < g.num_ops() ? "},\n" : "}\n";
  }
  out += "]}\n";
  return out;
}

void write_graph(const Graph& g, const std::string& path) {
  write_file(path, graph_to_json(g));
}

}  // namespace sa
