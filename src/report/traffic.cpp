#include "report/traffic.h"

#include <algorithm>

namespace sa {

std::vector<TensorTraffic> tensor_traffic(const Graph& g, const Plan& p) {
  std::vector<TensorTraffic> all(g.num_tensors());
  for (const Step& s : p.steps) {
    if (s.runs_op()) continue;
    TensorTraffic& t = all[s.tensor()];
    if (s.kind == StepKind::kSwapIn) ++t.swap_ins;
    if (s.kind == StepKind::kSwapOut) ++t.swap_outs;
    if (s.kind == StepKind::kDrop) ++t.drops;
  }
  std::vector<TensorTraffic> out;
  for (TensorId t = 0; t < g.num_tensors(); ++t) {
    TensorTraffic& x = all[t];
    if (x.swap_ins + x.swap_outs + x.drops == 0) continue;
    x.tensor = t;
    x.bytes = (x.swap_ins + x.swap_outs) * g.tensors[t].bytes;
    out.push_back(x);
  }
  std::stable_sort(out.begin(), out.end(), [](const TensorTraffic& a, const TensorTraffic& b) {
    return a.bytes > b.bytes;
  });
  return out;
}

}  // namespace sa
