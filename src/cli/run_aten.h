#pragma once
// `swapadvisor run GRAPH PLAN --kernels aten`: train a captured PyTorch model
// under the plan (runtime/aten/aten_run.h). Called by cmd_run.cpp.

#include <string>

#include "plan/plan.h"
#include "runtime/executor.h"

namespace sa::cli {

struct AtenRunArgs {
  std::string graph;
  std::string plan;
  std::string backend = "host";
  std::string exec;         // default: the graph's prefix + ".exec.json.gz"
  std::string values;       // default: the graph's prefix + ".values.bin"
  std::string save_values;  // write the trained state here
  int iterations = 1;
  int threads = 0;
  bool json = false;
  std::string nvme_file;  // --nvme-file (Note [Host tier])
};

void run_aten(const AtenRunArgs& args);

// The `host` line of `run`'s report, with either kernels: the host arena and
// the NVMe tier (nothing for a plan without NVMe tensors).
void print_host_tier(const Plan& p, const runtime::RunResult& r);

}  // namespace sa::cli
