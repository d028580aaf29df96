#pragma once
// The swap planner's internals (Note [Swap planning] and Note [Arena
// planning] in plan/swap_planner.h): the state of one walk over the order (a
// pass) and the types it uses, shared by the files of this folder, one role
// each:
//   setup.cpp      per graph and per plan: items, uses, classes, positions;
//   walk.cpp       the walk: each op's items acquired, evictions, swap-ins,
//                  releases, the passes of the steady state;
//   residents.cpp  the evictable residents and the choice of a victim
//                  (Belady, LRU, DTR); victim_heap.h: the residents by
//                  victim key, on their own;
//   free_memory.h  free memory of the size-class pool (rings of objects) and
//                  of the packed arena (bytes by release position), on
//                  their own; memory.cpp: the walk's use of them;
//   placed.cpp     the placed arena: ranges, free runs, windows to evict;
//   recompute.cpp  dropping a tensor and running its op again;
//   writer.cpp     offsets packed, reuse waits, copy order, the Plan written.
// plan/swap_planner.cpp holds the planner's interface over them. Only these
// files include this header.

#include <algorithm>
#include <climits>
#include <map>
#include <memory>
#include <memory_resource>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "plan/copy_order.h"
#include "plan/data_parallel.h"
#include "plan/dtr_cost.h"
#include "plan/packing.h"
#include "plan/simulator.h"
#include "plan/swap/free_memory.h"
#include "plan/swap/victim_heap.h"
#include "plan/swap_planner.h"
#include "util/error.h"
#include "util/node_pool.h"
#include "util/range_map.h"
#include "util/units.h"

