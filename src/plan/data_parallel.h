#pragma once
// Data-parallel training: one rank of N, each holding the same model under
// the same budget and training on its share of the batch.
//
// Note [Data parallelism as a graph transformation]
// -------------------------------------------------
// Planning one rank of N differs from planning one GPU by the collectives:
// the gradients are all-reduced before the optimizer reads them. Rather than
// thread N through the planner, the simulator and the runtime, the graph of
// one rank gets collective ops (is_collective in graph/graph.h), which the rest
// treats as ops: their accesses need their tensors on the device, the
// dataflow orders them after the gradients they reduce and before the
// optimizer ops that read them, and the verifier checks them as it checks
// every access. What differs is where they run: a collective op's compute
// step runs on the collective stream (stream_of(Graph, Step) in plan.h),
// beside compute and copies, so the simulator overlaps it with the rest of
// the backward pass; the waits that ordered it on the compute stream become
// explicit (add_collective_waits).
//
// The transformation (data_parallel_graph):
//   - Reduced gradients are the gradient tensors that an optimizer op (one
//     that updates a param or optimizer state) reads or updates. In order of
//     their last write in the backward pass they are grouped into buckets of
//     about bucket_bytes (PyTorch DDP's default, 25 MiB); each bucket becomes
//     one "sa::all_reduce" op updating its gradients, placed right after the
//     op that last writes any of them (and never after an optimizer op that
//     reads one: the bucket closes before that). Its time is the ring
//     all-reduce's, 2(N-1)/N * bytes / bw + 2(N-1) * latency, on the
//     device's collective link (DeviceProfile::collective_gbps, latency).
//   - shard_optimizer (ZeRO stage 1): every optimizer_state tensor holds 1/N
//     of its bytes (rounded up) and every optimizer op does 1/N of its work;
//     the gradient buckets are reduce-scattered ("sa::reduce_scatter",
//     (N-1)/N * bytes / bw + (N-1) * latency) instead of all-reduced, and the
//     updated params are all-gathered ("sa::all_gather", the same cost) in
//     buckets placed after the last optimizer op that updates any of them.
// N = 1 leaves the graph unchanged. The ideal iteration (Problem::ideal_us)
// counts compute ops only: collectives overlap with compute in the ideal.

#include <span>

#include "cost/device.h"
#include "graph/graph.h"
#include "plan/plan.h"

namespace sa {

// Ring costs in microseconds for `bytes` over `ranks` ranks on
// a link of `gbps` GB/s with `latency_us` per step.
double ring_all_reduce_us(double bytes, int ranks, double gbps, double latency_us);
double ring_half_us(double bytes, int ranks, double gbps, double latency_us);  // RS or AG

// The graph of one rank of dp.ranks (Note [Data parallelism as a graph
// transformation]); its collective ops are timed on d. REQUIRES: g passed
// validate_graph; dp.ranks >= 1. The result passes validate_graph.
Graph data_parallel_graph(const Graph& g, const DataParallel& dp, const DeviceProfile& d);

// The device as one of `ranks` ranks sees it: each host link is shared by
// min(ranks, gpus_per_host_link) GPUs copying at the same time (every rank
// runs the same plan in step), so each gets that fraction of its bandwidth.
DeviceProfile rank_device(const DeviceProfile& d, int ranks);

// How much of the iteration the collectives add: p's simulated iteration
// minus the same plan's with every collective op taking no time. 0 for a
// plan without collectives.
double exposed_collective_us(const Graph& g, const Plan& p, std::span<const double> op_us,
                             const DeviceProfile& d);

// Makes explicit the waits that stream order gave a collective op's compute
// step before it ran on its own stream: it waits for the last compute-stream
// step before it that touched one of its tensors, and the first later
// compute-stream step touching one of them (and any later collective) waits
// for it. Plans without collective ops are left as they are.
void add_collective_waits(const Graph& g, Plan* p);

}  // namespace sa
