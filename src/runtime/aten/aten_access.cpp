#include "runtime/aten/aten_access.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/aten/aten_allowlist.h"
#include "util/error.h"
#include "util/json.h"

namespace sa::runtime {
namespace {

using nlohmann::json;

// Every tensor view in an encoded value (Note [ATen kernels]).
void views_in(const json& v, std::vector<const json*>& out) {
  if (v.is_array()) {
    for (const json& x : v)
      views_in(x, out);
  } else if (v.is_object() && v.contains("tensor")) {
    out.push_back(&v);
  }
}

bool has(const std::vector<TensorId>& v, TensorId t) {
  return std::find(v.begin(), v.end(), t) != v.end();
}

// Whether `name` is one of the space-separated names in `list`.
bool listed(std::string_view list, std::string_view name) {
  while (!list.empty()) {
    const size_t end = std::min(list.find(' '), list.size());
    if (list.substr(0, end) == name) return true;
    list.remove_prefix(std::min(end + 1, list.size()));
  }
  return false;
}

}  // namespace

void check_aten_access(const Graph& g, const AtenProgram& p, OpId o, const AtenSchema& s) {
  const Op& gop = g.ops[o];
  const AtenOp& op = p.ops[o];
  auto fail = [&](const std::string& what) {
    throw Error(fmt::format("{}: ops[{}] ({}): {}", p.origin, o, op.qualname, what));
  };
  const AllowedAtenOp* allowed = find_allowed_aten_op(op.name);
  if (!allowed) fail("not an operator an exec file may run (Note [ATen allow-list])");

  // The arguments as run() passes them: positional ones in order to the
  // arguments that are not keyword-only, then keyword ones by name.
  const size_t n = s.arguments.size();
  std::vector<const json*> given(n, nullptr);
  std::vector<bool> positional(n, false);
  size_t pos = 0;
  for (size_t i = 0; i < n; ++i) {
    const AtenSchemaArgument& a = s.arguments[i];
    if (!a.kwarg_only && pos < op.args.size()) {
      given[i] = &op.args[pos++];
      positional[i] = true;
    } else if (const json* kw = FieldReader::find(op.kwargs, a.name.c_str())) {
      given[i] = kw;
    } else if (!a.has_default) {
      fail(fmt::format("argument {} ({}) is missing and has no default", a.name, a.type));
    }
  }
  if (pos != op.args.size())
    fail(fmt::format("{} positional arguments for a schema with {} ({})", op.args.size(), pos,
                     s.name));
  for (auto kw = op.kwargs.begin(); kw != op.kwargs.end(); ++kw) {
    // (not a structured binding: clang 14 cannot capture one in a lambda)
    const std::string& key = kw.key();
    const auto it = std::find_if(s.arguments.begin(), s.arguments.end(),
                                 [&](const AtenSchemaArgument& a) { return a.name == key; });
    if (it == s.arguments.end())
      fail(fmt::format("keyword argument {} is not an argument of {}", quote(key), s.name));
    if (positional[it - s.arguments.begin()])
      fail(fmt::format("keyword argument {} is also given positionally", quote(key)));
  }

  // Writes the schema does not declare (Note [ATen allow-list]), when the
  // bool argument that enables them is true or not a plain false.
  bool undeclared = !allowed->undeclared_writes.empty();
  if (undeclared && !allowed->undeclared_when.empty()) {
    for (size_t i = 0; i < n; ++i) {
      if (s.arguments[i].name != allowed->undeclared_when) continue;
      if (given[i])
        undeclared = !(given[i]->is_boolean() && !given[i]->get<bool>());
      else
        undeclared = s.arguments[i].default_bool.value_or(true);
    }
  }

  std::vector<const json*> views;
  for (size_t i = 0; i < n; ++i) {
    if (!given[i]) continue;
    const AtenSchemaArgument& a = s.arguments[i];
    views.clear();
    views_in(*given[i], views);
    if (views.empty()) continue;
    const std::string arg = fmt::format("argument {} ({})", a.name, a.type);
    if (!a.takes_tensors) fail(fmt::format("{} is given a tensor", arg));
    const bool writes = a.writes || (undeclared && listed(allowed->undeclared_writes, a.name));
    for (const json* v : views) {
      const std::optional<int64_t> id = json_integer(v->at("tensor"), 0, g.num_tensors() - 1);
      if (!id)
        fail(fmt::format("{} names tensor {}, not a tensor of the graph", arg,
                         describe(v->at("tensor"))));
      const TensorId t = static_cast<TensorId>(*id);
      const std::string& name = g.tensors[t].name;
      const std::string tensor = name.empty() ? fmt::format("tensor {}", t)
                                              : fmt::format("tensor {} ({})", t, quote(name));
      const bool read = has(gop.inputs, t), update = has(gop.updates, t),
                 create = has(gop.outputs, t);
      if (writes && !update && !create)
        fail(fmt::format("{} writes {}, which the graph's op {}", arg, tensor,
                         read ? "only reads" : "does not access"));
      if (!writes && !read && !update)
        fail(fmt::format("{} reads {}, which {}", arg, tensor,
                         create ? "the op creates: it holds nothing before the op writes it"
                                : "the graph's op does not access"));
    }
  }

  // Results: what run() places into the outputs' objects.
  if (op.results.size() > s.returns.size())
    fail(fmt::format("{} results for a schema with {} returns ({})", op.results.size(),
                     s.returns.size(), s.name));
  for (size_t i = 0; i < op.results.size(); ++i) {
    const json& r = op.results[i];
    if (r.is_null()) continue;
    const AtenReturn want = r.is_array() ? AtenReturn::kTensorList : AtenReturn::kTensor;
    if (!r.is_array() && !r.is_object())
      fail(fmt::format("results[{}]: expected a tensor view, a list of them or null, got {}", i,
                       describe(r)));
    if (s.returns[i] != want)
      fail(fmt::format("results[{}]: {} for a return that is not a {}", i,
                       r.is_array() ? "a list" : "a tensor", r.is_array() ? "Tensor[]" : "Tensor"));
  }
}

}  // namespace sa::runtime
