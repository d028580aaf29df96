// Evaluations per second: how fast a candidate (order, allocation) of the
// search is swap-planned and simulated, on a training graph of about 10,000
// ops (issue 3: "a Google Benchmark of simulator evaluations per second").
//
//   ninja -C build bench_simulator && build/bench/bench_simulator
//
// The graph is the zoo's rnn-8-8k at batch 256 (the paper's RNN-8-8K: 10,591
// ops here) with a 16 GB budget (a V100, as in the paper's Fig. 6); if the zoo
// cannot build it, a synthetic LSTM-like training graph of similar size. The
// plan is the program order with the default allocation, which swaps a lot.
// Each benchmark reports items_per_second = evaluations (or plans, or
// simulations, or operator applications) per second on one thread.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "cost/device.h"
#include "cost/op_cost.h"
#include "graph/dataflow.h"
#include "graph/graph.h"
#include "graph/stats.h"
#include "graph/validate.h"
#include "plan/allocation.h"
#include "plan/planner.h"
#include "plan/problem.h"
#include "plan/simulator.h"
#include "plan/swap_planner.h"
#include "search/ga.h"
#include "search/rng.h"
#include "search/schedule.h"
#include "util/error.h"
#include "zoo/zoo.h"

namespace sa {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// An LSTM-like training graph: `steps` time steps of `layers` cells, each
// cell a matmul on [x, h] and a few pointwise ops; the backward pass mirrored;
// SGD with momentum at the end.
Graph synthetic_rnn(int layers, int steps) {
  Graph g;
  g.name = fmt::format("synthetic-rnn-{}x{}", layers, steps);
  auto tensor = [&](int64_t bytes, TensorKind kind) {
    g.tensors.push_back({bytes, kind, "", {}, {}});
    return g.num_tensors() - 1;
  };
  auto op = [&](Phase phase, std::vector<TensorId> in, std::vector<TensorId> out,
                std::vector<TensorId> upd, double us) {
    Op o;
    o.type = "synthetic";
    o.phase = phase;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    o.updates = std::move(upd);
    o.time_us = us;
    g.ops.push_back(std::move(o));
  };
  const int64_t hid = 256 * 4096 * 4, gates = 4 * hid, w = 2 * 4096 * 4 * 4096 * 4;
  std::vector<TensorId> params, xs;
  for (int l = 0; l < layers; ++l)
    params.push_back(tensor(w, TensorKind::kParam));
  for (int t = 0; t < steps; ++t)
    xs.push_back(tensor(hid, TensorKind::kInput));
  // saved[l][t] = {input, gates, h}
  std::vector<std::vector<std::vector<TensorId>>> saved(layers,
                                                        std::vector<std::vector<TensorId>>(steps));
  std::vector<TensorId> h(layers, -1);
  for (int t = 0; t < steps; ++t) {
    TensorId x = xs[t];
    for (int l = 0; l < layers; ++l) {
      const TensorId gt = tensor(gates, TensorKind::kActivation);
      std::vector<TensorId> in{x, params[l]};
      if (h[l] >= 0) in.push_back(h[l]);
      op(Phase::kForward, in, {gt}, {}, 900);
      const TensorId act = tensor(gates, TensorKind::kActivation);
      op(Phase::kForward, {gt}, {act}, {}, 60);
      const TensorId hn = tensor(hid, TensorKind::kActivation);
      op(Phase::kForward, {act}, {hn}, {}, 30);
      saved[l][t] = {x, act, hn};
      h[l] = hn;
      x = hn;
    }
  }
  const TensorId loss = tensor(4, TensorKind::kActivation);
  op(Phase::kForward, {h[layers - 1]}, {loss}, {}, 10);
  std::vector<TensorId> dws;
  std::vector<TensorId> dh(layers, -1);
  for (int t = steps - 1; t >= 0; --t) {
    TensorId dx = tensor(hid, TensorKind::kGradient);  // this step's output gradient
    op(Phase::kBackward, {loss}, {dx}, {}, 10);
    for (int l = layers - 1; l >= 0; --l) {
      const auto& s = saved[l][t];
      std::vector<TensorId> in{dx, s[1]};
      if (dh[l] >= 0) in.push_back(dh[l]);
      const TensorId dg = tensor(gates, TensorKind::kGradient);
      op(Phase::kBackward, in, {dg}, {}, 90);
      const TensorId dw = tensor(w, TensorKind::kGradient);
      op(Phase::kBackward, {dg, s[0]}, {dw}, {}, 900);
      dws.push_back(dw);
      const TensorId din = tensor(hid, TensorKind::kGradient);
      op(Phase::kBackward, {dg, params[l]}, {din}, {}, 900);
      dh[l] = din;
      dx = din;
    }
  }
  for (int l = 0; l < layers; ++l) {
    const TensorId mom = tensor(w, TensorKind::kOptimizerState);
    op(Phase::kUpdate, {}, {}, {mom}, 100);
    for (size_t k = l; k < dws.size(); k += layers)
      op(Phase::kUpdate, {dws[k]}, {}, {mom}, 100);
    op(Phase::kUpdate, {mom}, {}, {params[l]}, 100);
  }
  validate_graph(g, g.name);
  return g;
}

struct Fixture {
  Graph g;
  std::unique_ptr<Dataflow> df;
  DeviceProfile device;
  std::vector<double> op_us;
  SizeTable sizes;
  int64_t budget = 16 * kGiB;
  std::vector<OpId> order;
  Allocation alloc;
  Plan plan;
  std::unique_ptr<Problem> problem;

