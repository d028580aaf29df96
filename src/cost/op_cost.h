#pragma once
// How long each op takes on a device.
//
// An op's time is its measured time_us when the graph has one; otherwise a
// roofline estimate
//     max(flops / (peak_flops[op.math] * compute_efficiency),
//         bytes_accessed / (hbm_bandwidth * memory_efficiency)) + launch_overhead
// and, for an op with neither flops nor bytes_accessed, the launch overhead
// alone (reported once per graph through the warning list). peak_flops[m]
// is DeviceProfile::math_tflops(m): the op's dtype picks the FP32 peak or a
// tensor-core rate (docs/devices.md, "Op cost model").

#include <string>
#include <vector>

#include "cost/device.h"
#include "graph/graph.h"

namespace sa {

double estimate_op_us(const Op& op, const DeviceProfile& d);

// Times of every op, indexed by OpId. When warnings is given, one line is
// appended if any op had no cost information.
std::vector<double> op_times_us(const Graph& g, const DeviceProfile& d,
                                std::vector<std::string>* warnings = nullptr);

// Checks times (op_times_us(g, d)) multiplied by scale (--compute-scale)
// against Note [Input limits] (util/limits.h): throws sa::Error naming the
// first op whose scaled time is not a finite number from 0 to kMaxOpUs, and
// where its time came from. Every command that reads a graph and a device
// calls it before planning, simulating or running.
void check_op_times(const Graph& g, const DeviceProfile& d, const std::vector<double>& times,
                    double scale = 1);

// Sum of op times: the iteration time with unlimited memory (no swapping).
double ideal_us(const std::vector<double>& op_times);

}  // namespace sa
