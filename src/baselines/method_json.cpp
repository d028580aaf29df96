#include "baselines/method_json.h"

namespace sa {

nlohmann::json method_result_json(const MethodResult& r) {
  nlohmann::json j = {{"name", r.name}, {"feasible", r.feasible}};
  if (!r.feasible) {
    j["why"] = r.why;
    return j;
  }
  j["iteration_us"] = r.sim.iteration_us;
  j["stall_us"] = r.sim.stall_us;
  j["swap_in_bytes"] = r.sim.swap_in_bytes;
  j["swap_out_bytes"] = r.sim.swap_out_bytes;
  j["peak_device_bytes"] = r.sim.peak_device_bytes;
  j["pool_bytes"] = r.plan.pool.total_bytes();
  j["planning_seconds"] = r.planning_seconds;
  j["evaluations"] = r.evaluations;
  return j;
}

}  // namespace sa
