#include "plan/swap_planner.h"

#include <algorithm>
#include <climits>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "plan/copy_order.h"
#include "plan/data_parallel.h"
#include "plan/dtr_cost.h"
#include "plan/packing.h"
#include "plan/simulator.h"
#include "util/error.h"
#include "util/range_map.h"
#include "util/units.h"

namespace sa {
namespace {

using ItemId = int32_t;  // tensors 0..n-1, then op o's workspace at n + o

enum class ItemKind : uint8_t { kTransient, kInput, kPersistent };

// A step before the final ordering: key_pos and rank give its place (see
// Note [Swap planning]): compute at position i is (i, 0); a swap-out or drop
// released at position r is (r, 1); a swap-in into an object released at r
// is (r, 2).
struct TempStep {
  StepKind kind;
  int32_t subject;
  ObjectId object;
  int32_t key_pos;
  int32_t wait_begin;
  int32_t wait_end;
  int32_t obj_begin = 0;  // recompute: its objects, in Pass::recompute_objs_
  int32_t obj_end = 0;
};

int rank_of(StepKind k) {
  switch (k) {
    case StepKind::kCompute:
    case StepKind::kRecompute:  // before the compute step it serves (emitted first)
      return 0;
    case StepKind::kSwapOut:
    case StepKind::kDrop:
      return 1;
    case StepKind::kSwapIn:
      return 2;
  }
  return 0;
}

// A time on the (key, rank) axis, for the lifetimes of arena tenancies:
// key -1 (the start) is 0..2, position i is 3(i+1)..3(i+1)+2.
int32_t when(int32_t key, StepKind k) {
  return 3 * (key + 1) + rank_of(k);
}

// Arena: one stay of an item on the device (Note [Arena planning]).
struct Tenancy {
  ItemId item;
  int32_t begin;   // when(), from its first step
  int32_t end;     // when() of its release; INT32_MAX while resident
  StepId first;    // its swap-in or creating compute step; -1 for the initial residents
  int32_t unit;    // the packed item it belongs to
  int64_t offset;  // placed mode: where it is in the arena
};

// How the walk finds memory (Note [Swap planning], Note [Arena planning]).
enum class Mode : uint8_t {
  kPool,    // objects of the size classes
  kBytes,   // a byte count; offsets packed afterwards
  kPlaced,  // arena ranges, placed as the walk goes
};

// Recomputation found no memory for an op's items (a plan that recomputes
// more than fits): the candidate is not plannable.
struct NoMemoryToRecompute {
  OpId op;
  int position;
};

std::string no_memory_to_recompute(const Graph& g, OpId op, int position) {
  return fmt::format("no memory to recompute op {} ({}) before position {} of the order", op,
                     g.ops[op].type, position);
}

// Placed mode: no window of the arena could take item x before position i
// (the residents op i needs cut the free space into pieces too small).
struct NoRoom {
  ItemId item;
  int position;
};

// Per class, its items (tensors and workspaces).
std::vector<int32_t> item_counts(const SizeTable& sizes, std::span<const ClassId> cls) {
  std::vector<int32_t> cnt(cls.empty() ? 0 : *std::max_element(cls.begin(), cls.end()) + 1, 0);
  for (int32_t s : sizes.tensor_size)
    ++cnt[cls[s]];
  for (int32_t s : sizes.workspace_size)
    if (s >= 0) ++cnt[cls[s]];
  return cnt;
}

}  // namespace

// One walk over the order (a pass) and everything it needs, kept between
// calls so that the search does not reallocate.
class SwapPlanner::Pass {
 public:
  Pass(const Graph& g, const SizeTable& sizes, std::span<const double> op_us,
       const DeviceProfile& device);

  // Per plan(): classes, positions and uses. False with *why if some op
  // touches more items of a class than cnt gives (checked when check_counts).
  bool prepare(std::span<const OpId> order, const Allocation& a, const PlannerOptions& opt,
               const Directives* directives, bool check_counts, std::string* why);
  // The same for the arena: one class; false with *why when some op touches
  // more bytes than capacity.
  bool prepare_arena(std::span<const OpId> order, int64_t capacity, bool placed,
                     const PlannerOptions& opt, const Directives* directives, std::string* why);
  // Placed mode: one object per distinct arena range; returns the peak.
  int64_t objects_from_placements();
  // Arena: swap-ins keyed at their latest wait.
  void tighten_swap_in_keys();
  // Runs the passes of Note [Swap planning] with cnt objects per class (the
  // arena: with capacity_ bytes) and returns the initial resident set of the
  // pass whose steps are kept.
  std::vector<ResidentTensor> run_passes(std::span<const int32_t> cnt);
  // Arena: offsets for the tenancies of the last pass; returns the peak.
  int64_t pack();
  // Arena: the waits for the memory each tenancy reuses, once packed.
  void add_reuse_waits();
  void emit(std::span<const int32_t> cnt, int64_t budget, std::vector<ResidentTensor> resident,
            Plan* out, PlanResult* result);

  std::vector<int32_t> peak_in_use;  // per class, over every pass since run_passes began
  int num_ops() const { return m_; }
  const Graph& graph() const { return g_; }
  OpId producer(TensorId t) const { return producer_[t]; }
  const SizeTable& sizes() const { return sizes_; }
  void set_capacity(int64_t c) { capacity_ = c; }
  int64_t item_bytes(int32_t x) const { return bytes_[x]; }
  std::span<const PackItem> pack_items() const { return pack_items_; }
  int64_t max_op_bytes() const {
    return m_ > 0 ? *std::max_element(op_bytes_.begin(), op_bytes_.end()) : 0;
  }

 private:
  bool run(const std::vector<ResidentTensor>& resident, bool fix_up);
  void bind_ops(std::span<const OpId> order, const PlannerOptions& opt,
                const Directives* directives);
  std::vector<int32_t> by_key(std::span<const int32_t> visit) const;
  void write_plan(std::span<const int32_t> visit, std::span<const int32_t> cnt, int64_t budget,
                  const std::vector<ResidentTensor>& resident, Plan* out,
                  std::vector<StepId>* old_of);
  bool order_copies(const Plan& p, std::span<const StepId> old_of, std::vector<int32_t>* visit,
                    PlanResult* result);
  void place_op(int i);
  void after_op(int i, StepId compute);
  void fetch(ItemId x, int i);
  bool may_drop_to_recompute(ItemId v) const;
  StepId recompute(TensorId v, int i);

  int num_uses(ItemId x) const { return use_begin_[x + 1] - use_begin_[x]; }
  bool needed_later(ItemId x) const { return cursor_[x] < num_uses(x); }
  bool needs_copy(ItemId v) const {
    return dirty_[v] && (needed_later(v) || kind_[v] == ItemKind::kPersistent);
  }
  int64_t victim_key(ItemId x) const;
  ItemId pick_victim(ItemId x, int i, bool swap_in) const;
  ItemId pick_dtr_victim(ItemId x, int i) const;
  bool dtr() const { return opt_.eviction == EvictionPolicy::kDtr; }
  void list_resident(ItemId x);
  void unlist_resident(ItemId x);
  StepId add_step(StepKind kind, int32_t subject, ObjectId obj, int32_t key_pos,
                  std::initializer_list<StepId> waits);
  void release(ObjectId obj, StepId compute, StepId copy, int32_t pos);
  void ring_push(ClassId c, ObjectId obj);
  ObjectId ring_pop(ClassId c);
  void evict(ItemId v);
  StepId swap_in(ItemId x, ObjectId obj, int32_t key_pos, StepId after);
  ObjectId acquire(ItemId x, int i, bool swap_in);
  // Arena.
  ObjectId open_tenancy(ItemId x, int32_t free_key);
  void free_bytes(int32_t key, int64_t bytes);
  int32_t take_bytes(int64_t bytes, bool earliest);

  // Fixed per graph.
  const Graph& g_;
  const SizeTable& sizes_;
  std::span<const double> op_us_;
  const DeviceProfile device_;
  const int n_, m_, num_items_;
  std::vector<ItemKind> kind_;
  std::vector<int64_t> bytes_;
  std::vector<uint8_t> updated_;  // persistent tensor modified during the iteration
  std::vector<int32_t> access_begin_;
  std::vector<int64_t> op_bytes_;        // per op: the bytes of every item it touches
  std::vector<OpId> producer_;           // per tensor: the op that creates it, or kNoOp
  std::vector<double> h2d_us_, d2h_us_;  // per item: its copy times, alone on the link

  // Per plan().
  std::span<const OpId> order_;
  PlannerOptions opt_;
  const Directives* dir_ = nullptr;
  Mode mode_ = Mode::kPool;
  bool arena() const { return mode_ != Mode::kPool; }
  bool placed() const { return mode_ == Mode::kPlaced; }
  int64_t capacity_ = 0;
  int nc_ = 0;
  std::vector<double> prefix_;            // prefix_[i]: op time before position i
  std::vector<int32_t> recompute_until_;  // per op: the last position a recompute of it may run at
  std::vector<int32_t> pos_of_;           // per op: its position in the order
  // Note [Update replay]: per op, the ops that update its outputs in place
  // and are replayed after a recompute of it, in position order.
  std::vector<std::vector<OpId>> replays_;
  std::vector<int32_t> use_begin_, uses_;
  std::vector<ClassId> class_;
  std::vector<int64_t> class_bytes_;
  std::vector<int32_t> class_first_;  // objects of class c: [class_first_[c], class_first_[c+1])
  int num_objects_ = 0;

  // Per pass.
  std::vector<ObjectId> obj_of_;
  std::vector<uint8_t> dirty_;
  std::vector<int32_t> cursor_, last_pos_, pinned_;
  int now_ = 0;                   // the position of the op being placed (m_ after the last)
  std::vector<int32_t> handled_;  // the position whose place_op() last handled the item
  std::vector<StepId> last_step_, arrival_;
  std::vector<StepId> host_write_;        // the item's last eviction (swap-out or drop)
  std::vector<uint8_t> dropped_;          // dropped to be recomputed (Note [Recomputation])
  std::vector<uint8_t> has_host_;         // a swap-out wrote its current version to the host
  std::vector<ObjectId> recompute_objs_;  // the recompute steps' objects
  std::unique_ptr<DtrCost> dtr_cost_;     // EvictionPolicy::kDtr: what is dropped
  struct Passing {  // a recompute's output or workspace that only passes through
    ObjectId obj;
    ItemId item;
    StepId step;
  };
  std::vector<Passing> passing_;  // freed after the op at this position
  // Inputs (kInput) past their last use that a recompute brought back: dropped
  // again after the op at this position (a cast of the batch under autocast
  // is the input's only use, and recomputing it reads the batch again).
  std::vector<ItemId> passing_inputs_;
  std::vector<int32_t> host_key_;  // and its key position
  std::vector<ItemId> tenant_;
  std::vector<StepId> rel_compute_, rel_copy_;
  std::vector<int32_t> rel_pos_;
  std::vector<ObjectId> ring_;  // free objects: a ring per class over its object range
  std::vector<int32_t> ring_head_, ring_size_;
  // The evictable residents of each class, and each item's index there (-1
  // when not listed). A victim is found by scanning its class's list: only
  // full classes are scanned, and an access costs nothing.
  std::vector<std::vector<ItemId>> residents_;
  std::vector<int32_t> listed_at_;
  // Placed mode: the listed residents by victim key, the largest on top (a
  // lazy heap: an entry is current while its version is the item's).
  struct VictimEntry {
    int64_t key;
    ItemId item;
    uint32_t version;
    bool operator<(const VictimEntry& o) const {
      return key != o.key ? key < o.key : item < o.item;
    }
  };
  std::vector<VictimEntry> victims_;
  // place()'s buffers: heap indices still to visit, the victims of the
  // window being scored and of the best one so far.
  std::vector<int32_t> frontier_;
  std::vector<ItemId> window_victims_, best_victims_;
  std::vector<uint32_t> heap_ver_;
  void heap_touch(ItemId x);
  std::vector<TempStep> steps_;
  std::vector<StepId> waits_, scratch_;
  std::vector<ObjectId> access_objects_;
  std::vector<ResidentTensor> resident_at_end_;
  StepId last_compute_ = -1;
  Simulator sim_;  // for the deadline order

