#include "search/schedule.h"

#include <algorithm>
#include <limits>
#include <queue>

#include "util/error.h"

namespace sa {

Scheduler::Scheduler(const Dataflow& df) : df_(df) {
  const int m = df.num_ops();
  missing_.resize(m);
  ready_pos_.resize(m);
  done_.resize(m);
  ready_.reserve(m);
}

void Scheduler::reset_ready(bool reverse) {
  const int m = df_.num_ops();
  ready_.clear();
  for (OpId o = 0; o < m; ++o) {
    const int k = static_cast<int>(reverse ? df_.succs(o).size() : df_.preds(o).size());
    missing_[o] = k;
    done_[o] = 0;
    ready_pos_[o] = -1;
    if (k == 0) {
      ready_pos_[o] = static_cast<int32_t>(ready_.size());
      ready_.push_back(o);
    }
  }
}

void Scheduler::take(OpId o, bool reverse) {
  SA_CHECK(ready_pos_[o] >= 0 && !done_[o], "op {} taken while not ready", o);
  const int32_t i = ready_pos_[o];
  const OpId last = ready_.back();
  ready_[i] = last;
  ready_pos_[last] = i;
  ready_.pop_back();
  ready_pos_[o] = -1;
  done_[o] = 1;
  for (OpId s : reverse ? df_.preds(o) : df_.succs(o))
    if (--missing_[s] == 0) {
      ready_pos_[s] = static_cast<int32_t>(ready_.size());
      ready_.push_back(s);
    }
}

void Scheduler::random_order(Rng& rng, std::vector<OpId>* out) {
  const int m = df_.num_ops();
  reset_ready(false);
  out->clear();
  for (int i = 0; i < m; ++i) {
    SA_CHECK(!ready_.empty(), "the dependency graph has a cycle");
    const OpId o = ready_[rng.below(static_cast<uint32_t>(ready_.size()))];
    take(o, false);
    out->push_back(o);
  }
}

void Scheduler::crossover(std::span<const OpId> p1, std::span<const OpId> p2, int cut,
                          std::vector<OpId>* c1, std::vector<OpId>* c2) {
  const int m = df_.num_ops();
  SA_CHECK(
      static_cast<int>(p1.size()) == m && static_cast<int>(p2.size()) == m && cut >= 0 && cut <= m,
      "crossover of orders of {} and {} ops at {} ({} ops)", p1.size(), p2.size(), cut, m);
  auto one = [&](std::span<const OpId> head, std::span<const OpId> tail, std::vector<OpId>* c) {
    std::fill(done_.begin(), done_.end(), 0);
    c->assign(head.begin(), head.begin() + cut);
    for (int i = 0; i < cut; ++i)
      done_[head[i]] = 1;
    for (OpId o : tail)
      if (!done_[o]) c->push_back(o);
  };
  one(p2, p1, c1);
  one(p1, p2, c2);
}

void Scheduler::mutate(std::span<const OpId> parent, double p, bool reverse, Rng& rng,
                       std::vector<OpId>* out) {
  const int m = df_.num_ops();
  SA_CHECK(static_cast<int>(parent.size()) == m, "order of {} ops, graph {}", parent.size(), m);
  reset_ready(reverse);
  out->resize(m);
  int next = 0;  // parent index of the earliest op not yet scheduled
  auto parent_at = [&](int k) { return reverse ? parent[m - 1 - k] : parent[k]; };
  for (int i = 0; i < m; ++i) {
    OpId o;
    if (p > 0 && ready_.size() > 1 && rng.chance(p)) {
      o = ready_[rng.below(static_cast<uint32_t>(ready_.size()))];
    } else {
      while (done_[parent_at(next)])
        ++next;
      o = parent_at(next);
    }
    take(o, reverse);
    (*out)[reverse ? m - 1 - i : i] = o;
  }
}

void Scheduler::priority_order(std::span<const double> key, std::vector<OpId>* out) {
  const int m = df_.num_ops();
  SA_CHECK(static_cast<int>(key.size()) == m, "{} keys for {} ops", key.size(), m);
  using Entry = std::pair<double, OpId>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  for (OpId o = 0; o < m; ++o) {
    missing_[o] = static_cast<int>(df_.preds(o).size());
    if (missing_[o] == 0) heap.push({key[o], o});
  }
  out->clear();
  while (!heap.empty()) {
    const OpId o = heap.top().second;
    heap.pop();
    out->push_back(o);
    for (OpId s : df_.succs(o))
      if (--missing_[s] == 0) heap.push({key[s], s});
  }
  SA_CHECK(static_cast<int>(out->size()) == m, "the dependency graph has a cycle");
}

std::vector<OpId> eager_update_order(const Graph& g, const Dataflow& df) {
  const int m = g.num_ops();
  constexpr double kNone = -std::numeric_limits<double>::infinity();
  constexpr double kStep = 1.0 / 1024;  // between two ops of the program order
  auto is_update = [&](OpId o) { return g.ops[o].phase == Phase::kUpdate; };
  // Other ops keep their program position; an update op goes right after
  // the latest op it depends on (as early as possible) ...
  std::vector<double> key(m);
  for (OpId o = 0; o < m; ++o) {
    if (!is_update(o)) {
      key[o] = o;
      continue;
    }
    double k = kNone;
    for (OpId p : df.preds(o))
      k = std::max(k, key[p] + kStep);
    key[o] = k;
  }
  // ... unless it depends on nothing (e.g. scaling a momentum buffer): then
  // right before its first dependent (as late as possible).
  for (OpId o = m - 1; o >= 0; --o) {
    if (!is_update(o) || key[o] != kNone) continue;
    double k = std::numeric_limits<double>::infinity();
    for (OpId s : df.succs(o))
      k = std::min(k, key[s] - kStep);
    key[o] = k == std::numeric_limits<double>::infinity() ? o : k;
  }
  Scheduler sched(df);
  std::vector<OpId> order;
  sched.priority_order(key, &order);
  return order;
}

}  // namespace sa
