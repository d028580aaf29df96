#include "runtime/aten/aten_program.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "runtime/aten/aten_allowlist.h"
#include "util/checked.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/json.h"
#include "util/limits.h"

namespace sa::runtime {
namespace {

using nlohmann::json;

// The largest number of elements a view may have (of any dtype), and the
// largest byte a view may reach: kMaxBytes (2^50), so that no product or sum
// of its sizes, strides and offset overflows, here or in libtorch.
constexpr int64_t kMaxViewExtent = kMaxBytes;

// A view's geometry, checked: sizes and strides whole numbers >= 0 of the
// same length, an offset >= 0, and neither the element count nor the
// highest element over kMaxViewExtent.
struct Geometry {
  int64_t numel = 1;
  int64_t end_bytes = 0;  // the highest byte it touches, plus one (0 for an empty view)
};

Geometry geometry(const FieldReader& r, const json& v, const std::string& where, int elem,
                  bool has_offset) {
  const json& sizes = r.array(r.field(v, where, "sizes"), where + ".sizes");
  const json& strides = r.array(r.field(v, where, "strides"), where + ".strides");
  if (sizes.size() != strides.size())
    r.fail(where, fmt::format("{} sizes but {} strides", sizes.size(), strides.size()));
  const int64_t offset =
      has_offset ? r.integer(r.field(v, where, "offset"), where + ".offset", 0, kMaxViewExtent) : 0;
  Geometry g;
  int64_t last = offset;  // the highest element, when none of the sizes is 0
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t n = r.integer(sizes[i], fmt::format("{}.sizes[{}]", where, i), 0, kMaxViewExtent);
    const int64_t s =
        r.integer(strides[i], fmt::format("{}.strides[{}]", where, i), 0, kMaxViewExtent);
    const auto numel = checked_mul(g.numel, n);
    if (!numel || *numel > kMaxViewExtent)
      r.fail(where + ".sizes", fmt::format("the view has over {} elements", kMaxViewExtent));
    g.numel = *numel;
    // (n - 1) * s is at most 2^100 before the check: compute it checked.
    const auto reach = n == 0 ? std::optional<int64_t>(0) : checked_mul_add(n - 1, s, last);
    if (!reach || *reach > kMaxViewExtent)
      r.fail(where + ".strides",
             fmt::format("the view reaches past element {} of its storage", kMaxViewExtent));
    last = *reach;
  }
  // last <= 2^50 and elem <= 16: no overflow.
  g.end_bytes = g.numel == 0 ? 0 : (last + 1) * elem;
  return g;
}

class Checker {
 public:
  Checker(const FieldReader& r, const Graph& g, AtenProgram& p) : r_(r), g_(g), p_(p) {}

  // Visits every tensor view (and tensor without storage) in an encoded
  // value; `where` names it for errors.
  void views(const json& v, OpId o, const std::string& where, std::set<TensorId>* seen) {
    if (v.is_array()) {
      for (size_t i = 0; i < v.size(); ++i)
        views(v[i], o, fmt::format("{}[{}]", where, i), seen);
      return;
    }
    if (!v.is_object()) return;
    const std::string at = fmt::format("ops[{}] ({}): {}", o, p_.ops[o].qualname, where);
    if (v.contains("empty")) {
      const Geometry geo = geometry(r_, v, at, dtype(v, at), false);
      if (geo.numel != 0)
        r_.fail(at, fmt::format("a tensor without storage (\"empty\") has {} elements, not 0",
                                geo.numel));
      return;
    }
    if (!v.contains("tensor")) return;
    const TensorId t =
        static_cast<TensorId>(r_.integer(v.at("tensor"), at + ".tensor", 0, g_.num_tensors() - 1));
    const int64_t end = geometry(r_, v, at, dtype(v, at), true).end_bytes;
    if (end > g_.tensors[t].bytes)
      r_.fail(at, fmt::format("the view ends at byte {}, past tensor {}'s {} bytes", end, t,
                              g_.tensors[t].bytes));
    if (seen) seen->insert(t);
  }

  [[noreturn]] void fail(OpId o, const std::string& where, const std::string& what) const {
    r_.fail(fmt::format("ops[{}] ({}): {}", o, p_.ops[o].qualname, where), what);
  }

