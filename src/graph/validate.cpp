#include "graph/validate.h"

#include <cmath>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "util/error.h"

namespace sa {
namespace {

[[noreturn]] void fail(std::string_view origin, const std::string& where, const std::string& what) {
  throw Error(fmt::format("{}: {}: {}", origin, where, what));
}

std::string_view list_name(Access a) {
  switch (a) {
    case Access::kCreate:
      return "outputs";
    case Access::kRead:
      return "inputs";
    case Access::kUpdate:
      return "updates";
  }
  return "?";
}

void check_cost(std::string_view origin, int op, const char* field,
                const std::optional<double>& v) {
  if (v && (!std::isfinite(*v) || *v < 0))
    fail(origin, fmt::format("ops[{}].{}", op, field),
         fmt::format("must be a finite number >= 0, got {}", *v));
}

// Note [Input limits] (util/limits.h).
void check_time(std::string_view origin, int op, const std::optional<double>& v) {
  check_cost(origin, op, "time_us", v);
  if (v && *v > kMaxOpUs)
    fail(origin, fmt::format("ops[{}].time_us", op),
         fmt::format("{:g} us is over the limit of {:g} us per op", *v, kMaxOpUs));
}

}  // namespace

void validate_graph(const Graph& g, std::string_view origin) {
  const int n = g.num_tensors();
  int64_t total = 0;
  for (int t = 0; t < n; ++t) {
    const Tensor& tensor = g.tensors[t];
    if (tensor.bytes <= 0)
      fail(origin, fmt::format("tensors[{}].bytes", t),
           fmt::format("bytes must be > 0, got {}", tensor.bytes));
    if (tensor.bytes > kMaxBytes)
      fail(origin, fmt::format("tensors[{}].bytes", t),
           fmt::format("{} bytes is over the limit of 2^50 (1 PiB)", tensor.bytes));
    total += tensor.bytes;
    if (total > kMaxBytes)
      fail(origin, fmt::format("tensors[{}].bytes", t),
           fmt::format("the sizes of tensors 0..{} add up to {} bytes, over the limit of 2^50 "
                       "(1 PiB)",
                       t, total));
  }

  // The first op that lists each tensor in its outputs, to say in an error
  // where a tensor used too early is created.
  std::vector<OpId> first_creator(n, kNoOp);
  for (int o = g.num_ops() - 1; o >= 0; --o)
    for (TensorId t : g.ops[o].outputs)
      if (t >= 0 && t < n) first_creator[t] = o;

  // For every tensor: the op that created it so far (transients), to reject
  // use before creation and double creation; and the op and list position
  // where it was last seen, to reject a duplicate access within one op.
  std::vector<OpId> creator(n, kNoOp);
  std::vector<OpId> seen_in_op(n, kNoOp);
  std::vector<std::pair<Access, int>> seen_at(n);
  for (int o = 0; o < g.num_ops(); ++o) {
    const Op& op = g.ops[o];
    if (op.workspace_bytes < 0 || op.workspace_bytes > kMaxBytes)
      fail(origin, fmt::format("ops[{}].workspace_bytes", o),
           fmt::format("must be between 0 and 2^50, got {}", op.workspace_bytes));
    check_time(origin, o, op.time_us);
    check_cost(origin, o, "flops", op.flops);
    check_cost(origin, o, "bytes_accessed", op.bytes_accessed);

    auto check_list = [&](const std::vector<TensorId>& list, Access access) {
      for (size_t i = 0; i < list.size(); ++i) {
        const TensorId t = list[i];
        auto where = [&] { return fmt::format("ops[{}].{}[{}]", o, list_name(access), i); };
        if (t < 0 || t >= n)
          fail(origin, where(),
               fmt::format("unknown tensor id {} (the graph has {} tensors)", t, n));
        if (seen_in_op[t] == o)
          fail(origin, where(),
               fmt::format("duplicate access: tensor {} is also in {}[{}] of this op", t,
                           list_name(seen_at[t].first), seen_at[t].second));
        seen_in_op[t] = o;
        seen_at[t] = {access, static_cast<int>(i)};
        const TensorKind kind = g.tensors[t].kind;
        if (access == Access::kCreate) {
          if (!is_transient(kind))
            fail(origin, where(),
                 fmt::format("tensor {} is {}; only activation, gradient and temp tensors "
                             "can be created by an op",
                             t, with_article(kind)));
          if (creator[t] != kNoOp)
            fail(origin, where(),
                 fmt::format("tensor {} is created twice (first by ops[{}])", t, creator[t]));
          creator[t] = o;
        } else if (is_transient(kind) && creator[t] == kNoOp) {
          const char* verb = access == Access::kRead ? "read" : "updated";
          // Outputs are checked first, so a creator at or before o has been seen.
          if (first_creator[t] != kNoOp)
            fail(origin, where(),
                 fmt::format("{} tensor {} is {} before it is created (by ops[{}])",
                             to_string(kind), t, verb, first_creator[t]));
          fail(origin, where(),
               fmt::format("{} tensor {} is {} but never created (no op lists it in its outputs)",
                           to_string(kind), t, verb));
        }
      }
    };
    // Outputs first: an op that also reads its own output is then reported
    // as a duplicate access, the more precise diagnosis.
    check_list(op.outputs, Access::kCreate);
    check_list(op.inputs, Access::kRead);
    check_list(op.updates, Access::kUpdate);
  }
  for (int t = 0; t < n; ++t) {
    if (is_transient(g.tensors[t].kind) && creator[t] == kNoOp)
      fail(origin, fmt::format("tensors[{}]", t),
           fmt::format("{} tensor {} is never created (no op lists it in its outputs)",
                       to_string(g.tensors[t].kind), t));
  }
}

}  // namespace sa
