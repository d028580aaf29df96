#include "plan/copy_order.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <tuple>

#include "util/error.h"

namespace sa {
namespace {

// Note [Copy order]: the copy streams' orders, chosen while the plan (its
// copies in release order) is simulated: on each stream, earliest deadline
// first among the copies that can start, unless that one's key would pass
// the deadline of another still to place.
class DeadlinePicker final : public CopyPicker {
 public:
  // One copy stream's steps (in plan order) with their release keys and
  // deadlines.
  struct Lane {
    std::vector<StepId> steps;
    std::vector<int32_t> key, deadline;
  };

  // lanes[0]: the swap-ins, lanes[1]: the swap-outs.
  DeadlinePicker(const Plan& p, Lane in, Lane out)
      : p_(p), index_(p.num_steps(), -1), parked_(p.num_steps()) {
    lanes_[0].init(std::move(in));
    lanes_[1].init(std::move(out));
    for (const State& l : lanes_)
      for (size_t k = 0; k < l.steps.size(); ++k)
        index_[l.steps[k]] = static_cast<int32_t>(k);
  }

  StepId pick(Stream st, const std::function<bool(StepId)>& done) override {
    State& l = lanes_[st == Stream::kH2D ? 0 : 1];
    const int lane = st == Stream::kH2D ? 0 : 1;
    done_ = &done;
    // Copies enter the heap once every step they wait for has finished:
    // until then each is parked on one of them (finished() moves it on).
    if (!l.started) {
      l.started = true;
      for (int32_t k = 0; k < static_cast<int32_t>(l.steps.size()); ++k) {
        const StepId blocker = first_unfinished(l.steps[k], done);
        if (blocker < 0)
          l.heap.push(k);
        else
          parked_[blocker].push_back({lane, k});
      }
    }
    while (l.placed[l.by_deadline[l.next_urgent]])
      ++l.next_urgent;
    const int32_t urgent = l.by_deadline[l.next_urgent];
    auto can_start = [&](int32_t k) {
      for (StepId w : p_.waits_of(l.steps[k]))
        if (!done(w)) return false;
      return true;
    };
    int32_t chosen = -1;
    while (!l.heap.empty()) {
      const int32_t k = l.heap.top();
      l.heap.pop();
      if (l.placed[k]) continue;
      const StepId blocker = first_unfinished(l.steps[k], done);
      if (blocker < 0) {
        chosen = k;
        break;
      }
      parked_[blocker].push_back({lane, k});
    }
    if (chosen >= 0 && earliest_key(l, chosen) >= l.deadline[urgent]) {
      l.heap.push(chosen);
      chosen = can_start(urgent) ? urgent : -1;
    }
    if (chosen < 0) return -1;
    l.placed[chosen] = 1;
    l.sequence.push_back(chosen);
    l.floor = std::max(l.floor, earliest_key(l, chosen));
    SA_CHECK(l.floor < l.deadline[chosen], "copy step {} keyed at {}, after its first user at {}",
             l.steps[chosen], l.floor, l.deadline[chosen]);
    l.new_key[chosen] = l.floor;
    return l.steps[chosen];
  }

  void finished(StepId s) override {
    if (parked_[s].empty()) return;
    std::vector<std::pair<int, int32_t>> woken;
    woken.swap(parked_[s]);
    for (const auto& [lane, k] : woken) {
      State& l = lanes_[lane];
      if (l.placed[k]) continue;
      const StepId blocker = first_unfinished(l.steps[k], *done_);
      if (blocker < 0)
        l.heap.push(k);
      else
        parked_[blocker].push_back({lane, k});
    }
  }

  bool exhausted(Stream st) const override {
    const State& l = lanes_[st == Stream::kH2D ? 0 : 1];
    return l.sequence.size() == l.steps.size();
  }

  // Of lane i (0: swap-ins, 1: swap-outs): the picked order (indices into
  // its steps), and of its k-th step, the plan step and its new key.
  const std::vector<int32_t>& sequence(int i) const { return lanes_[i].sequence; }
  StepId step(int i, int32_t k) const { return lanes_[i].steps[k]; }
  int32_t key(int i, int32_t k) const { return lanes_[i].new_key[k]; }

