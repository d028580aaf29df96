#pragma once
// Note [Evaluation cache]
// -----------------------
// A child often plans exactly as a candidate evaluated before: the elite
// pairs' crossover is a copy and a mild mutation may change nothing, and
// many genes are not expressed (a swap-only candidate's per-op recompute
// genes, a placed candidate's size classes). Planning is deterministic, so
// the search keeps each evaluated candidate's iteration time under a key of
// its expressed genes and answers a repeat from it:
//   - the key is 128 bits of two independent hashes of the genes the planner
//     reads (Worker::plan_candidate): the order; the layout in the arena;
//     the classes and counts where they are laid out; the per-op recompute
//     genes, the eviction policy and the dead-input depth where the master
//     gene is on. Two different candidates share a key with probability
//     about n^2 / 2^129 for n candidates (below 1e-26 at a million);
//   - a repeat still counts as an evaluation, so the same seed and
//     evaluations give the same plan as without the cache, sooner;
//   - it is shared by the workers (a mutex: a lookup costs well under a
//     microsecond against milliseconds to seconds per plan). Two workers
//     may plan one candidate at once; both get its one time, so the plan
//     does not depend on the threads;
//   - at most kMaxEntries entries (24 bytes each); past that it answers from
//     what it holds and stores nothing new.

#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>

namespace sa::ga {

struct GeneKey {
  uint64_t a = 0, b = 0;
  bool operator==(const GeneKey&) const = default;
};

// Two independent 64-bit hashes over a stream of words.
class GeneHasher {
 public:
  void add(uint64_t w) {
    a_ = mix(a_ ^ (w + 0x9e3779b97f4a7c15ULL));
    b_ = mix(b_ + w * 0xc2b2ae3d27d4eb4fULL + 0x165667b19e3779f9ULL);
  }
  template <typename T>
  void add_all(std::span<const T> ws) {
    add(ws.size());
    for (const T& w : ws)
      add(static_cast<uint64_t>(w));
  }
  GeneKey key() const { return {mix(a_ ^ 0xff51afd7ed558ccdULL), mix(b_ ^ 0xc4ceb9fe1a85ec53ULL)}; }

 private:
  // splitmix64's finalizer: every input bit moves every output bit.
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t a_ = 0x243f6a8885a308d3ULL, b_ = 0x13198a2e03707344ULL;
};

class EvalCache {
 public:
  static constexpr size_t kMaxEntries = size_t{1} << 21;

  std::optional<double> find(const GeneKey& k) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = times_.find(k);
    if (it == times_.end()) return std::nullopt;
    ++hits_;
    return it->second;
  }
  void put(const GeneKey& k, double time_us) {
    std::lock_guard<std::mutex> lock(mu_);
    if (times_.size() < kMaxEntries) times_.emplace(k, time_us);
  }
  int64_t hits() const {
    std::lock_guard<std::mutex> lock(mu_);
    return hits_;
  }

 private:
  struct Hash {
    size_t operator()(const GeneKey& k) const { return static_cast<size_t>(k.a); }
  };
  mutable std::mutex mu_;
  std::unordered_map<GeneKey, double, Hash> times_;
  int64_t hits_ = 0;
};

}  // namespace sa::ga
