#pragma once
// The simulated iteration as a Chrome trace (the JSON trace-event format that
// Perfetto, ui.perfetto.dev, and chrome://tracing open):
//
//   sa::write_trace(g, plan, sim, {.title = "resnet50-b64 on v100-16gb"}, "trace.json");
//
// One process, four tracks: compute, host→device, device→host (one complete
// event per step, named after its op or tensor) and drops (instant events).
// Counter tracks: device bytes in use (SimResult::memory) and the bytes in
// use per size class (report/class_memory.h). Times are microseconds, as the
// simulator's. A compute step that stalled says, in its args, how long and on
// which copy (plan/stalls.h).

#include <string>

#include "graph/graph.h"
#include "plan/plan.h"
#include "plan/simulator.h"

namespace sa {

struct TraceInfo {
  std::string title;     // the process name, e.g. "resnet50-b64: swapadvisor on v100-16gb"
  int class_tracks = 9;  // size-class counter tracks (the smallest classes share the last)
};

// REQUIRES: sim.ok, with timeline and memory (SimOptions::record_timeline).
std::string trace_to_json(const Graph& g, const Plan& p, const SimResult& sim,
                          const TraceInfo& info);

// Writes trace_to_json(); gzipped when path ends in ".gz" (Perfetto reads it).
void write_trace(const Graph& g, const Plan& p, const SimResult& sim, const TraceInfo& info,
                 const std::string& path);

}  // namespace sa