 private:
  int dtype(const json& v, const std::string& at) const {
    const std::string& name = r_.string(r_.field(v, at, "dtype"), at + ".dtype");
    const int elem = dtype_size(name);
    if (elem == 0) r_.fail(at + ".dtype", fmt::format("unknown dtype {}", quote(name)));
    return elem;
  }

  const FieldReader& r_;
  const Graph& g_;
  AtenProgram& p_;
};

// ATen's overload names ("Tensor", "dim_IntList", "Scalar_out") are short
// identifiers.
constexpr size_t kMaxOverloadName = 64;

// Note [Step scalars]: more than any optimizer's step has, fewer than would
// cost memory.
constexpr size_t kMaxStepScalars = 1 << 16;

// An op's "step_scalars": [[argument, slot], ...], each argument a number in
// args or kwargs, named once.
std::vector<StepScalarUse> step_scalar_uses(const FieldReader& r, const json& uses,
                                            const AtenOp& op, const std::string& where,
                                            size_t slots) {
  std::vector<StepScalarUse> out;
  const json& a = r.array(uses, where);
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", where, i);
    const json& u = r.array(a[i], at);
    if (u.size() != 2) r.fail(at, fmt::format("expected [argument, slot], got {}", describe(u)));
    StepScalarUse s;
    const json* value = nullptr;
    if (u[0].is_string()) {
      s.kwarg = u[0].get<std::string>();
      if (!op.kwargs.contains(s.kwarg))
        r.fail(at, fmt::format("the op has no keyword argument {}", quote(s.kwarg)));
      value = &op.kwargs.at(s.kwarg);
    } else {
      if (op.args.empty()) r.fail(at, "the op has no positional arguments");
      s.position = static_cast<int>(
          r.integer(u[0], at + "[0]", 0, static_cast<int64_t>(op.args.size()) - 1));
      value = &op.args[static_cast<size_t>(s.position)];
    }
    if (!value->is_number())
      r.fail(at, fmt::format("the argument is {}, not a number", describe(*value)));
    if (slots == 0) r.fail(at, "the file gives no step_scalars.values");
    s.slot = static_cast<int>(r.integer(u[1], at + "[1]", 0, static_cast<int64_t>(slots) - 1));
    for (const StepScalarUse& x : out)
      if (x.position == s.position && x.kwarg == s.kwarg)
        r.fail(at, "names an argument a second time");
    out.push_back(std::move(s));
  }
  return out;
}

bool is_overload_name(std::string_view s) {
  return !s.empty() && s.size() <= kMaxOverloadName && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}
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

namespace {

// Op o of an exec file (j, at ops[o]), checked against the graph's op o
// (Note [ATen allow-list], Note [Step scalars], Note [Skipped steps]).
AtenOp read_op(const FieldReader& r, const json& j, const Graph& g, OpId o,
               size_t num_step_scalars) {
  const std::string where = fmt::format("ops[{}]", o);
  AtenOp op;
  r.integer(r.field(j, where, "id"), where + ".id", o, o);
  op.qualname = r.string(r.field(j, where, "op"), where + ".op");
  const auto colon = op.qualname.find("::");
  const auto dot = op.qualname.rfind('.');
  if (colon == std::string::npos || dot == std::string::npos || dot < colon)
    r.fail(where + ".op",
           fmt::format("operator {} is not NAMESPACE::NAME.OVERLOAD", quote(op.qualname)));
  op.name = op.qualname.substr(0, dot);
  op.overload = op.qualname.substr(dot + 1);
  // Note [ATen allow-list]: before anything else names the op (its
  // qualname appears in every later error, so it is short by then).
  if (!find_allowed_aten_op(op.name))
    r.fail(where + ".op",
           fmt::format("operator {} is not one that swapadvisor-capture records, so an exec "
                       "file may not run it (Note [ATen allow-list], docs/capture.md)",
                       quote(op.qualname)));
  if (!is_overload_name(op.overload))
    r.fail(where + ".op",
           fmt::format("operator {}: the overload is not a name of at most {} letters, digits "
                       "and underscores",
                       quote(op.qualname), kMaxOverloadName));
  if (op.overload == "default") op.overload.clear();
  if (g.ops[o].type != op.name)
    r.fail(where + ".op", fmt::format("{} but the graph's op {} is {}", quote(op.qualname), o,
                                      quote(g.ops[o].type)));
  op.args = r.array(r.field(j, where, "args"), where + ".args");
  const json* kwargs = FieldReader::find(j, "kwargs");
  op.kwargs = kwargs ? r.object(*kwargs, where + ".kwargs") : json::object();
  op.results = r.array(r.field(j, where, "results"), where + ".results");
  if (const json* random = FieldReader::find(j, "random")) {
    if (!random->is_boolean())
      r.fail(where + ".random", fmt::format("expected true or false, got {}", describe(*random)));
    op.random = random->get<bool>();
  }
  if (const json* uses = FieldReader::find(j, "step_scalars"))
    op.step_scalars = step_scalar_uses(r, *uses, op, where + ".step_scalars", num_step_scalars);
  if (const json* flag = FieldReader::find(j, "skip_if_nonzero")) {
    // Note [Skipped steps]: a float32 input of the graph's op.
    const std::string at = where + ".skip_if_nonzero";
    const auto t = static_cast<TensorId>(r.integer(*flag, at, 0, g.num_tensors() - 1));
    const std::vector<TensorId>& in = g.ops[o].inputs;
    if (std::find(in.begin(), in.end(), t) == in.end())
      r.fail(at, fmt::format("tensor {} is not an input of the graph's op {}", t, o));
    if (g.tensors[t].dtype != "float32")
      r.fail(at, fmt::format("tensor {} is {}, not float32", t,
                             g.tensors[t].dtype.empty() ? "of no dtype" : g.tensors[t].dtype));
    op.skip_if_nonzero = t;
  }
  return op;
}

}  // namespace

