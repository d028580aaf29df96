#pragma once
// The plan file: JSON, versioned, documented in docs/plan-format.md.
//
//   sa::write_plan(g, plan, "plan.json");         // .gz for gzip
//   sa::Plan p = sa::read_plan(g, "plan.json");   // throws sa::Error
//
// read_plan checks the file's structure against the graph (sizes, ids in
// range, waits pointing to earlier steps, the graph's fingerprint), so that
// every consumer can index the plan safely; whether the plan is *correct* is
// the verifier's job (plan/verify.h).

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "graph/graph.h"
#include "plan/plan.h"

namespace sa {

// A hash of the graph's structure (tensor sizes and kinds, op accesses), so
// that a plan is not run against a different graph by mistake.
uint64_t graph_fingerprint(const Graph& g);

std::string plan_to_json(const Graph& g, const Plan& p);
Plan parse_plan(const Graph& g, std::string_view json_text, std::string_view origin);

// A plan read against the graph its data_parallel field asks for:
// graph_for(the field) gives it (a data-parallel plan is read against
// data_parallel_graph() of its model's graph: read_graph_and_plan in
// api/source.h). The text is parsed once.
Plan parse_plan(std::string_view json_text, std::string_view origin,
                const std::function<const Graph&(const DataParallel&)>& graph_for);

// Writes any plan, valid or not (tests write broken ones on purpose).
void write_plan(const Graph& g, const Plan& p, const std::string& path);
// Writes a plan that a planner or a baseline made, once it verifies
// (plan/verify.h). One that does not is a bug in what made it: an
// InternalError naming the rule it breaks, and no file, so that `plan -o`
// never leaves a wrong plan for `run` to find (run verifies too).
void write_verified_plan(const Graph& g, const Plan& p, const std::string& path);
Plan read_plan(const Graph& g, const std::string& path);

}  // namespace sa