namespace sa {
// Types of the walk, named only in src/plan/swap/.
namespace swap_plan {

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

// A time on the (key, rank) axis, for the lifetimes of arena tenancies:
// key -1 (the start) is 0..2, position i is 3(i+1)..3(i+1)+2.
inline int32_t when(int32_t key, StepKind k) {
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

// Recomputation found no memory for an op's items (a plan that recomputes
// more than fits): the candidate is not plannable.
struct NoMemoryToRecompute {
  OpId op;
  int position;
};

inline std::string no_memory_to_recompute(const Graph& g, OpId op, int position) {
  return fmt::format("no memory to recompute op {} ({}) before position {} of the order", op,
                     g.ops[op].type, position);
}

// Placed mode: no window of the arena could take item x before position i
// (the residents op i needs cut the free space into pieces too small).
struct NoRoom {
  ItemId item;
  int position;
};

// Placed mode: how good a window of the arena is to evict (better first):
// its victims all eligible (their copies can finish in time), then the
// latest earliest next use among them, then the fewest bytes evicted.
struct WindowScore {
  bool eligible = true;
  int64_t next_use = INT64_MAX;
  int64_t evicted = 0;
  bool operator<(const WindowScore& o) const {  // better
    if (eligible != o.eligible) return eligible;
    if (next_use != o.next_use) return next_use > o.next_use;
    return evicted < o.evicted;
  }
};

// Placed mode: where an item goes (`at`; -1: nowhere) and the residents
// that must leave first (a view of the pass's buffer, valid until the next
// find_window).
struct Window {
  int64_t at = -1;
  std::span<const ItemId> victims;
};

// Per class, its items (tensors and workspaces).
inline std::vector<int32_t> item_counts(const SizeTable& sizes, std::span<const ClassId> cls) {
  std::vector<int32_t> cnt(cls.empty() ? 0 : *std::max_element(cls.begin(), cls.end()) + 1, 0);
  for (int32_t s : sizes.tensor_size)
    ++cnt[cls[s]];
  for (int32_t s : sizes.workspace_size)
    if (s >= 0) ++cnt[cls[s]];
  return cnt;
}

}  // namespace swap_plan

// One walk over the order (a pass) and everything it needs, kept between
// calls so that the search does not reallocate.
class SwapPlanner::Pass {
  using ItemId = swap_plan::ItemId;
  using ItemKind = swap_plan::ItemKind;
  using TempStep = swap_plan::TempStep;
  using Tenancy = swap_plan::Tenancy;
  using WindowScore = swap_plan::WindowScore;
  using Window = swap_plan::Window;

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
  // Writes the plan in release order (Note [Planning stages]), and keys().
  void emit(std::span<const int32_t> cnt, int64_t budget, std::vector<ResidentTensor> resident,
            Plan* out);
  std::span<const StepKey> keys() const { return keys_; }

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
  void reset_pass();
  std::vector<ResidentTensor> start_pass(const std::vector<ResidentTensor>& resident_in);
  void walk_op(int i);
  void put_back(const std::vector<ResidentTensor>& resident);
  void write_back(const std::vector<ResidentTensor>& resident, bool fix_up);
  void bind_ops(std::span<const OpId> order, const PlannerOptions& opt,
                const Directives* directives);
  std::vector<int32_t> by_key(std::span<const int32_t> visit) const;
  void write_plan(std::span<const int32_t> visit, std::span<const int32_t> cnt, int64_t budget,
                  const std::vector<ResidentTensor>& resident, Plan* out,
                  std::vector<StepId>* old_of);
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
  ItemId pick_victim(ItemId x, int i, bool swap_in);
  ItemId pick_dtr_victim(ItemId x, int i);
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
  StepId leave_device(StepKind kind, ItemId v, ObjectId obj, int32_t key, StepId after);
  ObjectId acquire(ItemId x, int i, bool swap_in);
  // Note [Memory policies] (walk.cpp): the room for an item, and who must
  // leave first.
  struct Room {
    bool found = false;                    // false: none, whoever leaves
    int64_t at = -1;                       // placed: the offset
    ObjectId object = kNoObject;           // pool: the victim's object, which x takes
    std::span<const ItemId> victims = {};  // to evict first
    bool again = false;                    // packed: ask again once they have left
  };
  Room find_room(ItemId x, int i, bool swap_in);
  ObjectId take_room(ItemId x, const Room& r, bool swap_in);
  ObjectId make_room(ItemId x, int i, bool swap_in);
  ItemId one_victim_ = -1;  // the pool's and the packed arena's Room::victims
  // Arena.
  ObjectId open_tenancy(ItemId x, int32_t free_key);

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
  // How the walk finds memory: objects of the size classes, a byte count
  // (offsets packed afterwards), or arena ranges placed as it goes.
  MemoryLayout mode_ = MemoryLayout::kSizeClass;
  bool arena() const { return mode_ != MemoryLayout::kSizeClass; }
  bool placed() const { return mode_ == MemoryLayout::kPlaced; }
  int64_t capacity_ = 0;
  int nc_ = 0;
  std::vector<double> prefix_;            // prefix_[i]: op time before position i
  std::vector<int32_t> recompute_until_;  // per op: the last position a recompute of it may run at
  // Per tensor: recompute_until_ of its producer where the genes let it be
  // dropped (a transient whose producer may run again), else -1: what
  // may_drop_to_recompute() reads in the victim scans.
  std::vector<int32_t> drop_until_;
  std::vector<int32_t> pos_of_;  // per op: its position in the order
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
  swap_plan::FreeObjects free_objects_;  // the pool's
  // The evictable residents of each class, and each item's index there (-1
  // when not listed). A victim is found by scanning its class's list: only
  // full classes are scanned, and an access costs nothing.
  std::vector<std::vector<ItemId>> residents_;
  std::vector<int32_t> listed_at_;
  // EvictionPolicy::kDtr: the listed residents of each class that may still
  // be dropped to be recomputed, and each item's index there (-1: not
  // there). An item that may not be dropped when listed never may while it
  // stays (its next use only moves later), and one that may stops once its
  // next use passes recompute_until_: pick_dtr_victim() then takes it out.
  // The victim is the same as a scan of residents_ would find (ties go to
  // the larger id, whatever the order); only the droppable are scored.
  std::vector<std::vector<ItemId>> droppable_;
  std::vector<int32_t> droppable_at_;
  void unlist_droppable(ItemId x);
  // Per class, the listed residents by victim key, the largest on top
  // (Note [Victim heaps]). Kept where victims go by key alone: the placed
  // arena (class 0), and Belady in the pool and the packed arena
  // (use_heap()).
  swap_plan::VictimHeaps heaps_;
  // The pool and the packed arena: a class's heap is built when a victim of
  // it is first needed (a class that never evicts keeps none), then kept.
  std::vector<uint8_t> heap_built_;
  void build_heap(ClassId c);
  bool use_heap() const { return placed() || opt_.eviction == EvictionPolicy::kBelady; }
  // Class c's heap, built now if it was not (before walking it for a victim).
  void ensure_heap(ClassId c);
  // find_window()'s buffers: the victims of the window being scored and of
  // the best one so far.
  std::vector<ItemId> window_victims_, best_victims_;
  void heap_touch(ItemId x);
  std::vector<TempStep> steps_;
  std::vector<StepId> waits_, scratch_;
  std::vector<ObjectId> access_objects_;
  std::vector<ResidentTensor> resident_at_end_;
  StepId last_compute_ = -1;
  std::vector<StepKey> keys_;  // per step of the plan emit() wrote