AtenProgram parse_aten_program(std::string_view text, const std::string& path, const Graph& g) {
  const json doc = parse_json(text, path);
  const FieldReader r(path);
  AtenProgram p;
  p.origin = path;
  const std::string& format = r.string(r.field(doc, "", "format"), "format");
  if (format != "swapadvisor-exec")
    r.fail("format",
           fmt::format("not an exec file ({}, expected \"swapadvisor-exec\")", quote(format)));
  const json& version = r.field(doc, "", "version");
  if (json_integer(version, 1, 1) != 1)
    r.fail("version", fmt::format("unsupported exec file version {}", describe(version)));
  const json& gj = r.field(doc, "", "graph");
  p.graph_name = r.string(r.field(gj, "graph", "name"), "graph.name");
  const json& num_ops = r.field(gj, "graph", "ops");
  const json& num_tensors = r.field(gj, "graph", "tensors");
  if (p.graph_name != g.name || json_integer(num_ops, 0, INT32_MAX) != g.num_ops() ||
      json_integer(num_tensors, 0, INT32_MAX) != g.num_tensors())
    r.fail("graph", fmt::format("made for graph {} ({} ops, {} tensors), not for {} ({} ops, {} "
                                "tensors)",
                                quote(p.graph_name), num_ops.dump(), num_tensors.dump(),
                                quote(g.name), g.num_ops(), g.num_tensors()));
  if (const std::string* v = r.optional_string(doc, "", "torch_version")) p.torch_version = *v;
  p.capture_device = "cpu";
  if (const std::string* v = r.optional_string(doc, "", "capture_device")) p.capture_device = *v;
  p.storage_bytes.assign(g.num_tensors(), 0);
  const json& ts = r.array(r.field(doc, "", "tensors"), "tensors");
  if (static_cast<int64_t>(ts.size()) != g.num_tensors())
    r.fail("tensors", fmt::format("{} tensors, the graph has {}", ts.size(), g.num_tensors()));
  for (int i = 0; i < g.num_tensors(); ++i) {
    const std::string where = fmt::format("tensors[{}]", i);
    r.integer(r.field(ts[i], where, "id"), where + ".id", i, i);
    p.storage_bytes[i] = r.integer(r.field(ts[i], where, "storage_bytes"), where + ".storage_bytes",
                                   1, g.tensors[i].bytes);
  }
  if (const json* ss = FieldReader::find(doc, "step_scalars")) {
    const json& vals = r.array(r.field(r.object(*ss, "step_scalars"), "step_scalars", "values"),
                               "step_scalars.values");
    if (vals.size() > kMaxStepScalars)
      r.fail("step_scalars.values",
             fmt::format("{} values, more than {}", vals.size(), kMaxStepScalars));
    for (size_t i = 0; i < vals.size(); ++i) {
      if (!vals[i].is_number())
        r.fail(fmt::format("step_scalars.values[{}]", i),
               fmt::format("expected a number, got {}", describe(vals[i])));
      p.step_scalars.push_back(vals[i].get<double>());
    }
  }
  const json& ops = r.array(r.field(doc, "", "ops"), "ops");
  if (static_cast<int64_t>(ops.size()) != g.num_ops())
    r.fail("ops", fmt::format("{} ops, the graph has {}", ops.size(), g.num_ops()));
  p.ops.resize(ops.size());
  for (int o = 0; o < g.num_ops(); ++o)
    p.ops[o] = read_op(r, ops[o], g, o, p.step_scalars.size());
  const json& loss = r.field(doc, "", "loss");
  const json& after = r.field(loss, "loss", "after_op");
  p.loss_after_op = after.is_null()
                        ? kNoOp
                        : static_cast<OpId>(r.integer(after, "loss.after_op", 0, g.num_ops() - 1));
  p.loss_view = r.field(loss, "loss", "value");
  if (const json* captured = FieldReader::find(loss, "captured")) {
    if (!captured->is_number())
      r.fail("loss.captured", fmt::format("expected a number, got {}", describe(*captured)));
    p.captured_loss = captured->get<double>();
  }

  if (const json* rng = FieldReader::find(doc, "rng"))
    p.rng_seed = static_cast<uint64_t>(
        r.integer(r.field(r.object(*rng, "rng"), "rng", "seed"), "rng.seed", 0, INT64_MAX));

  // Every view lies inside its tensor, and names only tensors the op
  // accesses; results name exactly the op's outputs.
  Checker c(r, g, p);
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
    if (!p.loss_view.is_object() || !p.loss_view.contains("tensor"))
      r.fail("loss.value", fmt::format("expected a tensor view, got {}", describe(p.loss_view)));
    c.views(p.loss_view, p.loss_after_op, "loss.value", nullptr);
  }
  return p;
}

