#include "runtime/aten_program.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "util/error.h"
#include "util/file_io.h"
#include "util/json.h"

namespace sa::runtime {
namespace {

using nlohmann::json;

// The highest byte a view touches, plus one (0 for an empty view).
int64_t view_end_bytes(const json& v, int elem) {
  const auto& sizes = v.at("sizes");
  const auto& strides = v.at("strides");
  if (sizes.size() != strides.size()) throw Error("sizes and strides differ in length");
  int64_t last = v.at("offset").get<int64_t>();
  if (last < 0) throw Error("negative storage offset");
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t n = sizes[i].get<int64_t>();
    const int64_t s = strides[i].get<int64_t>();
    if (n < 0) throw Error("negative size");
    if (n == 0) return 0;
    if (s < 0) throw Error("negative stride");
    last += (n - 1) * s;
  }
  return (last + 1) * elem;
}

class Checker {
 public:
  Checker(const std::string& origin, const Graph& g, AtenProgram& p)
      : origin_(origin), g_(g), p_(p) {}

  // Visits every tensor view in an encoded value.
  void views(const json& v, OpId o, const std::string& where, std::set<TensorId>* seen) {
    if (v.is_array()) {
      for (size_t i = 0; i < v.size(); ++i)
        views(v[i], o, fmt::format("{}[{}]", where, i), seen);
      return;
    }
    if (!v.is_object() || !v.contains("tensor")) return;
    try {
      const TensorId t = v.at("tensor").get<TensorId>();
      if (t < 0 || t >= g_.num_tensors())
        throw Error(fmt::format("unknown tensor {} (the graph has {})", t, g_.num_tensors()));
      const int elem = dtype_size(v.at("dtype").get<std::string>());
      if (elem == 0) throw Error(fmt::format("unknown dtype {}", v.at("dtype").dump()));
      const int64_t end = view_end_bytes(v, elem);
      if (end > g_.tensors[t].bytes)
        throw Error(fmt::format("the view ends at byte {}, past tensor {}'s {} bytes", end, t,
                                g_.tensors[t].bytes));
      if (seen) seen->insert(t);
    } catch (const json::exception& e) {
      fail(o, where, e.what());
    } catch (const Error& e) {
      fail(o, where, e.what());
    }
  }

  [[noreturn]] void fail(OpId o, const std::string& where, const std::string& what) {
    throw Error(
        fmt::format("{}: ops[{}] ({}): {}: {}", origin_, o, p_.ops[o].qualname, where, what));
  }

 private:
  const std::string& origin_;
  const Graph& g_;
  AtenProgram& p_;
};

}  // namespace

int dtype_size(const std::string& d) {
  static const std::pair<const char*, int> kSizes[] = {
      {"float32", 4}, {"float64", 8}, {"float16", 2},   {"bfloat16", 2},
      {"int64", 8},   {"int32", 4},   {"int16", 2},     {"int8", 1},
      {"uint8", 1},   {"bool", 1},    {"complex64", 8}, {"complex128", 16}};
  for (const auto& [name, size] : kSizes)
    if (d == name) return size;
  return 0;
}