  Fixture() {
    device = load_device("v100-16gb");
    budget = device.memory_bytes;
    try {
      ZooOptions z;
      z.model = "rnn-8-8k";
      z.batch = 256;
      g = build_zoo_model(z);
    } catch (const Error& e) {
      std::fprintf(stderr, "zoo rnn-8-8k unavailable (%s); using a synthetic graph\n", e.what());
      g = synthetic_rnn(8, 100);
    }
    df = std::make_unique<Dataflow>(g);
    op_us = op_times_us(g, device);
    sizes = make_size_table(g);
    order = program_order(g.num_ops());
    std::string why;
    if (!default_allocation(g, sizes, order, budget, &alloc, &why))
      throw Error("bench_simulator: the 16 GB budget is too small: " + why);
    problem = std::make_unique<Problem>(g, device, budget);
    Planner planner(*problem);  // every stage: the copies in deadline order, as before
    const PlanResult r = planner.plan(order, &alloc, {}, &plan);
    SA_CHECK(r.ok, "{}", r.why);
    std::fprintf(
        stderr,
        "%s: %d ops, %d tensors, %d sizes, peak live %.1f GiB, budget %.1f GiB, %d plan steps\n",
        g.name.c_str(), g.num_ops(), g.num_tensors(), sizes.num_sizes(),
        static_cast<double>(peak_live_bytes(g)) / kGiB, static_cast<double>(budget) / kGiB,
        plan.num_steps());
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

void add_info(benchmark::State& state, const Fixture& f) {
  state.counters["ops"] = f.g.num_ops();
  state.counters["steps"] = f.plan.num_steps();
}

// One simulation of a plan: the inner loop of the search's fitness.
void BM_Simulate(benchmark::State& state) {
  const Fixture& f = fixture();
  Simulator sim;
  double t = 0;
  for (auto _ : state) {
    t = sim.run(f.g, f.plan, f.op_us, f.device).iteration_us;
    benchmark::DoNotOptimize(t);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["iteration_ms"] = t / 1e3;
  add_info(state, f);
}
BENCHMARK(BM_Simulate)->Unit(benchmark::kMillisecond);

// One simulation with the per-step timeline and memory profile (used once,
// for the result).
void BM_SimulateWithTimeline(benchmark::State& state) {
  const Fixture& f = fixture();
  Simulator sim;
  SimOptions o;
  o.record_timeline = true;
  for (auto _ : state)
    benchmark::DoNotOptimize(sim.run(f.g, f.plan, f.op_us, f.device, o).iteration_us);
  state.SetItemsProcessed(state.iterations());
  add_info(state, f);
}
BENCHMARK(BM_SimulateWithTimeline)->Unit(benchmark::kMillisecond);

// One swap plan of (order, allocation), in release order (no simulation):
// arg 0 the size-class pool, 1 planned offsets in the arena.
void BM_Plan(benchmark::State& state) {
  const Fixture& f = fixture();
  SwapPlanner planner(f.g, f.sizes, f.op_us, f.device);
  PlannerOptions o;
  o.deadline_copy_order = false;
  Plan p;
  for (auto _ : state) {
    const PlanResult r = state.range(0) == 0
                             ? planner.plan(f.order, f.alloc, f.budget, o, &p)
                             : planner.plan_arena(f.order, f.budget, f.budget, o, &p);
    benchmark::DoNotOptimize(r.ok);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["steps"] = p.num_steps();
}
BENCHMARK(BM_Plan)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// One evaluation as the search does it: the stages of Note [Planning
// stages] (the walk; the copies in deadline order, which simulates the
// plan): arg 0 the size-class pool, 1 the arena.
void BM_Evaluate(benchmark::State& state) {
  const Fixture& f = fixture();
  Planner planner(*f.problem);
  Plan p;
  SimResult sim;
  double t = 0;
  for (auto _ : state) {
    const PlanResult r =
        planner.plan(f.order, state.range(0) == 0 ? &f.alloc : nullptr, {}, &p, &sim);
    t = r.ok ? sim.iteration_us : 0;
    benchmark::DoNotOptimize(t);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["iteration_ms"] = t / 1e3;
}
BENCHMARK(BM_Evaluate)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// The schedule operators on the same graph: a crossover and a ready-set
// mutation at 10% (the search's heaviest).
void BM_ScheduleCrossoverAndMutation(benchmark::State& state) {
  const Fixture& f = fixture();
  Scheduler s(*f.df);
  Rng rng(1);
  std::vector<OpId> other, c1, c2, m;
  s.mutate(f.order, 0.1, false, rng, &other);
  for (auto _ : state) {
    s.crossover(f.order, other, rng.between(0, f.g.num_ops()), &c1, &c2);
    s.mutate(c1, 0.1, rng.chance(0.5), rng, &m);
    benchmark::DoNotOptimize(m.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ScheduleCrossoverAndMutation)->Unit(benchmark::kMicrosecond);

// The whole search, operators and selection included, on `threads` threads
// (arg 0) with the size-class pool (arg 1 = 0) or the arena (1): evaluations
// per second end to end (two generations of 48).
void BM_Search(benchmark::State& state) {
  const Fixture& f = fixture();
  SearchOptions o;
  o.population = 48;
  o.max_evaluations = 3 * 48;
  o.threads = static_cast<int>(state.range(0));
  o.allocator = state.range(1) == 0 ? Allocator::kSizeClass : Allocator::kArena;
  int64_t evals = 0;
  double best = 0;
  for (auto _ : state) {
    const SearchResult r = search(*f.problem, o);
    evals += r.evaluations;
    best = r.sim.iteration_us;
  }
  state.SetItemsProcessed(evals);
  state.counters["best_ms"] = best / 1e3;
}
BENCHMARK(BM_Search)
    ->Args({1, 0})
    ->Args({1, 1})
    ->Args({2, 0})
    ->Args({2, 1})
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace
}  // namespace sa
