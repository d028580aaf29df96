#pragma once
// The data a report page draws, as one JSON object embedded in the page.
//
// Note [Report data]
// ------------------
// A 30,000-op plan has about 100,000 steps and memory points, so the data is
// columnar (one array per field, never an object per step) and times are
// integer nanoseconds, delta-encoded where they only grow (Δ = value minus
// the previous one; the page adds them back up). Every "ns" below is in
// fact a count of time_unit_ns nanoseconds: 1 (and the page takes 1 when it
// is absent) unless the plan lasts past 2^53 ns, about 104 days (Note
// [Report time unit] in report_data.cpp).
//
//   time_unit_ns  1, or the power of ten that the times are counted in
//   summary   the numbers of the headline and the cards (graph, device, budget,
//             iteration_us, ideal_us, bytes moved, peak, pool, counts, ...)
//   methods   [{name, feasible, why | iteration_us, stall_us, swap_in_bytes,
//             swap_out_bytes, peak_device_bytes, pool_bytes, planning_seconds,
//             evaluations}, main]
//   kinds, phases, types   names that the columns below index
//   ops       {type, phase, name}: every op of the graph
//   tensors   {id, name, kind, bytes}: the tensors that steps copy or drop
//             or that objects hold; every "tensor", copy "subject" and
//             "tenant" column below indexes this table. name: the label
//             people read (report/labels.h: its own, or its producer's)
//   lanes     {compute, h2d, d2h}: each {start (Δns), dur (ns), subject}, in
//             stream order; subject is the op (compute) or the tensor row
//   drops     {time (Δns), subject}
//   memory    {time (Δns), bytes (Δ)}: SimResult::memory
//   host      null when the plan keeps nothing on the host; else {time (Δns),
//             bytes (Δ), nvme (Δ)}: host_memory_over_time()
//             (report/host_memory.h), and arena_bytes (host_use().total()),
//             budget (0: none), nvme_tensors, nvme_bytes
//   arena     {objects: {offset (Δ), bytes, cls (-1: an arena plan)}: Plan::objects;
//             tenancies: {object, tenant (a tensor row, or -1 - op for that
//             op's workspace), begin (Δns), dur (ns)}: object_tenancies()
//             (plan/simulator.h), by begin then object}
//   traffic   {tensor, in, out, drops, bytes, total}: the top rows of
//             tensor_traffic() (report/traffic.h) that moved bytes (a tensor
//             only dropped moves none); total counts all of those
//   stalls    {count, total_us, unattributed_us, by_cause (stall_causes_json),
//             top: {op, start_ns, idle_ns,
//             culprit_kind (StepKind, -1: none), culprit_tensor (-1: none),
//             culprit_start_ns}, by_tensor: {tensor, idle_ns, stalls, via_in,
//             via_out}} from attribute_stalls() (plan/stalls.h), longest first
//   sweep     only with ReportInput::sweep: every SweepResult field
//             (methods/sweep.h), target and target_budget null when unset, and
//             points: {budget, feasible, why, iteration_us, throughput,
//             swap_in_bytes, swap_out_bytes, search_seconds}

#include <string>

#include "report/report_input.h"

namespace sa {

inline constexpr int kReportTopRows = 200;  // rows kept of each ranked table

// The JSON text of the page's data. REQUIRES: in.methods[in.main] is feasible.
std::string report_data_json(const ReportInput& in);

}  // namespace sa