  // Per pass, arena: the tenancies (the objects of the walk), and the packed
  // arena's free bytes.
  std::vector<Tenancy> tenancies_;
  swap_plan::FreeBytes free_bytes_;
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
  // The placed arena's ranges change at almost every step of the walk;
  // their nodes come from a pool of this pass (one thread's), not from
  // malloc (about a tenth of a recurrent net's walk). (A walk holds about
  // two thousand ranges on rnn-8-8k: too many for a sorted vector, unlike
  // the free runs below.)
  NodePool node_pool_;
  std::pmr::map<int64_t, Range> ranges_{&node_pool_};
  // The maximal runs of free ranges, by start (-> end) and by (size, start).
  // Each run's key is the latest release position among its ranges (an
  // upper bound once part of a run is taken).
  struct FreeRun {
    int64_t end;
    int32_t key;
  };
  std::vector<std::pair<int64_t, FreeRun>> runs_;  // sorted by start (a vector: as below)
  std::vector<std::pair<int64_t, FreeRun>>::iterator run_at_or_after(int64_t at);
  // (size, start, key), sorted: a vector, as a walk holds about a hundred
  // free runs (moving that many on an insert costs less than a tree's
  // nodes, and free_run_for() reads them in a row).
  struct SizedRun {
    int64_t size, at;
    int32_t key;
    // No two runs start at the same offset: (size, at) orders them all.
    bool operator<(const SizedRun& o) const { return size != o.size ? size < o.size : at < o.at; }
  };
  std::vector<SizedRun> runs_by_size_;
  void by_size_insert(const SizedRun& run);
  void by_size_erase(const SizedRun& run);
  void run_add(int64_t at, int64_t end, int32_t key);
  void run_remove(int64_t at, int64_t end);
  // The release steps of the memory the last acquisition took: its swap-in
  // waits for all of them, a creating compute step for the copies.
  std::vector<StepId> taken_compute_, taken_copy_;
  std::vector<int64_t> start_offset_;  // per tensor: its offset as an initial resident
  std::vector<int64_t> home_;          // per item: Note [Home offsets]'s offset, else -1
  std::vector<ObjectId> pre_obj_;      // per item: the tenancy preplace() opened for its creation
  std::vector<std::pair<int64_t, Range>> taken_pieces_;  // the ranges the last take_range() took
  void preplace(int i);
  // preplace()'s buffers, kept across ops.
  struct PreplaceBuffers {
    std::vector<std::pair<ItemId, bool>> items, needed;  // (item, created by the op)
    std::vector<std::pair<int64_t, int64_t>> walls;      // (offset, bytes)
    std::vector<int64_t> room;
    struct Reserved {  // a range reserved for an item, and what taking it took
      ItemId x;
      bool created;
      ObjectId t;
      std::vector<StepId> compute, copy;
      std::vector<std::pair<int64_t, Range>> pieces;
    };
    std::vector<Reserved> reserved;  // the first few are this op's
  } pre_;
  void split_range(int64_t at);
  ObjectId take_range(ItemId x, int64_t at);
  Window find_window(ItemId x, int i, bool swap_in);
  static constexpr int kWindowCandidates = 6;  // victims find_window() grows windows around
  int64_t free_run_for(int64_t need) const;
  bool movable(ItemId v, int i) const;
  bool home_window(ItemId x, int i, bool swap_in);
  bool at_home(const ResidentTensor& r) const;
  int victim_candidates(ItemId x, int i, bool swap_in, std::pair<WindowScore, ItemId>* top);
  void window_around_victims(ItemId x, int i, bool swap_in, WindowScore* best, int64_t* best_at);
  void window_anywhere(ItemId x, int i, bool swap_in, WindowScore* best, int64_t* best_at);
  ItemId tenants_of(int64_t at, int64_t bytes, int i, std::vector<ItemId>* victims) const;
  std::vector<ItemId> range_tenants(int64_t at, int64_t bytes, int i) const;
  bool eligible_victim(ItemId v, ItemId x, int i, bool swap_in) const;
};

}  // namespace sa