AtenProgram read_aten_program(const std::string& path, const Graph& g) {
  const json doc = parse_json(read_file(path), path);
  AtenProgram p;
  p.origin = path;
  try {
    if (doc.at("format") != "swapadvisor-exec")
      throw Error(fmt::format("{}: not an exec file (format is {}, expected \"swapadvisor-exec\")",
                              path, doc.at("format").dump()));
    if (doc.at("version") != 1)
      throw Error(
          fmt::format("{}: unsupported exec file version {}", path, doc.at("version").dump()));
    const json& gj = doc.at("graph");
    p.graph_name = gj.at("name").get<std::string>();
    if (p.graph_name != g.name || gj.at("ops").get<int>() != g.num_ops() ||
        gj.at("tensors").get<int>() != g.num_tensors())
      throw Error(
          fmt::format("{}: made for graph {} ({} ops, {} tensors), not for {} ({} ops, {} "
                      "tensors)",
                      path, p.graph_name, gj.at("ops").dump(), gj.at("tensors").dump(), g.name,
                      g.num_ops(), g.num_tensors()));
    p.torch_version = doc.value("torch_version", "");
    p.capture_device = doc.value("capture_device", "cpu");
    p.storage_bytes.assign(g.num_tensors(), 0);
    const json& ts = doc.at("tensors");
    if (static_cast<int>(ts.size()) != g.num_tensors())
      throw Error(
          fmt::format("{}: {} tensors, the graph has {}", path, ts.size(), g.num_tensors()));
    for (int i = 0; i < g.num_tensors(); ++i) {
      if (ts[i].at("id").get<int>() != i)
        throw Error(fmt::format("{}: tensors[{}]: id out of order", path, i));
      const int64_t b = ts[i].at("storage_bytes").get<int64_t>();
      if (b <= 0 || b > g.tensors[i].bytes)
        throw Error(
            fmt::format("{}: tensors[{}]: storage_bytes {} is not in 1..{} (the graph's "
                        "bytes)",
                        path, i, b, g.tensors[i].bytes));
      p.storage_bytes[i] = b;
    }
    const json& ops = doc.at("ops");
    if (static_cast<int>(ops.size()) != g.num_ops())
      throw Error(fmt::format("{}: {} ops, the graph has {}", path, ops.size(), g.num_ops()));
    p.ops.resize(ops.size());
    for (int o = 0; o < g.num_ops(); ++o) {
      const json& j = ops[o];
      AtenOp& op = p.ops[o];
      if (j.at("id").get<int>() != o)
        throw Error(fmt::format("{}: ops[{}]: id out of order", path, o));
      op.qualname = j.at("op").get<std::string>();
      const auto colon = op.qualname.find("::");
      const auto dot = op.qualname.rfind('.');
      if (colon == std::string::npos || dot == std::string::npos || dot < colon)
        throw Error(fmt::format("{}: ops[{}]: operator {} is not NAMESPACE::NAME.OVERLOAD", path, o,
                                quote(op.qualname)));
      op.name = op.qualname.substr(0, dot);
      op.overload = op.qualname.substr(dot + 1);
      if (op.overload == "default") op.overload.clear();
      const std::string type = g.ops[o].type;
      if (type != op.name)
        throw Error(fmt::format("{}: ops[{}]: {} but the graph's op {} is {}", path, o, op.qualname,
                                o, type));
      op.args = j.at("args");
      op.kwargs = j.value("kwargs", json::object());
      op.results = j.at("results");
      op.random = j.value("random", false);
      if (!op.args.is_array() || !op.kwargs.is_object() || !op.results.is_array())
        throw Error(
            fmt::format("{}: ops[{}]: args must be an array, kwargs an object, results an "
                        "array",
                        path, o));
    }
    const json& loss = doc.at("loss");
    p.loss_after_op = loss.at("after_op").is_null() ? kNoOp : loss.at("after_op").get<OpId>();
    p.loss_view = loss.at("value");
    p.captured_loss = loss.value("captured", 0.0);
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: malformed exec file: {}", path, e.what()));
  }

  // Every view lies inside its tensor, and names only tensors the op
  // accesses; results name exactly the op's outputs.
  Checker c(path, g, p);
  for (int o = 0; o < g.num_ops(); ++o) {
    const Op& gop = g.ops[o];
    std::set<TensorId> named, accessed;
    for_each_access(gop, [&](TensorId t, Access) { accessed.insert(t); });
    c.views(p.ops[o].args, o, "args", &named);
    for (const auto& [k, v] : p.ops[o].kwargs.items())
      c.views(v, o, "kwargs." + k, &named);
    std::set<TensorId> created;
    c.views(p.ops[o].results, o, "results", &created);
    for (TensorId t : named)
      if (!accessed.count(t))
        c.fail(o, "args",
               fmt::format("tensor {} is an argument but the graph's op does not access it", t));
    const std::set<TensorId> outputs(gop.outputs.begin(), gop.outputs.end());
    if (created != outputs)
      c.fail(o, "results",
             fmt::format("the results create {} tensors, the graph's op {} outputs", created.size(),
                         outputs.size()));
  }
  if (p.loss_after_op != kNoOp) {
    if (p.loss_after_op < 0 || p.loss_after_op >= g.num_ops())
      throw Error(fmt::format("{}: loss.after_op {} is not an op", path, p.loss_after_op));
    c.views(p.loss_view, p.loss_after_op, "loss.value", nullptr);
  }
  return p;
}

}  // namespace sa::runtime