 private:
  struct State : Lane {
    void init(Lane lane) {
      static_cast<Lane&>(*this) = std::move(lane);
      new_key = key;
      placed.assign(steps.size(), 0);
      by_deadline.resize(steps.size());
      for (size_t k = 0; k < steps.size(); ++k)
        by_deadline[k] = static_cast<int32_t>(k);
      std::sort(by_deadline.begin(), by_deadline.end(),
                [&](int32_t a, int32_t b) { return urgency(a) < urgency(b); });
      sequence.reserve(steps.size());
      heap = Heap(Later{this});
    }
    std::tuple<int32_t, int32_t, int32_t> urgency(int32_t k) const {
      return {deadline[k], key[k], k};
    }
    struct Later {
      const State* self;
      bool operator()(int32_t a, int32_t b) const { return self->urgency(a) > self->urgency(b); }
    };
    using Heap = std::priority_queue<int32_t, std::vector<int32_t>, Later>;

    std::vector<int32_t> new_key, by_deadline, sequence;
    std::vector<uint8_t> placed;
    Heap heap{Later{nullptr}};
    size_t next_urgent = 0;
    bool started = false;  // its copies have been parked or pushed
    int32_t floor = -1;
  };

  // A step on a stream that step s waits for (through a drop, which finishes
  // with its waits) and that has not finished; -1 if s can start.
  StepId first_unfinished(StepId s, const std::function<bool(StepId)>& done) const {
    for (StepId w : p_.waits_of(s)) {
      if (done(w)) continue;
      if (p_.steps[w].kind != StepKind::kDrop) return w;
      for (StepId d : p_.waits_of(w))
        if (!done(d)) return d;
    }
    return -1;
  }

  // The smallest key copy k of lane l can take: its release key, and no
  // earlier than the copies it waits for (a swap-in waits for the swap-out
  // that frees its object), which have been placed.
  int32_t earliest_key(const State& l, int32_t k) const {
    int32_t at = l.key[k];
    for (StepId w : p_.waits_of(l.steps[k]))
      if (p_.steps[w].kind == StepKind::kSwapOut) at = std::max(at, lanes_[1].new_key[index_[w]]);
    return at;
  }

