#include "graph/graph.h"

#include <array>
#include <utility>

#include <fmt/format.h>

namespace sa {
namespace {

constexpr std::array<std::pair<TensorKind, std::string_view>, 7> kKindNames{{
    {TensorKind::kParam, "param"},
    {TensorKind::kBuffer, "buffer"},
    {TensorKind::kOptimizerState, "optimizer_state"},
    {TensorKind::kInput, "input"},
    {TensorKind::kActivation, "activation"},
    {TensorKind::kGradient, "gradient"},
    {TensorKind::kTemp, "temp"},
}};

constexpr std::array<std::pair<Phase, std::string_view>, 3> kPhaseNames{{
    {Phase::kForward, "forward"},
    {Phase::kBackward, "backward"},
    {Phase::kUpdate, "update"},
}};

constexpr std::array<std::pair<MathType, std::string_view>, 5> kMathNames{{
    {MathType::kFp32, "float32"},
    {MathType::kTf32, "tf32"},
    {MathType::kFp16, "float16"},
    {MathType::kBf16, "bfloat16"},
    {MathType::kFp8, "float8"},
}};

// An enum value's name in one of the tables above, or `missing`.
template <typename E, size_t N>
std::string_view name_in(const std::array<std::pair<E, std::string_view>, N>& names, E v,
                         std::string_view missing) {
  for (const auto& [value, name] : names)
    if (value == v) return name;
  return missing;
}

// The value a name stands for in one of the tables above.
template <typename E, size_t N>
std::optional<E> value_in(const std::array<std::pair<E, std::string_view>, N>& names,
                          std::string_view s) {
  for (const auto& [value, name] : names)
    if (name == s) return value;
  return std::nullopt;
}

}  // namespace

std::string_view to_string(MathType m) {
  return name_in(kMathNames, m, "?");
}

std::optional<MathType> parse_math_type(std::string_view s) {
  return value_in(kMathNames, s);
}

std::string_view to_string(TensorKind k) {
  return name_in(kKindNames, k, "?");
}

std::string with_article(TensorKind k) {
  const std::string_view name = to_string(k);
  const bool vowel =
      !name.empty() && std::string_view("aeiou").find(name[0]) != std::string_view::npos;
  return std::string(vowel ? "an " : "a ") + std::string(name);
}

std::optional<TensorKind> parse_tensor_kind(std::string_view s) {
  return value_in(kKindNames, s);
}

std::string_view to_string(Phase p) {
  return name_in(kPhaseNames, p, "");
}

std::optional<Phase> parse_phase(std::string_view s) {
  return value_in(kPhaseNames, s);
}

std::string describe_op(const Graph& g, OpId o) {
  const Op& op = g.ops[o];
  return op.name.empty() ? fmt::format("op {} ({})", o, op.type)
                         : fmt::format("op {} '{}' ({})", o, op.name, op.type);
}

std::string describe_tensor(const Graph& g, TensorId t) {
  const std::string& name = g.tensors[t].name;
  return name.empty() ? fmt::format("tensor {}", t) : fmt::format("tensor {} '{}'", t, name);
}

}  // namespace sa