  // Per pass, arena: the tenancies (the objects of the walk), free bytes by
  // release key (free_at_[key + 1]), the keys holding any, the total.
  std::vector<Tenancy> tenancies_;
  std::vector<int64_t> free_at_;
  std::set<int32_t> free_keys_;
  int64_t free_total_ = 0;
  std::vector<ObjectId> created_;  // tenancies opened by the op being placed
  // Per arena plan, after pack(): the units' offsets and the tenancies'
  // unit objects; the reuse waits as (step, wait) pairs.
  std::vector<int64_t> unit_offset_;
  std::vector<int64_t> unit_bytes_;
  std::vector<std::pair<StepId, StepId>> reuse_waits_;
  std::vector<int32_t> tenancy_unit_;  // per tenancy: its index in pack_items_ (a plan object)
  std::vector<PackItem> pack_items_;
  std::vector<ResidentTensor> resident_in_arena_;  // the last run's resident set, as tenancies
  Packer packer_;

  // Placed mode: the arena as ranges, each held by a tenancy or free (then
  // with its last tenant's release: position and steps), keyed by start.
  struct Range {
    int64_t end;
    ObjectId tenancy;  // -1: free
    int32_t key;       // free: released at this position (-1: never used)
    StepId rel_compute, rel_copy;
  };
  std::map<int64_t, Range> ranges_;
  // The maximal runs of free ranges, by start (-> end) and by (size, start).
  // Each run's key is the latest release position among its ranges (an
  // upper bound once part of a run is taken).
  struct FreeRun {
    int64_t end;
    int32_t key;
  };
  std::map<int64_t, FreeRun> runs_;
  std::set<std::tuple<int64_t, int64_t, int32_t>> runs_by_size_;  // (size, start, key)
  void run_add(int64_t at, int64_t end, int32_t key);
  void run_remove(int64_t at, int64_t end);
  // The release steps of the memory the last acquisition took: its swap-in
  // waits for all of them, a creating compute step for the copies.
  std::vector<StepId> taken_compute_, taken_copy_;
  std::vector<int64_t> start_offset_;  // per tensor: its offset as an initial resident
  std::vector<ObjectId> pre_obj_;      // per item: the tenancy preplace() opened for its creation
  std::vector<std::pair<int64_t, Range>> taken_pieces_;  // the ranges the last take_range() took
  void preplace(int i);
  void split_range(int64_t at);
  ObjectId take_range(ItemId x, int64_t at);
  ObjectId place(ItemId x, int i, bool swap_in);
  void clear_range(int64_t at, int64_t bytes, int i);
  bool eligible_victim(ItemId v, ItemId x, int i, bool swap_in) const;
};

SwapPlanner::Pass::Pass(const Graph& g, const SizeTable& sizes, std::span<const double> op_us,
                        const DeviceProfile& device)
    : g_(g),
      sizes_(sizes),
      op_us_(op_us),
      device_(device),
      n_(g.num_tensors()),
      m_(g.num_ops()),
      num_items_(n_ + m_) {
  kind_.assign(num_items_, ItemKind::kTransient);
  bytes_.assign(num_items_, 0);
  updated_.assign(num_items_, 0);
  for (TensorId x = 0; x < n_; ++x) {
    const TensorKind k = g.tensors[x].kind;
    kind_[x] = is_persistent(k)          ? ItemKind::kPersistent
               : k == TensorKind::kInput ? ItemKind::kInput
                                         : ItemKind::kTransient;
    bytes_[x] = g.tensors[x].bytes;
  }
  access_begin_.assign(m_ + 1, 0);
  op_bytes_.assign(m_, 0);
  producer_.assign(n_, kNoOp);
  for (OpId o = 0; o < m_; ++o)
    for (TensorId t : g.ops[o].outputs)
      producer_[t] = o;
  h2d_us_.resize(num_items_);
  d2h_us_.resize(num_items_);
  for (OpId o = 0; o < m_; ++o) {
    bytes_[n_ + o] = g.ops[o].workspace_bytes;
    for (TensorId x : g.ops[o].updates)
      updated_[x] = 1;
    access_begin_[o + 1] = access_begin_[o] + num_access_slots(g.ops[o]);
    // Each item once: an op may read one tensor twice.
    std::vector<TensorId> items;
    for_each_access(g.ops[o], [&](TensorId x, Access) { items.push_back(x); });
    std::sort(items.begin(), items.end());
    items.erase(std::unique(items.begin(), items.end()), items.end());
    for (TensorId x : items)
      op_bytes_[o] += bytes_[x];
    op_bytes_[o] += g.ops[o].workspace_bytes;
  }
  for (ItemId x = 0; x < num_items_; ++x) {
    h2d_us_[x] = static_cast<double>(bytes_[x]) / device_.h2d_bytes_per_us();
    d2h_us_[x] = static_cast<double>(bytes_[x]) / device_.d2h_bytes_per_us();
  }
}

void SwapPlanner::Pass::bind_ops(std::span<const OpId> order, const PlannerOptions& opt,
                                 const Directives* directives) {
  order_ = order;
  opt_ = opt;
  dir_ = directives;
  SA_CHECK(!dtr() || opt.recompute, "EvictionPolicy::kDtr without PlannerOptions::recompute");
  if (dtr() && !dtr_cost_) dtr_cost_ = std::make_unique<DtrCost>(g_, op_us_);
  // The op-time prefix and every item's uses in position order.
  prefix_.assign(m_ + 1, 0);
  for (int i = 0; i < m_; ++i)
    prefix_[i + 1] = prefix_[i] + op_us_[order[i]];
  use_begin_.assign(num_items_ + 1, 0);
  for (OpId o = 0; o < m_; ++o) {
    for_each_access(g_.ops[o], [&](TensorId x, Access) { ++use_begin_[x + 1]; });
    if (g_.ops[o].workspace_bytes > 0) ++use_begin_[n_ + o + 1];
  }
  for (int x = 0; x < num_items_; ++x)
    use_begin_[x + 1] += use_begin_[x];
  uses_.resize(use_begin_[num_items_]);
  std::vector<int32_t>& fill = cursor_;  // borrowed as fill pointers
  fill.assign(use_begin_.begin(), use_begin_.end() - 1);
  for (int i = 0; i < m_; ++i) {
    const OpId o = order[i];
    for_each_access(g_.ops[o], [&](TensorId x, Access) { uses_[fill[x]++] = i; });
    if (g_.ops[o].workspace_bytes > 0) uses_[fill[n_ + o]++] = i;
  }
  // Note [Recomputation]: op p may run again at position q while every
  // input still holds what p read (no update of it at a position in
  // (pos(p), q)) and every transient input is still alive (its last use >=
  // q) or may itself be made again at q (Note [Recompute through dead
  // inputs]).
  recompute_until_.assign(m_, -1);
  replays_.assign(m_, {});
  pos_of_.resize(m_);
  for (int i = 0; i < m_; ++i)
    pos_of_[order[i]] = i;
  if (!opt.recompute) return;
  std::vector<std::vector<int32_t>> updated_at(n_);
  for (int i = 0; i < m_; ++i)
    for (TensorId t : g_.ops[order[i]].updates)
      updated_at[t].push_back(i);
  // A dead input's producer's window counts once it is final: producers
  // come first in the order, and the last loop below goes in position order.
  std::vector<int32_t> depth(m_, 0);  // Note [Recompute through dead inputs]
  const int max_depth = std::max(0, opt.dead_input_depth);
  auto until_of = [&](OpId p) {
    int32_t until = m_;
    for (TensorId u : g_.ops[p].inputs) {
      const auto& at = updated_at[u];
      auto next = std::upper_bound(at.begin(), at.end(), pos_of_[p]);
      if (next != at.end()) until = std::min(until, *next);
      if (!is_transient(g_.tensors[u].kind) || num_uses(u) == 0) continue;
      int32_t alive = uses_[use_begin_[u + 1] - 1];
      const OpId q = producer_[u];
      if (q != kNoOp && (*opt.recompute)[q] && depth[q] < max_depth &&
          recompute_until_[q] > alive) {
        alive = recompute_until_[q];
        depth[p] = std::max(depth[p], depth[q] + 1);
      }
      until = std::min(until, alive);
    }
    return until;
  };
  auto may_run_again = [&](const Op& op) { return !op.random || opt.recompute_random; };
  for (OpId p = 0; p < m_; ++p)
    if (may_recompute(g_.ops[p]) && may_run_again(g_.ops[p])) recompute_until_[p] = m_;
  // Note [Update replay]: an update u of p's outputs at position i is
  // replayed after a recompute of p at q > i, which is then right while u's
  // inputs hold what u read (until_of(u) >= i: it never limits a recompute
  // before i). An update that may not be replayed ends p's window at i.
  for (int i = 0; i < m_; ++i) {
    const OpId u = order[i];
    const Op& uo = g_.ops[u];
    if (uo.updates.empty()) continue;
    const OpId p = producer_[uo.updates.front()];
    bool replay =
        p != kNoOp && uo.updates.size() == 1 && may_replay_update(g_, uo) && may_run_again(uo);
    for (TensorId t : uo.updates)
      replay = replay && producer_[t] == p;
    // Only updates that read nothing else (relu_, not the residual add_): a
    // replay's inputs must be there, so replays of updates that read other
    // recomputable tensors chain recomputes from block to block, back to
    // the start of the net, and no budget holds all they pin at once.
    replay = replay && uo.inputs.empty();
    for (TensorId t : uo.updates) {
      const OpId q = producer_[t];
      if (q == kNoOp || recompute_until_[q] < 0) continue;
      if (replay) {
        if (replays_[q].empty() || replays_[q].back() != u) replays_[q].push_back(u);
        recompute_until_[q] = std::min(recompute_until_[q], until_of(u));
      } else {
        recompute_until_[q] = std::min(recompute_until_[q], i);
      }
    }
  }
  for (int i = 0; i < m_; ++i)
    if (const OpId p = order[i]; recompute_until_[p] >= 0)
      recompute_until_[p] = std::min(recompute_until_[p], until_of(p));
}

bool SwapPlanner::Pass::prepare(std::span<const OpId> order, const Allocation& a,
                                const PlannerOptions& opt, const Directives* directives,
                                bool check_counts, std::string* why) {
  mode_ = Mode::kPool;
  nc_ = a.num_classes();
  class_bytes_ = sa::class_bytes(sizes_, a.cls);
  class_.assign(num_items_, -1);
  for (TensorId x = 0; x < n_; ++x)
    class_[x] = a.cls[sizes_.tensor_size[x]];
  for (OpId o = 0; o < m_; ++o)
    if (sizes_.workspace_size[o] >= 0) class_[n_ + o] = a.cls[sizes_.workspace_size[o]];
  if (check_counts) {
    const auto need = min_counts(g_, sizes_, a.cls);
    for (int c = 0; c < nc_; ++c)
      if (need[c] > a.cnt[c]) {
        if (why)
          *why = fmt::format(
              "class {} ({}) has {} objects but some op touches {} of its items at once", c,
              format_bytes(class_bytes_[c]), a.cnt[c], need[c]);
        return false;
      }
  }
  bind_ops(order, opt, directives);
  return true;
}

bool SwapPlanner::Pass::prepare_arena(std::span<const OpId> order, int64_t capacity, bool placed,
                                      const PlannerOptions& opt, const Directives* directives,
                                      std::string* why) {
  mode_ = placed ? Mode::kPlaced : Mode::kBytes;
  capacity_ = capacity;
  nc_ = 1;  // one list of residents: every item is a candidate victim for every other
  class_.assign(num_items_, 0);
  class_bytes_.clear();
  for (OpId o = 0; o < m_; ++o)
    if (op_bytes_[o] > capacity) {
      if (why)
        *why = fmt::format("op {} ({}) touches {} at once, more than the capacity of {}", o,
                           g_.ops[o].type, format_bytes(op_bytes_[o]), format_bytes(capacity));
      return false;
    }
  bind_ops(order, opt, directives);
  return true;
}

int64_t SwapPlanner::Pass::victim_key(ItemId x) const {
  if (opt_.eviction == EvictionPolicy::kLru) return -static_cast<int64_t>(last_pos_[x]);
  if (needed_later(x)) return uses_[use_begin_[x] + cursor_[x]];
  // Persistent tensors are next used in the next iteration.
  return num_uses(x) > 0 ? static_cast<int64_t>(m_) + uses_[use_begin_[x]] : INT64_MAX / 2;
}

void SwapPlanner::Pass::list_resident(ItemId x) {
  auto& list = residents_[class_[x]];
  listed_at_[x] = static_cast<int32_t>(list.size());
  list.push_back(x);
  heap_touch(x);
}

// Placed mode: x's victim key may have changed; older entries of x in the
// heap are stale from now on.
void SwapPlanner::Pass::heap_touch(ItemId x) {
  if (!placed()) return;
  ++heap_ver_[x];
  if (listed_at_[x] < 0) return;
  if (victims_.size() >
      residents_[0].size() + residents_[0].size() / 2 + 64) {  // mostly stale: rebuild
    victims_.clear();
    for (ItemId v : residents_[0])
      victims_.push_back({victim_key(v), v, heap_ver_[v]});
    std::make_heap(victims_.begin(), victims_.end());
    return;
  }
  victims_.push_back({victim_key(x), x, heap_ver_[x]});
  std::push_heap(victims_.begin(), victims_.end());
}

void SwapPlanner::Pass::unlist_resident(ItemId x) {
  const int32_t at = listed_at_[x];
  if (at < 0) return;
  if (placed()) ++heap_ver_[x];
  auto& list = residents_[class_[x]];
  const ItemId moved = list.back();
  list[at] = moved;
  listed_at_[moved] = at;
  list.pop_back();
  listed_at_[x] = -1;
}

StepId SwapPlanner::Pass::add_step(StepKind kind, int32_t subject, ObjectId obj, int32_t key_pos,
                                   std::initializer_list<StepId> waits) {
  const int32_t begin = static_cast<int32_t>(waits_.size());
  for (StepId w : waits)
    if (w >= 0) waits_.push_back(w);
  steps_.push_back({kind, subject, obj, key_pos, begin, static_cast<int32_t>(waits_.size())});
  return static_cast<StepId>(steps_.size()) - 1;
}

void SwapPlanner::Pass::release(ObjectId obj, StepId compute, StepId copy, int32_t pos) {
  rel_compute_[obj] = compute;
  rel_copy_[obj] = copy;
  rel_pos_[obj] = pos;
  if (arena()) {
    Tenancy& t = tenancies_[obj];
    t.end = when(pos, StepKind::kDrop);
    if (placed()) {
      if (bytes_[t.item] > 0) {
        auto it = ranges_.find(t.offset);
        SA_CHECK(it != ranges_.end() && it->second.tenancy == obj,
                 "tenancy {} of item {} not found at offset {}", obj, t.item, t.offset);
        it->second = {it->second.end, -1, pos, compute, copy};
        run_add(it->first, it->second.end, pos);
      }
    } else {
      free_bytes(pos, bytes_[t.item]);
    }
  }
  tenant_[obj] = -1;
}

void SwapPlanner::Pass::ring_push(ClassId c, ObjectId obj) {
  if (arena()) return;  // release() freed the bytes
  const int32_t cap = class_first_[c + 1] - class_first_[c];
  ring_[class_first_[c] + (ring_head_[c] + ring_size_[c]) % cap] = obj;
  ++ring_size_[c];
}

ObjectId SwapPlanner::Pass::ring_pop(ClassId c) {
  if (ring_size_[c] == 0) return kNoObject;
  const int32_t cap = class_first_[c + 1] - class_first_[c];
  const ObjectId obj = ring_[class_first_[c] + ring_head_[c]];
  ring_head_[c] = (ring_head_[c] + 1) % cap;
  --ring_size_[c];
  peak_in_use[c] = std::max(peak_in_use[c], cap - ring_size_[c]);
  return obj;
}

void SwapPlanner::Pass::free_bytes(int32_t key, int64_t bytes) {
  if (bytes == 0) return;
  if (free_at_[key + 1] == 0) free_keys_.insert(key);
  free_at_[key + 1] += bytes;
  free_total_ += bytes;
}

// Takes `bytes` free bytes, the earliest released first (or the latest), and
// returns the latest release key among them (-1: the start).
int32_t SwapPlanner::Pass::take_bytes(int64_t bytes, bool earliest) {
  SA_CHECK(bytes <= free_total_, "taking {} bytes of {} free", bytes, free_total_);
  free_total_ -= bytes;
  int32_t latest = -1;
  while (bytes > 0) {
    const int32_t key = earliest ? *free_keys_.begin() : *free_keys_.rbegin();
    int64_t& have = free_at_[key + 1];
    const int64_t t = std::min(bytes, have);
    have -= t;
    bytes -= t;
    latest = std::max(latest, key);
    if (have == 0) free_keys_.erase(key);
  }
  return latest;
}

// Arena: a new tenancy of x, whose memory is free from free_key on.
ObjectId SwapPlanner::Pass::open_tenancy(ItemId x, int32_t free_key) {
  const ObjectId t = static_cast<ObjectId>(tenancies_.size());
  tenancies_.push_back({x, 0, INT32_MAX, -1, t, 0});
  tenant_.push_back(-1);
  rel_compute_.push_back(-1);
  rel_copy_.push_back(-1);
  rel_pos_.push_back(free_key);  // a swap-in into it starts no earlier (swap_in())
  return t;
}

// Frees v's object, copying v out first if its device copy is newer and
// still needed. The object's next tenant waits for that.
void SwapPlanner::Pass::evict(ItemId v) {
  const ObjectId obj = obj_of_[v];
  // An item the current op touches comes back before it runs by a swap-in
  // (a relocation moves the op's inputs; a window may take one not placed
  // yet), so it may not be dropped to be recomputed.
  const bool recompute = needs_copy(v) && pinned_[v] != now_ && may_drop_to_recompute(v);
  const StepKind kind = needs_copy(v) && !recompute ? StepKind::kSwapOut : StepKind::kDrop;
  if (recompute) dropped_[v] = 1;
  if (recompute && dtr()) dtr_cost_->evict(v);
  if (kind == StepKind::kSwapOut) has_host_[v] = 1;
  const int32_t key = last_pos_[v];
  const StepId step = add_step(kind, v, obj, key, {last_step_[v]});
  if (kind == StepKind::kSwapOut) dirty_[v] = 0;
  // A later swap-in of v comes after this step: a swap-out writes the host
  // copy it reads; a drop takes v off the device it returns to.
  host_write_[v] = step;
  host_key_[v] = key;
  release(obj, last_step_[v], step, key);
  obj_of_[v] = kNoObject;
  unlist_resident(v);
}

// Note [Recomputation]: whether v, evicted now, may be dropped and made
// again by its producer before its next use, instead of copied out and in:
// the search's genes allow it for v's producer (PlannerOptions::recompute),
// which may run again (may_recompute), and v's next use comes no later than
// the producer's inputs, and those of the updates of its outputs replayed
// after it (Note [Update replay]), still hold what they read
// (recompute_until_).
bool SwapPlanner::Pass::may_drop_to_recompute(ItemId v) const {
  if (!opt_.recompute || v >= n_ || !is_transient(g_.tensors[v].kind) || !needed_later(v))
    return false;
  const OpId p = producer_[v];
  if (p == kNoOp || !(*opt_.recompute)[p] || recompute_until_[p] < 0) return false;
  return uses_[use_begin_[v] + cursor_[v]] <= recompute_until_[p];
}

// Note [Recomputation]: a recompute step, before the op at position i, that
// makes v (dropped) and its siblings again, followed by a replay of each
// update of them that ran before i (Note [Update replay]). Their inputs are
// brought back first (swapped in, or recomputed in turn); siblings on the
// device are dropped (the step makes them again); outputs nobody needs any
// more only pass through their objects. Returns the last step.
StepId SwapPlanner::Pass::recompute(TensorId v, int i) {
  const OpId p = producer_[v];
  const Op& op = g_.ops[p];
  std::vector<OpId> replays;
  for (OpId u : replays_[p]) {
    if (pos_of_[u] >= i) break;
    bool needed = false;  // an update of what only passes through is moot
    for (TensorId t : g_.ops[u].updates)
      needed = needed || needed_later(t) || t == v;  // v: read by the recompute that needs it
    if (needed) replays.push_back(u);
  }
  for (TensorId x : op.inputs)
    pinned_[x] = handled_[x] = i;  // walls until op i has run
  for (TensorId t : op.outputs)
    pinned_[t] = handled_[t] = i;
  for (OpId u : replays)
    for (TensorId x : g_.ops[u].inputs)
      pinned_[x] = handled_[x] = i;
  std::vector<StepId> waits;  // for the inputs made again
  auto bring_inputs = [&](const Op& o) {
    for (TensorId x : o.inputs) {
      if (obj_of_[x] != kNoObject) continue;
      // Note [Recompute through dead inputs]: a transient past its last use
      // is made again too.
      if (dropped_[x] || (is_transient(g_.tensors[x].kind) && !needed_later(x))) {
        waits.push_back(recompute(x, i));
        continue;
      }
      const ObjectId obj = acquire(x, i, true);
      if (obj == kNoObject) throw NoMemoryToRecompute{p, i};
      arrival_[x] = swap_in(x, obj, -1, -1);
    }
  };
  bring_inputs(op);
  for (OpId u : replays)
    bring_inputs(g_.ops[u]);
  for (TensorId t : op.outputs)
    if (obj_of_[t] != kNoObject) {
      dropped_[t] = 1;  // made again below: its copy here may go without a copy
      const uint8_t dirty = dirty_[t];
      const ObjectId obj = obj_of_[t];
      dirty_[t] = 0;
      evict(t);
      dirty_[t] = dirty;
      ring_push(class_[t], obj);  // the pool's: free again (no-op in the arena)
    }
  std::vector<ObjectId> made;                                   // the outputs' objects
  std::vector<size_t> passing_at(op.outputs.size(), SIZE_MAX);  // their passing_ entries
  // One step of op o: objects slot by slot (outputs, inputs, updates,
  // workspace; outputs and workspace fresh) and the waits. An op whose
  // recompute skips its updates has no update slots (Note [Recompute
  // without updates]); a replay's updates are p's outputs.
  auto emit = [&](OpId o) {
    const Op& oo = g_.ops[o];
    const int32_t obj_begin = static_cast<int32_t>(recompute_objs_.size());
    std::vector<ObjectId> fresh_objs;
    auto fresh = [&](ItemId x) {
      const ObjectId obj = acquire(x, i, false);
      if (obj == kNoObject) throw NoMemoryToRecompute{p, i};
      if (rel_copy_[obj] >= 0) waits.push_back(rel_copy_[obj]);
      if (placed()) waits.insert(waits.end(), taken_copy_.begin(), taken_copy_.end());
      tenant_[obj] = x;
      fresh_objs.push_back(obj);
      recompute_objs_.push_back(obj);
    };
    for (TensorId t : oo.outputs)
      fresh(t);
    for (TensorId x : oo.inputs) {
      recompute_objs_.push_back(obj_of_[x]);
      if (arrival_[x] >= 0) waits.push_back(arrival_[x]);
    }
    if (step_touches_updates(oo, true))
      for (TensorId t : oo.updates)
        recompute_objs_.push_back(
            made[std::find(op.outputs.begin(), op.outputs.end(), t) - op.outputs.begin()]);
    if (oo.workspace_bytes > 0) fresh(n_ + o);
    std::sort(waits.begin(), waits.end());
    waits.erase(std::unique(waits.begin(), waits.end()), waits.end());
    const int32_t wb = static_cast<int32_t>(waits_.size());
    waits_.insert(waits_.end(), waits.begin(), waits.end());
    waits.clear();
    steps_.push_back({StepKind::kRecompute, o, kNoObject, i, wb,
                      static_cast<int32_t>(waits_.size()), obj_begin,
                      static_cast<int32_t>(recompute_objs_.size())});
    const StepId step = static_cast<StepId>(steps_.size()) - 1;
    // Inputs: used now; a later eviction of one is keyed after it: at i.
    for (TensorId x : oo.inputs) {
      last_step_[x] = step;
      last_pos_[x] = std::max(last_pos_[x], i);
      arrival_[x] = -1;
      if (kind_[x] == ItemKind::kInput && !needed_later(x)) passing_inputs_.push_back(x);
    }
    for (ObjectId obj : fresh_objs)
      if (arena()) {
        tenancies_[obj].begin = when(i, StepKind::kCompute);
        tenancies_[obj].first = step;
      }
    if (oo.workspace_bytes > 0) passing_.push_back({fresh_objs.back(), n_ + o, step});
    fresh_objs.resize(oo.outputs.size());
    made.insert(made.end(), fresh_objs.begin(), fresh_objs.end());
    return step;
  };
  StepId last = emit(p);
  // Outputs: on the device again if still needed, else freed after op i.
  for (size_t k = 0; k < op.outputs.size(); ++k) {
    const TensorId t = op.outputs[k];
    const ObjectId obj = made[k];
    if (dtr()) dtr_cost_->restore(t);
    if (needed_later(t)) {
      obj_of_[t] = obj;
      dropped_[t] = 0;
      dirty_[t] = !has_host_[t];
      last_step_[t] = last;
      last_pos_[t] = std::max(last_pos_[t], i);
      list_resident(t);
    } else {
      // Only passes through, but a recompute after this one at position i
      // may read it (Note [Recompute through dead inputs]): it holds its
      // object until op i has run, as what a recompute used does.
      passing_at[k] = passing_.size();
      passing_.push_back({obj, t, last});
      obj_of_[t] = obj;
      last_step_[t] = last;
      last_pos_[t] = i;
    }
  }
  for (OpId u : replays) {
    last = emit(u);
    for (TensorId t : g_.ops[u].updates) {
      const size_t k = std::find(op.outputs.begin(), op.outputs.end(), t) - op.outputs.begin();
      if (passing_at[k] != SIZE_MAX)
        passing_[passing_at[k]].step = last;
      else
        last_step_[t] = last;
    }
  }
  return last;
}

// Copies x from its host copy into obj, once the object's previous tenant is
// released, the host copy is written (x's last swap-out) and `after` (a
// compute step, or -1) has run; key_pos is the earliest position to order it.
StepId SwapPlanner::Pass::swap_in(ItemId x, ObjectId obj, int32_t key_pos, StepId after) {
  const int32_t key = std::max({rel_pos_[obj], host_key_[x], key_pos});
  const StepId step = add_step(StepKind::kSwapIn, x, obj, key,
                               {rel_compute_[obj], rel_copy_[obj], host_write_[x], after});
  if (placed()) {  // and for the releases of the memory it took
    for (const auto* taken : {&taken_compute_, &taken_copy_})
      for (StepId w : *taken)
        waits_.push_back(w);
    steps_.back().wait_end = static_cast<int32_t>(waits_.size());
  }
  if (arena()) {
    tenancies_[obj].begin = when(key, StepKind::kSwapIn);
    tenancies_[obj].first = step;
  }
  obj_of_[x] = obj;
  tenant_[obj] = x;
  list_resident(x);
  return step;
}

// The resident to evict so that x (needed before position i) gets memory:
// the one with the furthest next use (Belady; LRU: the oldest last use),
// among those whose eviction leaves time for its copies when there are any
// (ties: the larger item id, for determinism). -1 if none may go.
ItemId SwapPlanner::Pass::pick_victim(ItemId x, int i, bool swap_in) const {
  if (dtr()) return pick_dtr_victim(x, i);
  ItemId best = -1, best_eligible = -1;
  int64_t best_key = 0, best_eligible_key = 0;
  for (ItemId v : residents_[class_[x]]) {
    if (pinned_[v] == i || (dir_ && !dir_->never_evict.empty() && dir_->never_evict[v])) continue;
    const int64_t key = victim_key(v);
    if (best < 0 || key > best_key || (key == best_key && v > best)) {
      best = v;
      best_key = key;
    }
    if (best_eligible >= 0 &&
        (key < best_eligible_key || (key == best_eligible_key && v < best_eligible)))
      continue;
    if (eligible_victim(v, x, i, swap_in)) {
      best_eligible = v;
      best_eligible_key = key;
    }
  }
  return best_eligible >= 0 ? best_eligible : best;
}

// EvictionPolicy::kDtr: of the residents that may be dropped to be
// recomputed, the one with the smallest DTR score (Note [DTR heuristic]),
// staleness counted in op time from the start of its last access to
// position i (ties: the larger item id). -1 if none may go.
ItemId SwapPlanner::Pass::pick_dtr_victim(ItemId x, int i) const {
  ItemId best = -1;
  double best_h = 0;
  for (ItemId v : residents_[class_[x]]) {
    if (pinned_[v] == i || bytes_[v] == 0 || !may_drop_to_recompute(v)) continue;
    const double h =
        DtrCost::score(dtr_cost_->cost(v), bytes_[v], prefix_[i] - prefix_[last_pos_[v]]);
    if (best < 0 || h < best_h || (h == best_h && v > best)) {
      best = v;
      best_h = h;
    }
  }
  return best;
}

// Whether v's last use is long enough ago, in op time before position i,
// for the copies its eviction for x needs (the paper's eviction threshold).
bool SwapPlanner::Pass::eligible_victim(ItemId v, ItemId x, int i, bool swap_in) const {
  const double need = (swap_in ? h2d_us_[x] : 0.0) + (needs_copy(v) ? d2h_us_[v] : 0.0);
  const double elapsed = prefix_[i] - prefix_[last_pos_[v] + 1];
  return elapsed >= opt_.eviction_threshold * need;
}

// Placed mode: splits the range that holds address `at` there (a free one:
// both parts keep its release).
void SwapPlanner::Pass::split_range(int64_t at) {
  auto it = ranges_.upper_bound(at);
  if (it == ranges_.begin()) return;
  --it;
  if (it->first == at || it->second.end <= at) return;
  SA_CHECK(it->second.tenancy < 0, "splitting held range [{}, {}) at {}", it->first, it->second.end,
           at);
  Range right = it->second;
  it->second.end = at;
  ranges_.emplace_hint(std::next(it), at, right);
}

// Placed mode: a new tenancy of x at [at, at + bytes), which must be free;
// taken_* get the releases of the ranges it covers.
ObjectId SwapPlanner::Pass::take_range(ItemId x, int64_t at) {
  const int64_t bytes = bytes_[x];
  taken_compute_.clear();
  taken_copy_.clear();
  taken_pieces_.clear();
  int32_t key = -1;
  if (bytes > 0) {
    split_range(at);
    split_range(at + bytes);
    auto it = ranges_.find(at);
    while (it != ranges_.end() && it->first < at + bytes) {
      const Range& r = it->second;
      SA_CHECK(r.tenancy < 0, "item {} placed at [{}, {}) over tenancy {}", x, at, at + bytes,
               r.tenancy);
      key = std::max(key, r.key);
      if (r.rel_compute >= 0) taken_compute_.push_back(r.rel_compute);
      if (r.rel_copy >= 0) taken_copy_.push_back(r.rel_copy);
      taken_pieces_.push_back({it->first, r});
      it = ranges_.erase(it);
    }
  }
  const ObjectId t = open_tenancy(x, key);
  tenancies_[t].offset = at;
  if (bytes > 0) {
    ranges_.emplace(at, Range{at + bytes, t, -1, -1, -1});
    run_remove(at, at + bytes);
  }
  return t;
}

// Placed mode: [at, end) has become free; it joins the runs around it.
void SwapPlanner::Pass::run_add(int64_t at, int64_t end, int32_t key) {
  auto next = runs_.lower_bound(at);
  if (next != runs_.end() && next->first == end) {
    const FreeRun n = next->second;
    runs_by_size_.erase({n.end - next->first, next->first, n.key});
    end = n.end;
    key = std::max(key, n.key);
    next = runs_.erase(next);
  }
  if (next != runs_.begin()) {
    auto prev = std::prev(next);
    if (prev->second.end == at) {
      runs_by_size_.erase({prev->second.end - prev->first, prev->first, prev->second.key});
      at = prev->first;
      key = std::max(key, prev->second.key);
      runs_.erase(prev);
    }
  }
  runs_.emplace(at, FreeRun{end, key});
  runs_by_size_.insert({end - at, at, key});
}

// Placed mode: [at, end), inside one free run, is taken. What is left of the
// run keeps its key (an upper bound of its ranges' release positions).
void SwapPlanner::Pass::run_remove(int64_t at, int64_t end) {
  auto it = runs_.upper_bound(at);
  SA_CHECK(it != runs_.begin(), "no free run holds [{}, {})", at, end);
  --it;
  const int64_t run_at = it->first;
  const FreeRun run = it->second;
  SA_CHECK(run_at <= at && end <= run.end, "[{}, {}) is not inside free run [{}, {})", at, end,
           run_at, run.end);
  runs_by_size_.erase({run.end - run_at, run_at, run.key});
  runs_.erase(it);
  if (run_at < at) {
    runs_.emplace(run_at, FreeRun{at, run.key});
    runs_by_size_.insert({at - run_at, run_at, run.key});
  }
  if (end < run.end) {
    runs_.emplace(end, FreeRun{run.end, run.key});
    runs_by_size_.insert({run.end - end, end, run.key});
  }
}

// Placed mode: evicts every resident that holds part of [at, at + bytes).
void SwapPlanner::Pass::clear_range(int64_t at, int64_t bytes, int i) {
  std::vector<ItemId> victims;
  auto it = ranges_.upper_bound(at);
  if (it != ranges_.begin()) --it;
  for (; it != ranges_.end() && it->first < at + bytes; ++it) {
    const ObjectId t = it->second.tenancy;
    if (t < 0 || it->second.end <= at) continue;
    const ItemId v = tenancies_[t].item;
    // What a recompute made for nobody holds its range until the op ran;
    // what a recompute used may go only after it.
    if (obj_of_[v] != t || last_pos_[v] >= i) throw NoRoom{v, i};
    victims.push_back(v);
  }
  for (ItemId v : victims)
    evict(v);
}

// Placed mode: memory for x, needed before position i. Of the kFitsTried
// smallest free runs that fit it, the one released earliest (a swap-in into
// memory freed long ago can start at once; one into memory whose swap-out is
// still running waits: the pool's rings take the object freed first for the
// same reason); else a window of the
// arena whose residents may all go, chosen as Belady would choose a victim:
// windows around the residents whose next use is furthest (kCandidates of
// them, preferring those whose last use leaves time for their copies), each
// grown over its neighbours (free ones first, then the one used last) until
// it holds x; the window whose earliest next use is furthest wins (among
// those whose victims all leave time for their copies, when there are any),
// then the one that evicts the fewest bytes.
ObjectId SwapPlanner::Pass::place(ItemId x, int i, bool swap_in) {
  constexpr int kCandidates = 6;
  constexpr int kFitsTried = 32;  // free runs looked at, the smallest first
  constexpr int kScanned = 64;    // residents looked at as victims, the furthest next use first
  const int64_t need = bytes_[x];
  if (need == 0) return take_range(x, 0);
  {
    // Of the few smallest free runs that fit, the one whose memory was
    // released earliest (its last tenant's copies are the likeliest done).
    int64_t best_run = -1;
    int32_t best_key = INT32_MAX;
    int tried = 0;
    for (auto fit = runs_by_size_.lower_bound({need, INT64_MIN, INT32_MIN});
         fit != runs_by_size_.end() && tried < kFitsTried; ++fit, ++tried) {
      const auto [size, at, key] = *fit;
      if (key < best_key) {
        best_key = key;
        best_run = at;
        if (key < 0) break;  // never used: none is older
      }
    }
    if (best_run >= 0) return take_range(x, best_run);
  }

  auto movable = [&](ItemId v) {
    return listed_at_[v] >= 0 && pinned_[v] != i &&
           !(dir_ && !dir_->never_evict.empty() && dir_->never_evict[v]);
  };
  struct Score {
    bool eligible = true;
    int64_t next_use = INT64_MAX;
    int64_t evicted = 0;
    bool operator<(const Score& o) const {  // better
      if (eligible != o.eligible) return eligible;
      if (next_use != o.next_use) return next_use > o.next_use;
      return evicted < o.evicted;
    }
  };
  // The candidates: the best residents by (eligible, next use), and the
  // best of those about x's size (one of them alone makes room for x).
  std::pair<Score, ItemId> top[2 * kCandidates];
  int num_top = 0, num_sized = 0;
  std::pair<Score, ItemId>* sized = top + kCandidates;
  auto keep_best = [](std::pair<Score, ItemId>* list, int* n, const Score& sc, ItemId v) {
    if (*n == kCandidates && !(sc < list[*n - 1].first)) return;
    int k = *n < kCandidates ? (*n)++ : *n - 1;
    for (; k > 0 && sc < list[k - 1].first; --k)
      list[k] = list[k - 1];
    list[k] = {sc, v};
  };
  // The kScanned residents with the furthest next use, best first. Stale
  // entries on top of the lazy heap go for good; below it, the heap is
  // walked in order without changing it (a frontier of its indices, the
  // best first), and the walk stops once both lists hold kCandidates
  // eligible victims: later entries have no later next use, so none could
  // enter either list (popping 64 entries and pushing them back took most
  // of the arena walk's time).
  auto stale = [&](const VictimEntry& e) {
    return e.version != heap_ver_[e.item] || listed_at_[e.item] < 0;
  };
  while (!victims_.empty() && stale(victims_.front())) {
    std::pop_heap(victims_.begin(), victims_.end());
    victims_.pop_back();
  }
  auto full = [](const std::pair<Score, ItemId>* list, int n) {
    return n == kCandidates && list[n - 1].first.eligible;
  };
  frontier_.clear();
  if (!victims_.empty()) frontier_.push_back(0);
  const auto heap_size = static_cast<int32_t>(victims_.size());
  auto later_entry = [&](int32_t a, int32_t b) { return victims_[a] < victims_[b]; };
  for (int scanned = 0; !frontier_.empty() && scanned < kScanned;) {
    std::pop_heap(frontier_.begin(), frontier_.end(), later_entry);
    const int32_t k = frontier_.back();
    frontier_.pop_back();
    for (int32_t c = 2 * k + 1; c <= 2 * k + 2 && c < heap_size; ++c) {
      frontier_.push_back(c);
      std::push_heap(frontier_.begin(), frontier_.end(), later_entry);
    }
    const VictimEntry& e = victims_[k];
    if (stale(e)) continue;
    ++scanned;
    const ItemId v = e.item;
    if (!movable(v) || bytes_[v] == 0) continue;
    const Score sc{eligible_victim(v, x, i, swap_in), e.key, 0};
    keep_best(top, &num_top, sc, v);
    if (bytes_[v] >= need && bytes_[v] <= 2 * need) keep_best(sized, &num_sized, sc, v);
    if (full(top, num_top) && full(sized, num_sized)) break;
  }
  for (int k = 0; k < num_sized; ++k)
    top[num_top++] = sized[k];
  int64_t best_at = -1;
  Score best;
  std::vector<ItemId>& best_victims = best_victims_;
  std::vector<ItemId>& victims = window_victims_;
  best_victims.clear();
  for (int c = 0; c < num_top; ++c) {
    const ItemId v0 = top[c].second;
    auto lo = ranges_.find(tenancies_[obj_of_[v0]].offset);
    auto hi = std::next(lo);  // the window is [lo, hi)
    Score sc = top[c].first;
    sc.evicted = bytes_[v0];
    victims.assign(1, v0);
    int64_t covered = lo->second.end - lo->first;
    bool ok = true;
    while (ok && covered < need) {
      // A neighbour's worth: free beats any resident; else the later next use.
      auto worth = [&](const Range& r, Score* s) {
        if (r.tenancy < 0) return 2;
        const ItemId v = tenancies_[r.tenancy].item;
        if (!movable(v)) return 0;
        *s = {eligible_victim(v, x, i, swap_in), victim_key(v), bytes_[v]};
        return 1;
      };
      Score sl, sr;
      const int wl = lo != ranges_.begin() ? worth(std::prev(lo)->second, &sl) : 0;
      const int wr = hi != ranges_.end() ? worth(hi->second, &sr) : 0;
      const bool left = wl > wr || (wl == wr && wl == 1 && sl < sr);
      if (std::max(wl, wr) == 0) {
        ok = false;
      } else if (left) {
        --lo;
        covered += lo->second.end - lo->first;
        if (wl == 1) {
          sc = {sc.eligible && sl.eligible, std::min(sc.next_use, sl.next_use),
                sc.evicted + sl.evicted};
          victims.push_back(tenancies_[lo->second.tenancy].item);
        }
      } else {
        covered += hi->second.end - hi->first;
        if (wr == 1) {
          sc = {sc.eligible && sr.eligible, std::min(sc.next_use, sr.next_use),
                sc.evicted + sr.evicted};
          victims.push_back(tenancies_[hi->second.tenancy].item);
        }
        ++hi;
      }
    }
    if (!ok) continue;
    if (best_at < 0 || sc < best) {
      best = sc;
      best_at = lo->first;
      best_victims = victims;
    }
  }
  if (best_at < 0) {
    // No window around a good victim: every window of the arena, and the
    // op's own inputs not handled yet may go too (they come back before it
    // runs), scored as needed now.
    std::vector<std::pair<int64_t, int64_t>> span;  // (at, end) per range
    std::vector<ItemId> who;                        // -1 free, -2 wall, else the victim
    for (const auto& [at, r] : ranges_) {
      ItemId v = -1;
      if (r.tenancy >= 0) {
        v = tenancies_[r.tenancy].item;
        const bool pending = pinned_[v] == i && handled_[v] != i;
        if (!(movable(v) || (pending && listed_at_[v] >= 0))) v = -2;
      }
      span.push_back({at, r.end});
      who.push_back(v);
    }
    const int np = static_cast<int>(span.size());
    for (int a = 0; a < np; ++a) {
      if (who[a] == -2) continue;
      Score sc;
      victims.clear();
      int64_t covered = 0;
      for (int b = a; b < np && covered < need && who[b] != -2; ++b) {
        if (who[b] >= 0) {
          const ItemId v = who[b];
          sc = {sc.eligible && eligible_victim(v, x, i, swap_in),
                std::min(sc.next_use, pinned_[v] == i ? int64_t{i} : victim_key(v)),
                sc.evicted + bytes_[v]};
          victims.push_back(v);
        }
        covered += span[b].second - span[b].first;
      }
      if (covered < need) continue;
      if (best_at < 0 || sc < best) {
        best = sc;
        best_at = span[a].first;
        best_victims = victims;
      }
    }
  }
  if (best_at < 0) return kNoObject;
  for (ItemId v : best_victims)
    evict(v);
  return take_range(x, best_at);
}

// An object for x, needed before position i: in the pool, of x's class (a
// free one, else a victim's); in the arena, a new tenancy: placed (place()),
// or over free bytes (victims evicted until there are enough).
ObjectId SwapPlanner::Pass::acquire(ItemId x, int i, bool swap_in) {
  if (placed()) {
    const ObjectId t = place(x, i, swap_in);
    if (t == kNoObject) throw NoRoom{x, i};
    return t;
  }
  if (arena()) {
    while (free_total_ < bytes_[x]) {
      const ItemId v = pick_victim(x, i, swap_in);
      if (v < 0) return kNoObject;
      evict(v);
    }
    return open_tenancy(x, take_bytes(bytes_[x], swap_in));
  }
  const ClassId c = class_[x];
  ObjectId obj = ring_pop(c);
  if (obj != kNoObject) return obj;
  const ItemId v = pick_victim(x, i, swap_in);
  if (v < 0) return kNoObject;
  obj = obj_of_[v];
  evict(v);
  return obj;
}

// A directed swap-in of x, issued once the op at position i-1 has run.
void SwapPlanner::Pass::fetch(ItemId x, int i) {
  if (obj_of_[x] != kNoObject || !needed_later(x)) return;
  if (kind_[x] == ItemKind::kTransient && cursor_[x] == 0) return;  // not created yet
  const ObjectId obj = acquire(x, i, true);
  SA_CHECK(obj != kNoObject, "no object to fetch tensor {} before position {}", x, i);
  arrival_[x] = swap_in(x, obj, i - 1, last_compute_);
}

// Placed mode: the memory for everything op i needs that is not on the
// device, the largest first, so that small items do not cut up the room the
// large ones need. When they cannot all fit around the op's own resident
// items (first fit decreasing into the runs between them), those leave too
// and the op's items are laid out one after the other from offset 0 (op i
// touches at most the capacity, so they fit): the op's inputs are moved.
void SwapPlanner::Pass::preplace(int i) {
  const OpId o = order_[i];
  const Op& op = g_.ops[o];
  std::vector<std::pair<ItemId, bool>> items;  // (item, created by op i)
  for_each_access(op, [&](TensorId x, Access a) { items.push_back({x, a == Access::kCreate}); });
  if (op.workspace_bytes > 0) items.push_back({n_ + o, true});
  std::sort(items.begin(), items.end());
  items.erase(std::unique(items.begin(), items.end(),
                          [](const auto& a, const auto& b) { return a.first == b.first; }),
              items.end());
  auto by_size = [&](const auto& a, const auto& b) {
    return bytes_[a.first] != bytes_[b.first] ? bytes_[a.first] > bytes_[b.first]
                                              : a.first < b.first;
  };
  std::sort(items.begin(), items.end(), by_size);
  for (const auto& it : items)
    handled_[it.first] = i;  // walls for place(): none of them may go now
  std::vector<std::pair<ItemId, bool>> needed;
  std::vector<std::pair<int64_t, int64_t>> walls;  // the op's residents, by offset
  for (const auto& it : items) {
    if (obj_of_[it.first] == kNoObject)
      needed.push_back(it);
    else if (bytes_[it.first] > 0)
      walls.push_back({tenancies_[obj_of_[it.first]].offset, bytes_[it.first]});
  }
  if (needed.empty()) return;
  std::sort(walls.begin(), walls.end());
  std::vector<int64_t> room;  // the runs between walls
  int64_t at = 0;
  for (const auto& [w, b] : walls) {
    room.push_back(w - at);
    at = w + b;
  }
  room.push_back(capacity_ - at);
  bool fits = true;
  for (const auto& [x, created] : needed) {
    const int64_t need = bytes_[x];  // (clang cannot capture the structured binding)
    auto r = std::find_if(room.begin(), room.end(), [need](int64_t left) { return left >= need; });
    if (r == room.end()) {
      fits = false;
      break;
    }
    *r -= bytes_[x];
  }
  auto settle = [&](ItemId x, bool created, ObjectId obj) {
    if (created) {
      pre_obj_[x] = obj;
      scratch_.insert(scratch_.end(), taken_copy_.begin(), taken_copy_.end());
    } else {
      arrival_[x] = swap_in(x, obj, -1, -1);
    }
  };
  if (fits) {
    // Reserve every range first; the copies come once all have one.
    struct Reserved {
      ItemId x;
      bool created;
      ObjectId t;
      std::vector<StepId> compute, copy;
      std::vector<std::pair<int64_t, Range>> pieces;
    };
    std::vector<Reserved> reserved;
    for (const auto& [x, created] : needed) {
      const ObjectId obj = place(x, i, !created);
      if (obj == kNoObject) {
        // The windows went elsewhere than first fit would have: give the
        // ranges back as they were, and move the op's inputs.
        for (auto r = reserved.rbegin(); r != reserved.rend(); ++r) {
          if (bytes_[r->x] == 0) continue;
          const int64_t at = tenancies_[r->t].offset;
          ranges_.erase(at);
          for (const auto& [p_at, piece] : r->pieces) {
            ranges_.emplace(p_at, piece);
            if (piece.tenancy < 0) run_add(p_at, piece.end, piece.key);
          }
        }
        fits = false;
        break;
      }
      reserved.push_back({x, created, obj, taken_compute_, taken_copy_, taken_pieces_});
    }
    if (fits) {
      for (Reserved& r : reserved) {
        taken_compute_ = std::move(r.compute);
        taken_copy_ = std::move(r.copy);
        settle(r.x, r.created, r.t);
      }
      return;
    }
  }
  for (const auto& it : items)
    if (obj_of_[it.first] != kNoObject) {
      // Touched by a recompute before op i: it may only go after op i.
      if (last_pos_[it.first] >= i) throw NoRoom{it.first, i};
      evict(it.first);
    }
  int64_t total = 0;
  for (const auto& it : items)
    total += bytes_[it.first];
  clear_range(0, total, i);
  at = 0;
  for (const auto& [x, created] : items) {
    settle(x, created, take_range(x, at));
    at += bytes_[x];
  }
}

void SwapPlanner::Pass::place_op(int i) {
  const OpId o = order_[i];
  const Op& op = g_.ops[o];
  scratch_.clear();
  created_.clear();
  // The op's dropped inputs are made again first (Note [Recomputation]).
  for_each_access(op, [&](TensorId x, Access) { handled_[x] = i; });
  for_each_access(op, [&](TensorId x, Access a) {
    if (a != Access::kCreate && obj_of_[x] == kNoObject && dropped_[x])
      scratch_.push_back(recompute(x, i));
  });
  if (placed()) preplace(i);
  int slot = access_begin_[o];
  auto place = [&](ItemId x, Access access) {
    handled_[x] = i;
    if (access == Access::kCreate) {
      const ObjectId obj = placed() ? pre_obj_[x] : acquire(x, i, false);
      if (obj == kNoObject && opt_.recompute) throw NoMemoryToRecompute{o, i};
      SA_CHECK(obj != kNoObject, "no object for item {} of op {}", x, o);
      obj_of_[x] = obj;
      tenant_[obj] = x;
      if (x < n_) list_resident(x);  // a workspace is never a victim
      if (rel_copy_[obj] >= 0) scratch_.push_back(rel_copy_[obj]);
      if (arena()) created_.push_back(obj);
    } else if (obj_of_[x] == kNoObject) {
      const ObjectId obj = acquire(x, i, true);
      if (obj == kNoObject && opt_.recompute) throw NoMemoryToRecompute{o, i};
      SA_CHECK(obj != kNoObject, "no object to bring tensor {} back for op {}", x, o);
      arrival_[x] = swap_in(x, obj, -1, -1);
    }
    if (arrival_[x] >= 0) {
      scratch_.push_back(arrival_[x]);
      arrival_[x] = -1;
    }
    access_objects_[slot++] = obj_of_[x];
  };
  for_each_access(op, place);
  if (op.workspace_bytes > 0) place(n_ + o, Access::kCreate);
}

void SwapPlanner::Pass::after_op(int i, StepId compute) {
  const OpId o = order_[i];
  const Op& op = g_.ops[o];
  for (ObjectId t : created_) {
    tenancies_[t].begin = when(i, StepKind::kCompute);
    tenancies_[t].first = compute;
  }
  auto after = [&](ItemId x, Access access) {
    last_step_[x] = compute;
    last_pos_[x] = i;
    ++cursor_[x];
    heap_touch(x);
    if (access != Access::kRead) dirty_[x] = 1;
    if (access == Access::kUpdate) has_host_[x] = 0;  // the host copy is older now
    const ObjectId obj = obj_of_[x];
    if (needed_later(x) || kind_[x] == ItemKind::kPersistent) return;
    // Last use in the iteration: transients die, inputs are dropped. To
    // DTR a dead tensor is an evicted one: a recompute that reads it makes
    // it again (Note [Recompute through dead inputs]).
    if (dtr() && x < n_ && kind_[x] == ItemKind::kTransient) dtr_cost_->evict(x);
    const StepId drop =
        kind_[x] == ItemKind::kInput ? add_step(StepKind::kDrop, x, obj, i, {compute}) : -1;
    release(obj, compute, drop, i);
    obj_of_[x] = kNoObject;
    unlist_resident(x);
    ring_push(class_[x], obj);
  };
  for_each_access(op, after);
  if (op.workspace_bytes > 0) after(n_ + o, Access::kCreate);
  // What the op's recomputes made and nobody needs is freed with the op's
  // own dead items: freed before it ran, it would be keyed at its position
  // and taken by its own items' copies, which the op then waits for.
  for (const Passing& x : passing_) {
    StepId last = x.step;
    if (x.item < n_) {  // a tensor: readable until now (Note [Recompute through dead inputs])
      SA_CHECK(obj_of_[x.item] == x.obj, "passing tensor {} left object {}", x.item, x.obj);
      last = std::max(last, last_step_[x.item]);  // the last recompute that read it
      obj_of_[x.item] = kNoObject;
      if (dtr()) dtr_cost_->evict(x.item);
    }
    release(x.obj, last, -1, i);
    ring_push(class_[x.item], x.obj);
  }
  passing_.clear();
  // Inputs a recompute read after their last use are dropped as after_op's
  // last use drops them (unless evicted meanwhile, or read by this op).
  for (ItemId u : passing_inputs_) {
    if (needed_later(u) || obj_of_[u] == kNoObject) continue;
    const ObjectId obj = obj_of_[u];
    const StepId drop = add_step(StepKind::kDrop, u, obj, i, {last_step_[u]});
    release(obj, last_step_[u], drop, i);
    obj_of_[u] = kNoObject;
    unlist_resident(u);
    ring_push(class_[u], obj);
  }
  passing_inputs_.clear();
}

bool SwapPlanner::Pass::run(const std::vector<ResidentTensor>& resident_in, bool fix_up) {
  const int items = num_items_;
  obj_of_.assign(items, kNoObject);
  dirty_.assign(items, 0);
  cursor_.assign(items, 0);
  last_pos_.assign(items, -1);
  pinned_.assign(items, -1);
  handled_.assign(items, -1);
  pre_obj_.assign(items, kNoObject);
  last_step_.assign(items, -1);
  arrival_.assign(items, -1);
  host_write_.assign(items, -1);
  host_key_.assign(items, -1);
  dropped_.assign(items, 0);
  has_host_.assign(items, 0);
  if (dtr()) dtr_cost_->reset();
  recompute_objs_.clear();
  passing_.clear();
  passing_inputs_.clear();
  listed_at_.assign(items, -1);
  heap_ver_.assign(items, 0);
  victims_.clear();
  residents_.resize(nc_);
  for (auto& list : residents_)
    list.clear();
  steps_.clear();
  waits_.clear();
  access_objects_.assign(access_begin_[m_], kNoObject);
  resident_at_end_.clear();
  last_compute_ = -1;

  // In the arena, the residents' objects are this pass's first tenancies.
  std::vector<ResidentTensor> resident = resident_in;
  if (placed()) {  // the residents' offsets, from the tenancies of the pass before
    start_offset_.resize(n_);
    for (const ResidentTensor& r : resident)
      start_offset_[r.tensor] = tenancies_[r.object].offset;
  }
  if (arena()) {
    tenancies_.clear();
    tenant_.clear();
    rel_compute_.clear();
    rel_copy_.clear();
    rel_pos_.clear();
    free_at_.assign(m_ + 1, 0);
    free_keys_.clear();
    free_total_ = 0;
    int64_t held = 0;
    ranges_.clear();
    runs_.clear();
    runs_by_size_.clear();
    if (placed()) {
      ranges_[0] = {capacity_, -1, -1, -1, -1};
      run_add(0, capacity_, -1);
    }
    for (ResidentTensor& r : resident) {
      if (placed()) {
        r.object = take_range(r.tensor, start_offset_[r.tensor]);
      } else {
        r.object = open_tenancy(r.tensor, -1);
      }
      held += bytes_[r.tensor];
    }
    SA_CHECK(held <= capacity_, "resident set of {} bytes over the capacity of {}", held,
             capacity_);
    if (!placed()) free_bytes(-1, capacity_ - held);
  } else {
    tenant_.assign(num_objects_, -1);
    rel_compute_.assign(num_objects_, -1);
    rel_copy_.assign(num_objects_, -1);
    rel_pos_.assign(num_objects_, -1);
    ring_.assign(num_objects_, kNoObject);
    ring_head_.assign(nc_, 0);
    ring_size_.assign(nc_, 0);
  }

  for (const ResidentTensor& r : resident) {
    obj_of_[r.tensor] = r.object;
    tenant_[r.object] = r.tensor;
    dirty_[r.tensor] = updated_[r.tensor];
    list_resident(r.tensor);
  }
  if (!arena())
    for (ClassId c = 0; c < nc_; ++c) {
      for (ObjectId obj = class_first_[c]; obj < class_first_[c + 1]; ++obj)
        if (tenant_[obj] < 0) ring_push(c, obj);
      const int32_t cap = class_first_[c + 1] - class_first_[c];
      peak_in_use[c] = std::max(peak_in_use[c], cap - ring_size_[c]);
    }

  for (int i = 0; i < m_; ++i) {
    now_ = i;
    const OpId o = order_[i];
    const Op& op = g_.ops[o];
    for_each_access(op, [&](TensorId x, Access) { pinned_[x] = i; });
    if (op.workspace_bytes > 0) pinned_[n_ + o] = i;
    if (dir_ && !dir_->fetch_before.empty())
      for (TensorId x : dir_->fetch_before[i])
        fetch(x, i);
    place_op(i);
    std::sort(scratch_.begin(), scratch_.end());
    scratch_.erase(std::unique(scratch_.begin(), scratch_.end()), scratch_.end());
    const int32_t wb = static_cast<int32_t>(waits_.size());
    waits_.insert(waits_.end(), scratch_.begin(), scratch_.end());
    steps_.push_back(
        {StepKind::kCompute, o, kNoObject, i, wb, static_cast<int32_t>(waits_.size())});
    last_compute_ = static_cast<StepId>(steps_.size()) - 1;
    after_op(i, last_compute_);
    now_ = i + 1;
    if (dir_ && !dir_->evict_after.empty())
      for (TensorId x : dir_->evict_after[i]) {
        const ObjectId obj = obj_of_[x];
        if (obj == kNoObject) continue;
        if (dir_->drop_only && needs_copy(x) && !may_drop_to_recompute(x)) continue;
        evict(x);
        ring_push(class_[x], obj);
      }
  }

  // The end of the iteration. The tensors of `resident` must be in their
  // objects, at their latest value, for the next iteration. Those that are
  // not (evicted on the way) are put back when fix_up: their objects are
  // freed and they are copied in again; otherwise the pass is inconsistent.
  // In the arena, a tensor of `resident` that came back on the way and is
  // still on the device needs no copy: its last tenancy joins its first one
  // in the packing (one offset). Every other persistent tensor on the device
  // is written back if modified, else dropped.
  bool consistent = true;
  for (const ResidentTensor& r : resident)
    consistent = consistent && obj_of_[r.tensor] == r.object;
  if (!consistent && fix_up) {
    std::vector<ResidentTensor> misplaced;
    for (const ResidentTensor& r : resident)
      if (obj_of_[r.tensor] != r.object) misplaced.push_back(r);
    if (placed()) {
      // Each goes back to its own offset: whatever holds it leaves first.
      for (const ResidentTensor& r : misplaced)
        if (obj_of_[r.tensor] != kNoObject) evict(r.tensor);
      for (const ResidentTensor& r : misplaced)
        clear_range(start_offset_[r.tensor], bytes_[r.tensor], m_);
      for (const ResidentTensor& r : misplaced)
        swap_in(r.tensor, take_range(r.tensor, start_offset_[r.tensor]), -1, -1);
    } else if (arena()) {
      // Others leave first, so that the bytes are there.
      std::vector<uint8_t> wanted(items, 0);
      for (const ResidentTensor& r : resident)
        wanted[r.tensor] = 1;
      for (TensorId x = 0; x < n_; ++x)
        if (obj_of_[x] != kNoObject && !wanted[x]) evict(x);
      for (const ResidentTensor& r : misplaced) {
        ObjectId obj = obj_of_[r.tensor];
        if (obj == kNoObject) {
          obj = open_tenancy(r.tensor, take_bytes(bytes_[r.tensor], true));
          swap_in(r.tensor, obj, -1, -1);
        }
        tenancies_[obj].unit = r.object;
      }
    } else {
      for (const ResidentTensor& r : misplaced)
        if (tenant_[r.object] >= 0) evict(tenant_[r.object]);
      for (const ResidentTensor& r : misplaced)
        if (obj_of_[r.tensor] != kNoObject) evict(r.tensor);
      for (const ResidentTensor& r : misplaced)
        swap_in(r.tensor, r.object, -1, -1);
    }
    consistent = true;
  }
  std::vector<uint8_t> keep(arena() ? tenancies_.size() : num_objects_, 0);
  for (const ResidentTensor& r : resident) {
    const ObjectId obj = obj_of_[r.tensor];
    if (obj == r.object || (arena() && fix_up && obj != kNoObject)) keep[obj] = 1;
  }
  for (TensorId x = 0; x < n_; ++x) {
    const ObjectId obj = obj_of_[x];
    if (obj == kNoObject) continue;
    SA_CHECK(kind_[x] == ItemKind::kPersistent, "tensor {} resident after its last use", x);
    resident_at_end_.push_back({x, obj});
    if (keep[obj]) continue;
    const StepId step = add_step(dirty_[x] ? StepKind::kSwapOut : StepKind::kDrop, x, obj,
                                 last_pos_[x], {last_step_[x]});
    if (arena()) release(obj, last_step_[x], step, last_pos_[x]);
  }
  if (arena()) resident_in_arena_ = resident;
  return consistent;
}

std::vector<ResidentTensor> SwapPlanner::Pass::run_passes(std::span<const int32_t> cnt) {
  if (!arena()) {
    class_first_.assign(nc_ + 1, 0);
    for (int c = 0; c < nc_; ++c)
      class_first_[c + 1] = class_first_[c] + cnt[c];
    num_objects_ = class_first_[nc_];
    peak_in_use.assign(nc_, 0);
  }
  std::vector<ResidentTensor> resident;
  run(resident, false);
  if (!opt_.steady_state || resident_at_end_.empty()) return resident;
  resident = resident_at_end_;
  for (int pass = 0;; ++pass) {
    const bool last = pass >= opt_.max_passes;
    if (run(resident, last)) return arena() ? resident_in_arena_ : resident;
    // Keep the tensors of R that stayed in their objects.
    std::vector<ResidentTensor> kept;
    for (const ResidentTensor& r : arena() ? resident_in_arena_ : resident)
      if (obj_of_[r.tensor] == r.object) kept.push_back(r);
    resident = std::move(kept);
  }
}

int64_t SwapPlanner::Pass::objects_from_placements() {
  // One object per distinct range: a tensor back at its offset at the end
  // of the iteration reuses the object it started in.
  std::map<std::pair<int64_t, int64_t>, int32_t> object_of;
  const int nt = static_cast<int>(tenancies_.size());
  tenancy_unit_.assign(nt, -1);
  unit_offset_.clear();
  unit_bytes_.clear();
  int64_t peak = 0;
  for (int t = 0; t < nt; ++t) {
    const Tenancy& x = tenancies_[t];
    const std::pair<int64_t, int64_t> range{x.offset, bytes_[x.item]};
    auto [it, fresh] = object_of.try_emplace(range, static_cast<int32_t>(unit_offset_.size()));
    if (fresh) {
      unit_offset_.push_back(range.first);
      unit_bytes_.push_back(range.second);
      peak = std::max(peak, range.first + range.second);
    }
    tenancy_unit_[t] = it->second;
  }
  tighten_swap_in_keys();
  return peak;
}

int64_t SwapPlanner::Pass::pack() {
  const int nt = static_cast<int>(tenancies_.size());
  const int32_t end_of_iteration = when(m_ + 1, StepKind::kCompute);
  tenancy_unit_.assign(nt, -1);
  pack_items_.clear();
  for (int t = 0; t < nt; ++t) {
    const Tenancy& x = tenancies_[t];
    // A joined tenancy's unit is an earlier tenancy, already numbered.
    int32_t& u = tenancy_unit_[t];
    u = x.unit == t ? static_cast<int32_t>(pack_items_.size()) : tenancy_unit_[x.unit];
    if (u == static_cast<int32_t>(pack_items_.size())) pack_items_.push_back({bytes_[x.item], {}});
    const Interval life{x.begin, x.end == INT32_MAX ? end_of_iteration : x.end};
    SA_CHECK(life.begin <= life.end, "tenancy {} of item {} ends at {} before it begins at {}", t,
             x.item, life.end, life.begin);
    PackItem& item = pack_items_[u];
    (item.life[0].empty() ? item.life[0] : item.life[1]) = life;
  }
  unit_bytes_.resize(pack_items_.size());
  for (size_t u = 0; u < pack_items_.size(); ++u)
    unit_bytes_[u] = pack_items_[u].bytes;
  return packer_.pack(pack_items_, &unit_offset_, opt_.packing);
}

void SwapPlanner::Pass::add_reuse_waits() {
  const int nt = static_cast<int>(tenancies_.size());
  std::vector<int32_t> by_begin(nt);
  for (int t = 0; t < nt; ++t)
    by_begin[t] = t;
  std::stable_sort(by_begin.begin(), by_begin.end(),
                   [&](int32_t a, int32_t b) { return tenancies_[a].begin < tenancies_[b].begin; });
  reuse_waits_.clear();
  RangeMap<int32_t> last;  // arena address -> the last tenancy there
  for (int32_t t : by_begin) {
    const Tenancy& x = tenancies_[t];
    const int64_t offset = unit_offset_[tenancy_unit_[t]];
    last.assign(offset, offset + bytes_[x.item], t, [&](int64_t, int64_t, int32_t prev) {
      SA_CHECK(tenancies_[prev].end < x.begin,
               "tenancy {} (item {}) overlaps tenancy {} (item {}) in time and in the arena", t,
               x.item, prev, tenancies_[prev].item);
      if (x.first < 0) return;
      // A creating compute step follows the previous tenant's last compute
      // step on the compute stream already.
      if (steps_[x.first].kind == StepKind::kSwapIn && rel_compute_[prev] >= 0)
        reuse_waits_.push_back({x.first, rel_compute_[prev]});
      if (rel_copy_[prev] >= 0) reuse_waits_.push_back({x.first, rel_copy_[prev]});
    });
  }
  if (!reuse_waits_.empty()) {
    // Merge them into each step's waits.
    std::sort(reuse_waits_.begin(), reuse_waits_.end());
    std::vector<StepId> merged;
    merged.reserve(waits_.size() + reuse_waits_.size());
    size_t k = 0;
    for (StepId s = 0; s < static_cast<StepId>(steps_.size()); ++s) {
      TempStep& st = steps_[s];
      const int32_t begin = static_cast<int32_t>(merged.size());
      merged.insert(merged.end(), waits_.begin() + st.wait_begin, waits_.begin() + st.wait_end);
      for (; k < reuse_waits_.size() && reuse_waits_[k].first == s; ++k)
        merged.push_back(reuse_waits_[k].second);
      std::sort(merged.begin() + begin, merged.end());
      merged.erase(std::unique(merged.begin() + begin, merged.end()), merged.end());
      st.wait_begin = begin;
      st.wait_end = static_cast<int32_t>(merged.size());
    }
    waits_ = std::move(merged);
  }
  tighten_swap_in_keys();
}

// A swap-in was keyed where the walk had room for it; its place in the
// arena may have been free earlier. Keyed at its latest wait instead, it
// enters the copy order as soon as it can start (Note [Copy order] admits a
// copy once the op at its key has run).
void SwapPlanner::Pass::tighten_swap_in_keys() {
  for (TempStep& st : steps_) {
    if (st.kind != StepKind::kSwapIn) continue;
    int32_t key = -1;
    for (int32_t w = st.wait_begin; w < st.wait_end; ++w)
      key = std::max(key, steps_[waits_[w]].key_pos);
    st.key_pos = key;
  }
}

// The steps sorted on (key_pos, rank), stably in the order of `visit` (a
// counting sort): result[k] is the step that goes k-th.
std::vector<int32_t> SwapPlanner::Pass::by_key(std::span<const int32_t> visit) const {
  const int buckets = (m_ + 1) * 3;
  std::vector<int32_t> begin(buckets + 1, 0);
  auto bucket_of = [&](const TempStep& t) { return (t.key_pos + 1) * 3 + rank_of(t.kind); };
  for (const TempStep& t : steps_)
    ++begin[bucket_of(t) + 1];
  for (int b = 0; b < buckets; ++b)
    begin[b + 1] += begin[b];
  std::vector<int32_t> sorted(steps_.size());
  for (int32_t k : visit)
    sorted[begin[bucket_of(steps_[k])]++] = k;
  return sorted;
}

// Puts the copies of the plan p, written from `*visit`, into *visit in the
// order order_copies_by_deadline() chooses, with their new keys. Leaves
// everything as it is (and returns false) when that declines.
bool SwapPlanner::Pass::order_copies(const Plan& p, std::span<const StepId> old_of,
                                     std::vector<int32_t>* visit, PlanResult* result) {
  std::vector<int32_t> key(p.num_steps());
  for (StepId s = 0; s < p.num_steps(); ++s)
    key[s] = steps_[old_of[s]].key_pos;
  CopyOrder co;
  if (!order_copies_by_deadline(g_, p, key, op_us_, device_, sim_, &co)) return false;
  // The copies take their stream's slots of *visit in the picked order.
  size_t next[2] = {0, 0};
  for (int32_t& k : *visit) {
    const StepKind kind = steps_[k].kind;
    if (kind != StepKind::kSwapIn && kind != StepKind::kSwapOut) continue;
    const int i = kind == StepKind::kSwapIn ? 0 : 1;
    const size_t at = next[i]++;
    k = old_of[co.steps[i][at]];
    steps_[k].key_pos = co.keys[i][at];
  }
  result->simulation = std::move(co.sim);
  return true;
}

// Writes the steps into *out sorted on (key_pos, rank), stably in the order
// of `visit`; *old_of[k] is the step that went k-th.
void SwapPlanner::Pass::write_plan(std::span<const int32_t> visit, std::span<const int32_t> cnt,
                                   int64_t budget, const std::vector<ResidentTensor>& resident,
                                   Plan* out, std::vector<StepId>* old_of_out) {
  Plan& p = *out;
  p.clear();
  const int num_steps = static_cast<int>(steps_.size());
  *old_of_out = by_key(visit);
  const std::vector<StepId>& old_of = *old_of_out;
  std::vector<StepId> new_id(num_steps);
  for (int k = 0; k < num_steps; ++k)
    new_id[old_of[k]] = k;
  // Arena: the walk's objects are tenancies; the plan's are their units.
  auto object = [&](ObjectId obj) { return arena() && obj >= 0 ? tenancy_unit_[obj] : obj; };
  p.steps.resize(num_steps);
  p.waits.reserve(waits_.size());
  for (StepId id = 0; id < num_steps; ++id) {
    const TempStep& t = steps_[old_of[id]];
    Step& st = p.steps[id];
    st.kind = t.kind;
    st.subject = t.subject;
    st.object = object(t.object);
    if (t.kind == StepKind::kRecompute) {
      st.obj_begin = static_cast<int32_t>(p.recompute_objects.size());
      for (int32_t k = t.obj_begin; k < t.obj_end; ++k)
        p.recompute_objects.push_back(object(recompute_objs_[k]));
      st.obj_end = static_cast<int32_t>(p.recompute_objects.size());
    }
    st.wait_begin = static_cast<int32_t>(p.waits.size());
    for (int w = t.wait_begin; w < t.wait_end; ++w) {
      const StepId target = new_id[waits_[w]];
      SA_CHECK(target < id, "step {} ({} of {}, key {}) waits for later step {} ({} of {}, key {})",
               id, to_string(t.kind), t.subject, t.key_pos, target,
               to_string(steps_[waits_[w]].kind), steps_[waits_[w]].subject,
               steps_[waits_[w]].key_pos);
      p.waits.push_back(target);
    }
    st.wait_end = static_cast<int32_t>(p.waits.size());
  }
  p.memory_budget = budget;
  p.order.assign(order_.begin(), order_.end());
  if (arena()) {
    p.allocator = Allocator::kArena;
    p.objects.resize(unit_offset_.size());
    for (size_t u = 0; u < unit_offset_.size(); ++u)
      p.objects[u] = {unit_offset_[u], unit_bytes_[u], -1};
  } else {
    p.allocator = Allocator::kSizeClass;
    p.pool.class_bytes = class_bytes_;
    p.pool.class_count.assign(cnt.begin(), cnt.end());
    p.layout_pool();
    p.tensor_class.assign(class_.begin(), class_.begin() + n_);
    p.workspace_class.assign(class_.begin() + n_, class_.end());
  }
  p.access_begin = access_begin_;
  p.access_objects.resize(access_objects_.size());
  for (size_t k = 0; k < access_objects_.size(); ++k)
    p.access_objects[k] = object(access_objects_[k]);
  p.initial_resident = resident;
  for (ResidentTensor& r : p.initial_resident)
    r.object = object(r.object);
  std::sort(p.initial_resident.begin(), p.initial_resident.end(),
            [](const ResidentTensor& a, const ResidentTensor& b) { return a.tensor < b.tensor; });
  add_collective_waits(g_, &p);  // data-parallel plans: the collective stream's waits
}

void SwapPlanner::Pass::emit(std::span<const int32_t> cnt, int64_t budget,
                             std::vector<ResidentTensor> resident, Plan* out, PlanResult* result) {
  const int num_steps = static_cast<int>(steps_.size());
  std::vector<int32_t> visit(num_steps);
  for (int k = 0; k < num_steps; ++k)
    visit[k] = k;
  std::vector<StepId> old_of;
  result->simulation.reset();
  write_plan(visit, cnt, budget, resident, out, &old_of);
  // In deadline order, the plan just written (release order) is simulated
  // to choose the order of its copies, then written again.
  if (opt_.deadline_copy_order && dir_ == nullptr && order_copies(*out, old_of, &visit, result))
    write_plan(visit, cnt, budget, resident, out, &old_of);
}

SwapPlanner::SwapPlanner(const Graph& g, const SizeTable& sizes, std::span<const double> op_us,
                         const DeviceProfile& device)
    : pass_(std::make_unique<Pass>(g, sizes, op_us, device)) {}

SwapPlanner::~SwapPlanner() = default;

std::span<const PackItem> SwapPlanner::last_packing() const {
  return pass_->pack_items();
}

template <class F>
PlanResult SwapPlanner::with_repairs(const PlannerOptions& options, F&& once) {
  if (!options.recompute) return once(options);
  std::vector<uint8_t> genes = *options.recompute;
  PlannerOptions opt = options;
  opt.recompute = &genes;
  std::vector<OpId> off;
  for (int repair = 0;; ++repair) {
    PlanResult r = once(opt);
    r.not_recomputed.insert(r.not_recomputed.begin(), off.begin(), off.end());
    if (r.ok || r.not_recomputed.size() == off.size() || repair == kRecomputeRepairs) return r;
    const OpId failed = r.not_recomputed.back();
    r.not_recomputed.pop_back();
    const size_t before = r.not_recomputed.size();
    auto stop = [&](OpId o) {
      genes[o] = 0;  // (an op reading two outputs of o names it once)
      r.not_recomputed.push_back(o);
    };
    if (genes[failed]) {
      stop(failed);
    } else {
      // The op found no memory for its own items beside the recomputes of
      // what it reads and updates: their producers stop recomputing instead.
      for_each_access(pass_->graph().ops[failed], [&](TensorId t, Access a) {
        if (const OpId p = pass_->producer(t); a != Access::kCreate && p != kNoOp && genes[p])
          stop(p);
      });
    }
    if (r.not_recomputed.size() == before) {  // nothing left to turn off
      r.not_recomputed.push_back(failed);
      return r;
    }
    off = r.not_recomputed;
  }
}

PlanResult SwapPlanner::plan(std::span<const OpId> order, const Allocation& a, int64_t budget,
                             const PlannerOptions& options, Plan* out,
                             const Directives* directives) {
  return with_repairs(options, [&](const PlannerOptions& opt) {
    return plan_once(order, a, budget, opt, out, directives);
  });
}

PlanResult SwapPlanner::plan_arena(std::span<const OpId> order, int64_t capacity, int64_t budget,
                                   const PlannerOptions& options, Plan* out,
                                   const Directives* directives) {
  return with_repairs(options, [&](const PlannerOptions& opt) {
    return plan_arena_once(order, capacity, budget, opt, out, directives);
  });
}

PlanResult SwapPlanner::plan_once(std::span<const OpId> order, const Allocation& a, int64_t budget,
                                  const PlannerOptions& options, Plan* out,
                                  const Directives* directives) {
  SA_CHECK(static_cast<int>(order.size()) == pass_->num_ops(), "order has {} ops, graph {}",
           order.size(), pass_->num_ops());
  SA_CHECK(is_well_formed(pass_->sizes(), a), "malformed allocation");
  PlanResult r;
  const bool unbounded = directives && directives->unbounded;
  if (!unbounded) {
    const int64_t pool = pool_bytes(pass_->sizes(), a);
    SA_CHECK(pool <= budget, "pool of {} bytes over the budget of {}", pool, budget);
  }
  if (!pass_->prepare(order, a, options, directives, !unbounded, &r.why)) return r;
  std::vector<int32_t> cnt = a.cnt;
  try {
    if (unbounded) {
      // Measure what the rules need with room for everything, then plan with
      // exactly that. Recomputes take objects that the demand without them
      // does not count (workspaces and dead outputs pass through until the
      // op that needs them has run): then every item of a class may have one.
      pass_->run_passes(options.recompute
                            ? item_counts(pass_->sizes(), a.cls)
                            : demand_counts(pass_->graph(), pass_->sizes(), a.cls, order));
      cnt = pass_->peak_in_use;
    }
    auto resident = pass_->run_passes(cnt);
    pass_->emit(cnt, budget, std::move(resident), out, &r);
  } catch (const NoMemoryToRecompute& e) {
    r.why = no_memory_to_recompute(pass_->graph(), e.op, e.position);
    r.not_recomputed = {e.op};
    return r;
  }
  r.ok = true;
  r.arena_bytes = out->arena_bytes();
  return r;
}

PlanResult SwapPlanner::plan_arena_once(std::span<const OpId> order, int64_t capacity,
                                        int64_t budget, const PlannerOptions& options, Plan* out,
                                        const Directives* directives) {
  SA_CHECK(static_cast<int>(order.size()) == pass_->num_ops(), "order has {} ops, graph {}",
           order.size(), pass_->num_ops());
  PlanResult r;
  const bool unbounded = directives && directives->unbounded;
  // Placing chooses windows as Belady would: DTR counts bytes (kPacked).
  if (!unbounded && options.layout == ArenaLayout::kPlaced &&
      options.eviction != EvictionPolicy::kDtr) {
    const int64_t cap = std::min(capacity, budget);
    if (!pass_->prepare_arena(order, cap, true, options, directives, &r.why)) return r;
    try {
      pass_->set_capacity(cap);
      auto resident = pass_->run_passes({});
      const int64_t peak = pass_->objects_from_placements();
      pass_->emit({}, budget, std::move(resident), out, &r);
      r.ok = true;
      r.capacity = cap;
      r.arena_bytes = peak;
      return r;
    } catch (const NoRoom&) {
      // Counting bytes and packing afterwards always finds room, if the
      // packing fits.
      PlannerOptions packed = options;
      packed.layout = ArenaLayout::kPacked;
      return plan_arena_once(order, capacity, budget, packed, out, directives);
    } catch (const NoMemoryToRecompute& e) {
      r.why = no_memory_to_recompute(pass_->graph(), e.op, e.position);
      r.not_recomputed = {e.op};
      return r;
    }
  }
  int64_t cap = unbounded ? INT64_MAX / 8 : std::min(capacity, budget);
  if (!pass_->prepare_arena(order, cap, false, options, directives, &r.why)) return r;
  const int64_t floor = pass_->max_op_bytes();
  for (int attempt = 0;; ++attempt) {
    pass_->set_capacity(cap);
    std::vector<ResidentTensor> resident;
    try {
      resident = pass_->run_passes({});
    } catch (const NoMemoryToRecompute& e) {
      r.why = no_memory_to_recompute(pass_->graph(), e.op, e.position);
      r.not_recomputed = {e.op};
      return r;
    }
    const int64_t peak = pass_->pack();
    if (unbounded || peak <= budget) {
      pass_->add_reuse_waits();
      pass_->emit({}, budget, std::move(resident), out, &r);
      r.ok = true;
      r.capacity = cap;
      r.arena_bytes = peak;
      return r;
    }
    if (attempt >= options.max_repairs || cap <= floor) {
      r.why = fmt::format(
          "the packed offsets reach {} ({} B), over the budget of {} ({} B), even with the swaps "
          "planned for {} ({} B)",
          format_bytes(peak), peak, format_bytes(budget), budget, format_bytes(cap), cap);
      return r;
    }
    cap = std::max(floor, cap - (peak - budget));
  }
}

}  // namespace sa