  const Plan& p_;
  std::vector<int32_t> index_;  // plan step -> its index in its lane
  State lanes_[2];
  std::vector<std::vector<std::pair<int, int32_t>>> parked_;  // per step: (lane, copy) waiting
  const std::function<bool(StepId)>* done_ = nullptr;         // the simulation's, once it picks
};

}  // namespace

bool order_copies_by_deadline(const Graph& g, const Plan& p, std::span<const int32_t> key,
                              std::span<const double> op_us, const DeviceProfile& d, Simulator& sim,
                              CopyOrder* out) {
  const int32_t m = g.num_ops();
  DeadlinePicker::Lane lanes[2];
  std::vector<int32_t> lane_of(p.num_steps(), -1), index(p.num_steps(), -1);
  for (StepId s = 0; s < p.num_steps(); ++s) {
    const StepKind kind = p.steps[s].kind;
    if (kind != StepKind::kSwapIn && kind != StepKind::kSwapOut) continue;
    DeadlinePicker::Lane& l = lanes[kind == StepKind::kSwapIn ? 0 : 1];
    lane_of[s] = kind == StepKind::kSwapIn ? 0 : 1;
    index[s] = static_cast<int32_t>(l.steps.size());
    l.steps.push_back(s);
    l.key.push_back(key[s]);
    l.deadline.push_back(m);
  }
  if (lanes[0].steps.empty() && lanes[1].steps.empty()) return false;
  // Deadlines: a copy's first user among the ops, and a swap-out is due
  // before the swap-ins that wait for it are.
  int32_t computes = 0;  // compute steps so far: the next one's position
  for (StepId s = 0; s < p.num_steps(); ++s) {
    const StepKind kind = p.steps[s].kind;
    for (StepId w : p.waits_of(s)) {
      if (lane_of[w] < 0) continue;
      // A recompute runs just before the op at the next compute step.
      if (kind == StepKind::kCompute || kind == StepKind::kRecompute) {
        int32_t& dl = lanes[lane_of[w]].deadline[index[w]];
        dl = std::min(dl, computes);
      } else if (kind != StepKind::kSwapIn || lane_of[w] != 1) {
        return false;
      }
    }
    if (kind == StepKind::kCompute) ++computes;
  }
  for (size_t k = 0; k < lanes[0].steps.size(); ++k)
    for (StepId w : p.waits_of(lanes[0].steps[k]))
      if (lane_of[w] == 1) {
        int32_t& dl = lanes[1].deadline[index[w]];
        dl = std::min(dl, lanes[0].deadline[k]);
      }
  DeadlinePicker picker(p, std::move(lanes[0]), std::move(lanes[1]));
  out->sim = sim.run(g, p, op_us, d, picker);
  SA_CHECK(out->sim.ok, "the deadline order of the copies: {}", out->sim.error);
  for (int i = 0; i < 2; ++i) {
    out->steps[i].clear();
    out->keys[i].clear();
    for (int32_t chosen : picker.sequence(i)) {
      out->steps[i].push_back(picker.step(i, chosen));
      out->keys[i].push_back(picker.key(i, chosen));
    }
  }
  return true;
}

namespace {

// *p with its steps in the order `order` (order[k]: the step that goes
// k-th), every wait renumbered and the recompute steps' objects laid out
// again in the new order. The search calls this once per evaluation: the
// buffers are kept per thread rather than allocated each time.
void reorder_steps(std::span<const StepId> order, Plan* p) {
  const int n = p->num_steps();
  thread_local std::vector<StepId> new_id;
  thread_local std::vector<Step> steps;
  thread_local std::vector<StepId> waits;
  thread_local std::vector<ObjectId> objects;
  new_id.resize(n);
  for (int k = 0; k < n; ++k)
    new_id[order[k]] = k;
  steps.resize(n);
  waits.clear();
  objects.clear();
  for (StepId id = 0; id < n; ++id) {
    const Step& old = p->steps[order[id]];
    Step& st = steps[id];
    st = old;
    if (old.kind == StepKind::kRecompute) {
      st.obj_begin = static_cast<int32_t>(objects.size());
      objects.insert(objects.end(), p->recompute_objects.begin() + old.obj_begin,
                     p->recompute_objects.begin() + old.obj_end);
      st.obj_end = static_cast<int32_t>(objects.size());
    }
    st.wait_begin = static_cast<int32_t>(waits.size());
    for (StepId w : p->waits_of(order[id])) {
      const StepId target = new_id[w];
      SA_CHECK(target < id, "step {} ({}) waits for later step {} ({}) in the copy order", id,
               to_string(old.kind), target, to_string(p->steps[w].kind));
      waits.push_back(target);
    }
    st.wait_end = static_cast<int32_t>(waits.size());
  }
  p->steps.swap(steps);
  p->waits.swap(waits);
  p->recompute_objects.swap(objects);
}

}  // namespace

bool put_copies_in_deadline_order(const Graph& g, std::span<const StepKey> keys,
                                  std::span<const double> op_us, const DeviceProfile& d,
                                  Simulator& sim, Plan* p, SimResult* picked) {
  const int n = p->num_steps();
  SA_CHECK(static_cast<int>(keys.size()) == n, "{} keys for {} steps", keys.size(), n);
  std::vector<int32_t> key(n), made(n);
  for (StepId s = 0; s < n; ++s) {
    key[s] = keys[s].key;
    made[s] = keys[s].made;
  }
  CopyOrder co;
  if (!order_copies_by_deadline(g, *p, key, op_us, d, sim, &co)) return false;
  // Each stream's copies take its copies' places (in the order the walk
  // made them) in the order they were picked, with the keys they were
  // picked at.
  for (int i = 0; i < 2; ++i) {
    std::vector<int32_t> places;
    for (StepId s : co.steps[i])
      places.push_back(keys[s].made);
    std::sort(places.begin(), places.end());
    for (size_t at = 0; at < co.steps[i].size(); ++at) {
      key[co.steps[i][at]] = co.keys[i][at];
      made[co.steps[i][at]] = places[at];
    }
  }
  // Sorted on (key, rank, made): a counting sort on (key, rank) of the
  // steps taken in made order (made is a permutation of the step ids).
  std::vector<StepId> by_made(n, -1);
  for (StepId s = 0; s < n; ++s) {
    SA_CHECK(made[s] >= 0 && made[s] < n && by_made[made[s]] < 0 && key[s] >= -1,
             "step {}: made {} of {}, key {}", s, made[s], n, key[s]);
    by_made[made[s]] = s;
  }
  const int32_t max_key = n > 0 ? *std::max_element(key.begin(), key.end()) : 0;
  const int buckets = (max_key + 2) * 3;
  std::vector<int32_t> begin(buckets + 1, 0);
  auto bucket_of = [&](StepId s) { return (key[s] + 1) * 3 + rank_of(p->steps[s].kind); };
  for (StepId s = 0; s < n; ++s)
    ++begin[bucket_of(s) + 1];
  for (int b = 0; b < buckets; ++b)
    begin[b + 1] += begin[b];
  std::vector<StepId> order(n);
  for (StepId s : by_made)
    order[begin[bucket_of(s)]++] = s;
  reorder_steps(order, p);
  *picked = std::move(co.sim);
  return true;
}

}  // namespace sa
