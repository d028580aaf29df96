#pragma once
// A method's result as JSON, the fields `compare --json` and the report share:
// name, feasible, and either why (infeasible) or the simulated iteration
// (iteration_us, stall_us, swap_in_bytes, swap_out_bytes, peak_device_bytes,
// pool_bytes) with planning_seconds and evaluations. Callers add their own
// fields (throughput, samples/s, main).

#include <nlohmann/json.hpp>

#include "baselines/baselines.h"

namespace sa {

nlohmann::json method_result_json(const MethodResult& r);

}  // namespace sa
