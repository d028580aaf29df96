#include "plan/bounds.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "graph/stats.h"

namespace sa {
namespace {

// Note [Recompute bound]: the remakeable transients live at p and
// not touched by it, grouped by the op that makes them, cheapest per byte
// first. Remaking any of an op's outputs runs the op once, so charging
// op time x (bytes remade / bytes of its outputs live) is never more than a
// plan pays: the fractional knapsack over these groups is a lower bound on the
// compute a plan adds after p to remake x bytes.
class RemakeGroups {
 public:
  RemakeGroups(const Graph& g, std::span<const double> op_us)
      : op_us_(op_us), bytes_(g.num_ops(), 0), maker_(g.num_tensors(), kNoOp) {
    for (OpId o = 0; o < g.num_ops(); ++o)
      for (TensorId x : g.ops[o].outputs)
        maker_[x] = o;
  }
  void add(const Graph& g, TensorId x, int sign) {
    const OpId o = maker_[x];
    if (o == kNoOp) return;
    if (bytes_[o] > 0) by_cost_.erase({cost_per_byte(o), o});
    bytes_[o] += sign * g.tensors[x].bytes;
    total_ += sign * g.tensors[x].bytes;
    if (bytes_[o] > 0) by_cost_.insert({cost_per_byte(o), o});
  }
  int64_t total() const { return total_; }
  // Segments of the knapsack in order: f(bytes, us per byte) until it returns false.
  template <typename F>
  void walk(F&& f) const {
    for (const auto& [per_byte, o] : by_cost_)
      if (!f(bytes_[o], per_byte)) return;
  }

