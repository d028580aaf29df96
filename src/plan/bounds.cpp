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
      : g_(g), op_us_(op_us), bytes_(g.num_ops(), 0), maker_(g.num_tensors(), kNoOp) {
    for (OpId o = 0; o < g.num_ops(); ++o)
      for (TensorId x : g.ops[o].outputs)
        maker_[x] = o;
  }
  // Tensor x joins its maker's group (sign +1) or leaves it (-1).
  void add(TensorId x, int sign) {
    const OpId o = maker_[x];
    if (o == kNoOp) return;
    if (bytes_[o] > 0) by_cost_.erase({cost_per_byte(o), o});
    bytes_[o] += sign * g_.tensors[x].bytes;
    total_ += sign * g_.tensors[x].bytes;
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
  const Graph& g_;
  std::span<const double> op_us_;
  std::vector<int64_t> bytes_;  // per maker: bytes of its outputs in the groups
  std::vector<OpId> maker_;     // per tensor
  std::set<std::pair<double, OpId>> by_cost_;
  int64_t total_ = 0;
};

// The bound at one op p as a function of x, the bytes of the remakeable
// transients live at p that a plan remakes after p instead of copying them
// out before p and in after it (x = 0: Note [Transfer bound]). Each half is
// the largest of a few lines in x (Note [Duplex in the bound]).
struct AtOp {
  double before_us, op_us, after_us;
  double out, in;                    // bytes with x = 0
  double in_before, out_after;       // Note [Duplex in the bound]
  double out_rate, in_rate, duplex;  // duplex 0: no shared cap
  bool nvme;
  double host_budget, nvme_read, nvme_write;

  struct Line {
    double c, s;  // c + s x
    double at(double x) const { return c + s * x; }
  };
  // The lines of the half before p and of the half after p, the remaking
  // cost there being r0 + per_byte (x - x0).
  int first_lines(Line* l) const {
    int n = 0;
    l[n++] = {before_us, 0};
    l[n++] = {out / out_rate, -1 / out_rate};
    if (duplex > 0) l[n++] = {(out + in_before) / duplex, -1 / duplex};
    if (nvme)
      l[n++] = {(out - host_budget) / nvme_write, -1 / nvme_write};  // Note [Tiered transfer bound]
    return n;
  }
  int second_lines(double x0, double r0, double per_byte, Line* l) const {
    int n = 0;
    l[n++] = {after_us + r0 - per_byte * x0, per_byte};
    l[n++] = {in / in_rate, -1 / in_rate};
    if (duplex > 0) l[n++] = {(in + out_after) / duplex, -1 / duplex};
    if (nvme) l[n++] = {(in - host_budget) / nvme_read, -1 / nvme_read};
    return n;
  }
  double at(double x, double x0, double r0, double per_byte) const {
    Line a[4], b[4];
    const int na = first_lines(a), nb = second_lines(x0, r0, per_byte, b);
    double first = a[0].at(x), second = b[0].at(x);
    for (int k = 1; k < na; ++k)
      first = std::max(first, a[k].at(x));
    for (int k = 1; k < nb; ++k)
      second = std::max(second, b[k].at(x));
    return first + op_us + second;
  }
};

// The least of AtOp::at over x in [0, total], the remaking cost that of the
// knapsack. The function is convex (a sum of maxima of lines, the knapsack's
// cost rising ever faster), so on each segment of the knapsack its least
// value is at an end or where two lines of one maximum cross; the walk stops
// once the value rises.
struct Least {
  double t;
  double x;
  double remake_us;
};
Least least_over_remakes(const AtOp& f, const RemakeGroups& groups) {
  Least best{f.at(0, 0, 0, 0), 0, 0};
  double x0 = 0, r0 = 0;  // the segment's start and the cost there
  groups.walk([&](int64_t bytes, double per_byte) {
    const double x1 = x0 + static_cast<double>(bytes);
    auto try_x = [&](double x) {
      if (!(x >= x0 && x <= x1)) return;  // also drops NaN and infinities
      const double t = f.at(x, x0, r0, per_byte);
      if (t < best.t) best = {t, x, r0 + per_byte * (x - x0)};
    };
    AtOp::Line lines[4];
    auto crossings = [&](int n) {
      for (int a = 0; a < n; ++a)
        for (int b = a + 1; b < n; ++b)
          if (lines[a].s != lines[b].s)
            try_x((lines[b].c - lines[a].c) / (lines[a].s - lines[b].s));
    };
    crossings(f.first_lines(lines));
    crossings(f.second_lines(x0, r0, per_byte, lines));
    const double r1 = r0 + per_byte * static_cast<double>(bytes);
    const double end = f.at(x1, x0, r0, per_byte);
    if (end < best.t) best = {end, x1, r1};
    x0 = x1;
    r0 = r1;
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
  // Note [Duplex in the bound]: persistent bytes first accessed at a
  // position <= i, and last updated at a position >= i.
  std::vector<int64_t> persistent_upto(m, 0), updated_from(m + 1, 0);
  {
    std::vector<int32_t> last_update(g.num_tensors(), -1);
    for (int i = 0; i < m; ++i)
      for (TensorId x : g.ops[order[i]].updates)
        if (!is_transient(g.tensors[x].kind)) last_update[x] = i;
    for (TensorId x = 0; x < g.num_tensors(); ++x) {
      if (is_transient(g.tensors[x].kind) || !live_at[x].accessed()) continue;
      persistent_upto[live_at[x].first] += g.tensors[x].bytes;
      if (last_update[x] >= 0) updated_from[last_update[x]] += g.tensors[x].bytes;
    }
    for (int i = 1; i < m; ++i)
      persistent_upto[i] += persistent_upto[i - 1];
    for (int i = m - 1; i >= 0; --i)
      updated_from[i] += updated_from[i + 1];
  }
  AtOp f{};
  f.out_rate = d.d2h_bytes_per_us();
  f.in_rate = d.h2d_bytes_per_us();
  f.duplex = d.duplex_bytes_per_us();
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
      groups.add(x, +1);
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
      groups.add(x, -1);
    f.before_us = before_us;
    f.op_us = op_us[order[i]];
    f.after_us = b.compute_us - before_us - f.op_us;
    // Note [Transfer bound]: out (copied out before p) and in (back after p),
    // with every remakeable transient live at p copied (x = 0).
    const int64_t out = live + groups.total() + touched_persistent - budget;
    const int64_t in = out + persistent_after[i] - touched_later;
    f.out = static_cast<double>(out);
    f.in = static_cast<double>(in);
    f.in_before = static_cast<double>(std::max<int64_t>(persistent_upto[i] - budget, 0));
    f.out_after = static_cast<double>(std::max<int64_t>(updated_from[i] - budget, 0));
    const Least l = least_over_remakes(f, groups);
    const double in_left = f.in - l.x;
    if ((in_left > 0 || l.remake_us > 0) && l.t > b.transfer_us) {
      b.transfer_us = l.t;
      b.at_op = order[i];
      b.off_device_bytes = static_cast<int64_t>(in_left);
      b.remake_us = l.remake_us;
    }
    for (TensorId x : touched_remakeable)
      groups.add(x, +1);
    for (TensorId x : leave[i])
      groups.add(x, -1);
    before_us += f.op_us;
  }
  return b;
}

}  // namespace sa