AtenProgram read_aten_program(const std::string& path, const Graph& g) {
  return parse_aten_program(read_file(path), path, g);
}

AtenProgram with_collectives(const AtenProgram& p, const Graph& g) {
  AtenProgram out = p;
  out.ops.clear();
  out.ops.reserve(g.ops.size());
  out.loss_after_op = kNoOp;
  size_t next = 0;  // p's next op
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const Op& op = g.ops[o];
    if (!is_collective(op)) {
      if (next >= p.ops.size())
        throw Error(fmt::format("{}: the graph has more ops than the exec file's {}", p.origin,
                                p.ops.size()));
      if (static_cast<OpId>(next) == p.loss_after_op) out.loss_after_op = o;
      out.ops.push_back(p.ops[next++]);
      continue;
    }
    if (op.type != kCollectiveTypes[0])
      throw Error(fmt::format(
          "op {} ({}): the ATen kernels run data-parallel plans with all-reduce only; a "
          "--shard-optimizer plan shards the optimizer's tensors, which the exec file does not "
          "describe (plan without --shard-optimizer)",
          o, op.type));
    AtenOp c;
    c.qualname = c.name = op.type;
    c.args = json::array();
    for (TensorId t : op.updates) {
      const std::string& dtype = g.tensors[t].dtype;
      const int elem = dtype_size(dtype);
      if (dtype != "float32" && dtype != "float64" && dtype != "float16" && dtype != "bfloat16")
        throw Error(
            fmt::format("op {} ({}): tensor {} ('{}') has dtype '{}': only floating "
                        "point gradients are averaged",
                        o, op.type, t, g.tensors[t].name, dtype));
      c.args.push_back({{"tensor", t},
                        {"dtype", dtype},
                        {"sizes", {p.storage_bytes[t] / elem}},
                        {"strides", {1}},
                        {"offset", 0}});
    }
    c.results = json::array();
    out.ops.push_back(std::move(c));
  }
  if (next != p.ops.size())
    throw Error(fmt::format("{}: the graph has {} ops besides its collectives, the exec file {}",
                            p.origin, next, p.ops.size()));
  return out;
}

}  // namespace sa::runtime
