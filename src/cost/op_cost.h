#pragma once
// How long each op takes on a device.
//
// An op's time is its measured time_us when the graph has one; otherwise a
// roofline estimate
//     max(flops / (peak_flops * compute_efficiency),
//         bytes_accessed / (hbm_bandwidth * memory_efficiency)) + launch_overhead
// and, for an op with neither flops nor bytes_accessed, the launch overhead
// alone (reported once per graph through the warning list).

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

// Sum of op times: the iteration time with unlimited memory (no swapping).
double ideal_us(const std::vector<double>& op_times);

}  // namespace sa
