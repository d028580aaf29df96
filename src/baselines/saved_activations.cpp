#include "baselines/saved_activations.h"

#include <array>
#include <span>
#include <string_view>

namespace sa {

std::vector<SavedActivation> saved_activations(const Graph& g, std::span<const OpId> order) {
  const int n = g.num_tensors();
  std::vector<int> created_fwd(n, 0), last_fwd(n, -1), first_after(n, -1);
  for (int i = 0; i < static_cast<int>(order.size()); ++i) {
    const Op& op = g.ops[order[i]];
    const bool fwd = op.phase == Phase::kForward;
    for_each_access(op, [&](TensorId x, Access a) {
      if (a == Access::kCreate) created_fwd[x] = fwd;
      if (!created_fwd[x]) return;
      if (fwd)
        last_fwd[x] = i;
      else if (first_after[x] < 0)
        first_after[x] = i;
    });
  }
  std::vector<SavedActivation> out;
  for (TensorId x = 0; x < n; ++x)
    if (created_fwd[x] && is_transient(g.tensors[x].kind) && first_after[x] > last_fwd[x])
      out.push_back({x, last_fwd[x], first_after[x]});
  return out;
}

bool has_backward(const Graph& g) {
  for (const Op& op : g.ops)
    if (op.phase == Phase::kBackward) return true;
  return false;
}

bool is_conv_or_matmul(const Op& op) {
  static constexpr std::array<std::string_view, 6> kKeys = {"conv",   "mm",     "matmul",
                                                            "linear", "einsum", "lstm"};
  for (std::string_view k : kKeys)
    if (op.type.find(k) != std::string::npos) return true;
  return false;
}

}  // namespace sa
