// Exec-file values decoded for libtorch, and libtorch schemas read for the
// access check (runtime/aten/aten_values.h).

#include "runtime/aten/aten_values.h"

#include <algorithm>
#include <limits>

#include <ATen/core/jit_type.h>
#include <fmt/format.h>

#include "util/error.h"
#include "util/json.h"

namespace sa::runtime::aten_values {

c10::ScalarType scalar_type(const std::string& d) {
  static const std::pair<const char*, c10::ScalarType> kTypes[] = {
      {"float32", c10::kFloat},
      {"float64", c10::kDouble},
      {"float16", c10::kHalf},
      {"bfloat16", c10::kBFloat16},
      {"int64", c10::kLong},
      {"int32", c10::kInt},
      {"int16", c10::kShort},
      {"int8", c10::kChar},
      {"uint8", c10::kByte},
      {"bool", c10::kBool},
      {"complex64", c10::kComplexFloat},
      {"complex128", c10::kComplexDouble}};
  for (const auto& [name, t] : kTypes)
    if (d == name) return t;
  throw Error(fmt::format("unsupported dtype {}", quote(d)));
}

c10::MemoryFormat memory_format(const std::string& m) {
  if (m == "contiguous_format") return c10::MemoryFormat::Contiguous;
  if (m == "channels_last") return c10::MemoryFormat::ChannelsLast;
  if (m == "channels_last_3d") return c10::MemoryFormat::ChannelsLast3d;
  if (m == "preserve_format") return c10::MemoryFormat::Preserve;
  throw Error(fmt::format("unsupported memory format {}", quote(m)));
}

std::vector<int64_t> ints(const json& j) {
  return j.get<std::vector<int64_t>>();
}

// An encoded value for an error message: at most kMaxExcerpt bytes of its
// JSON (an exec file's argument may be megabytes long).
constexpr size_t kMaxExcerpt = 80;

std::string excerpt(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > kMaxExcerpt)
    s = fmt::format("{}...({} bytes)", s.substr(0, kMaxExcerpt), s.size());
  return s;
}

// libtorch's message, cut to its first kMaxTorchMessage bytes: some quote
// their arguments whole.
constexpr size_t kMaxTorchMessage = 2000;

std::string torch_message(const c10::Error& e) {
  std::string s = e.what_without_backtrace();
  if (s.size() > kMaxTorchMessage)
    s = fmt::format("{}...({} bytes)", s.substr(0, kMaxTorchMessage), s.size());
  return s;
}

double decode_float(const json& v) {
  if (v.is_object()) {
    const std::string s = v.at("float").get<std::string>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    throw Error(fmt::format("bad float {}", quote(s)));
  }
  return v.get<double>();
}

// A Python number as a c10::Scalar: JSON integers are ints, JSON numbers
// with a fraction or exponent are doubles (docs/capture.md).
c10::Scalar number(const json& v) {
  if (v.is_boolean()) return c10::Scalar(v.get<bool>());
  if (v.is_number_integer()) return c10::Scalar(v.get<int64_t>());
  if (v.is_number_float() || (v.is_object() && v.contains("float")))
    return c10::Scalar(decode_float(v));
  if (v.is_object() && v.contains("complex"))
    return c10::Scalar(
        c10::complex<double>(decode_float(v.at("complex")[0]), decode_float(v.at("complex")[1])));
  throw Error(fmt::format("expected a number, got {}", excerpt(v)));
}

// Note [ATen access check]: the schema as runtime/aten/aten_access.h reads it.
bool takes_tensors(const c10::TypePtr& t) {
  using K = c10::TypeKind;
  switch (t->kind()) {
    case K::TensorType:
      return true;
    case K::OptionalType:
      return takes_tensors(t->expectRef<c10::OptionalType>().getElementType());
    case K::ListType:
      return takes_tensors(t->expectRef<c10::ListType>().getElementType());
    default:
      return false;
  }
}

// Tensor(a!) and Tensor(a!)[] (whose write may be on the elements' alias set).
bool writes(const c10::AliasInfo* a) {
  if (!a) return false;
  if (a->isWrite()) return true;
  return std::any_of(a->containedTypes().begin(), a->containedTypes().end(),
                     [](const c10::AliasInfo& c) { return writes(&c); });
}

AtenReturn return_kind(const c10::TypePtr& t) {
  using K = c10::TypeKind;
  if (t->kind() == K::ListType)
    return takes_tensors(t->expectRef<c10::ListType>().getElementType()) ? AtenReturn::kTensorList
                                                                         : AtenReturn::kOther;
  return takes_tensors(t) ? AtenReturn::kTensor : AtenReturn::kOther;
}

AtenSchema describe_schema(const c10::FunctionSchema& fs) {
  AtenSchema s;
  s.name = fs.name() + (fs.overload_name().empty() ? "" : "." + fs.overload_name());
  for (const c10::Argument& a : fs.arguments()) {
    AtenSchemaArgument x;
    x.name = a.name();
    x.type = a.type()->str();
    x.kwarg_only = a.kwarg_only();
    x.has_default = a.default_value().has_value();
    if (a.default_value() && a.default_value()->isBool())
      x.default_bool = a.default_value()->toBool();
    x.takes_tensors = takes_tensors(a.type());
    x.writes = writes(a.alias_info());
    s.arguments.push_back(std::move(x));
  }
  for (const c10::Argument& r : fs.returns())
    s.returns.push_back(return_kind(r.type()));
  return s;
}

}  // namespace sa::runtime::aten_values