 private:
  double cost_per_byte(OpId o) const { return op_us_[o] / static_cast<double>(bytes_[o]); }
  std::span<const double> op_us_;
  std::vector<int64_t> bytes_;  // per maker: bytes of its outputs in the groups
  std::vector<OpId> maker_;     // per tensor
  std::set<std::pair<double, OpId>> by_cost_;
  int64_t total_ = 0;
};

// The bound at one op p as a function of x, the bytes of the remakeable
// transients live at p that a plan remakes after p instead of copying them
// out before p and in after it (x = 0: Note [Transfer bound]).
struct AtOp {
  double before_us, op_us, after_us;
  double out, in;  // bytes with x = 0
  double out_rate, in_rate;
  bool nvme;
  double host_budget, nvme_read, nvme_write;
  double at(double x, double remake_us) const {
    const double o = out - x, i = in - x;
    double first = std::max(before_us, o / out_rate);
    double second = std::max(after_us + remake_us, i / in_rate);
    if (nvme) {  // Note [Tiered transfer bound]
      first = std::max(first, (o - host_budget) / nvme_write);
      second = std::max(second, (i - host_budget) / nvme_read);
    }
    return first + op_us + second;
  }
};

// The least of AtOp::at over x in [0, total], remake_us the knapsack's cost of
// x. The function is convex (a sum of maxima of lines, the knapsack's cost
// rising ever faster), so on each segment of the knapsack its least value is
// at an end or where two lines of one maximum cross; the walk stops once the
// value rises.
struct Least {
  double t;
  double x;
  double remake_us;
};
Least least_over_remakes(const AtOp& f, const RemakeGroups& groups) {
  Least best{f.at(0, 0), 0, 0};
  double x0 = 0, r0 = 0;  // the segment's start and the cost there
  groups.walk([&](int64_t bytes, double per_byte) {
    const double x1 = x0 + static_cast<double>(bytes);
    auto try_x = [&](double x) {
      if (!(x >= x0 && x <= x1)) return;  // also drops NaN
      const double r = r0 + per_byte * (x - x0);
      const double t = f.at(x, r);
      if (t < best.t) best = {t, x, r};
    };
    // Where lines of the first maximum cross: before_us = (out - x) / out_rate,
    // (out - x) / out_rate = (out - x - H) / nvme_write, and so on.
    try_x(f.out - f.before_us * f.out_rate);
    // Of the second: after_us + r0 + per_byte (x - x0) = (in - x) / in_rate.
    try_x((f.in / f.in_rate - f.after_us - r0 + per_byte * x0) / (per_byte + 1 / f.in_rate));
    if (f.nvme) {
      try_x(f.out - f.host_budget - f.before_us * f.nvme_write);
      try_x((f.out * f.nvme_write - (f.out - f.host_budget) * f.out_rate) /
            (f.nvme_write - f.out_rate));
      try_x(((f.in - f.host_budget) / f.nvme_read - f.after_us - r0 + per_byte * x0) /
            (per_byte + 1 / f.nvme_read));
      try_x((f.in * f.nvme_read - (f.in - f.host_budget) * f.in_rate) / (f.nvme_read - f.in_rate));
    }
    const double end = f.at(x1, r0 + per_byte * static_cast<double>(bytes));
    try_x(x1);
    x0 = x1;
    r0 += per_byte * static_cast<double>(bytes);
    return end <= best.t;  // convex: past its least value it only rises
  });
  return best;
}

}  // namespace

TimeBound time_bound(const Graph& g, std::span<const OpId> order, std::span<const double> op_us,
                     const DeviceProfile& d, int64_t budget, bool recompute, int64_t host_budget) {
  const int m = g.num_ops();
  TimeBound b;
  for (double t : op_us)
    b.compute_us += t;
  // Transient live intervals [creation, last access] as a difference array.
  const std::vector<LiveInterval> live_at = live_intervals(g, order);
  // Note [Recompute bound]: the transients a plan may drop and make again
  // (their producer may run again) are kept apart, in `groups` while live.
  std::vector<uint8_t> remakeable(g.num_tensors(), 0);
  if (recompute)
    for (const Op& op : g.ops)
      if (may_recompute(op))
        for (TensorId x : op.outputs)
          remakeable[x] = 1;
  RemakeGroups groups(g, op_us);
  std::vector<std::vector<TensorId>> enter(m), leave(m);  // remakeable, by position
  std::vector<int64_t> diff(m + 1, 0);
  // Persistent bytes accessed after position i: suffix sums by last access.
  std::vector<int64_t> persistent_last(m + 1, 0);
  for (TensorId x = 0; x < g.num_tensors(); ++x) {
    const LiveInterval& v = live_at[x];
    if (!v.accessed()) continue;
    if (is_transient(g.tensors[x].kind)) {
      if (remakeable[x]) {
        enter[v.first].push_back(x);
        leave[v.last].push_back(x);
        continue;
      }
      diff[v.first] += g.tensors[x].bytes;
      diff[v.last + 1] -= g.tensors[x].bytes;
    } else {
      persistent_last[v.last] += g.tensors[x].bytes;
    }
  }
  std::vector<int64_t> persistent_after(m + 1, 0);  // accessed at a position > i
  for (int i = m - 1; i >= 0; --i)
    persistent_after[i] = persistent_after[i + 1] + persistent_last[i + 1];
  AtOp f{};
  f.out_rate = d.d2h_bytes_per_us();
  f.in_rate = d.h2d_bytes_per_us();
  f.nvme = host_budget > 0 && d.has_nvme();
  f.host_budget = static_cast<double>(host_budget);
  f.nvme_read = d.nvme_read_gbps * 1e3;  // B/us
  f.nvme_write = d.nvme_write_gbps * 1e3;
  int64_t live = 0;
  double before_us = 0;                           // compute before position i
  std::vector<int32_t> counted(g.num_tensors());  // position + 1 where last counted
  std::vector<TensorId> touched_remakeable;
  for (int i = 0; i < m; ++i) {
    live += diff[i];
    for (TensorId x : enter[i])
      groups.add(g, x, +1);
    const Op& op = g.ops[order[i]];
    // What op p holds besides `live`: its workspace, the persistent tensors and
    // the remakeable transients it touches (out of `groups` while it runs).
    int64_t touched_persistent = op.workspace_bytes;
    int64_t touched_later = 0;  // persistent bytes op p touches and a later op too
    touched_remakeable.clear();
    for_each_access(op, [&](TensorId x, Access) {
      if (counted[x] == i + 1) return;  // an op that reads x twice holds it once
      counted[x] = i + 1;
      if (is_transient(g.tensors[x].kind)) {
        // Live at p and not among `live`: it must be on the device now.
        if (remakeable[x]) {
          touched_persistent += g.tensors[x].bytes;
          touched_remakeable.push_back(x);
        }
        return;
      }
      touched_persistent += g.tensors[x].bytes;
      if (live_at[x].last > i) touched_later += g.tensors[x].bytes;
    });
    for (TensorId x : touched_remakeable)
      groups.add(g, x, -1);
    f.before_us = before_us;
    f.op_us = op_us[order[i]];
    f.after_us = b.compute_us - before_us - f.op_us;
    // Note [Transfer bound]: out (copied out before p) and in (back after p),
    // with every remakeable transient live at p copied (x = 0).
    const int64_t out = live + groups.total() + touched_persistent - budget;
    const int64_t in = out + persistent_after[i] - touched_later;
    f.out = static_cast<double>(out);
    f.in = static_cast<double>(in);
    const Least l = least_over_remakes(f, groups);
    const double in_left = f.in - l.x;
    if ((in_left > 0 || l.remake_us > 0) && l.t > b.transfer_us) {
      b.transfer_us = l.t;
      b.at_op = order[i];
      b.off_device_bytes = static_cast<int64_t>(in_left);
      b.remake_us = l.remake_us;
    }
    for (TensorId x : touched_remakeable)
      groups.add(g, x, +1);
    for (TensorId x : leave[i])
      groups.add(g, x, -1);
    before_us += f.op_us;
  }
  return b;
}

}  // namespace sa
