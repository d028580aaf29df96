#pragma once
// The host backend: a device emulated in host memory.
//
// The device is a separate arena allocated with exactly the bytes asked for;
// each of the three streams is a thread running its work in order
// (runtime/host/stream_worker.h); events are counters with a condition variable;
// copies are real memcpy's between the arena and host buffers, paced to a
// device profile's link (Note [Paced copies], runtime/host/link_pacer.h); the
// compute thread runs the synthetic kernels (runtime/synthetic_op.h) and then
// waits out the op's duration. Every stream times its work on the clock of
// the device it emulates, not on its thread's (Note [Stream clocks] in
// host_backend.cpp). A kernel that takes longer than the duration makes the
// op late; take_kernel_overrun() counts those (the time scale is then too
// small for this host: Note [Time scale] in runtime/executor.h).

#include <cstddef>
#include <functional>
#include <memory>
#include <span>

#include "cost/device.h"
#include "runtime/backend.h"
#include "runtime/synthetic.h"

namespace sa::runtime {

struct HostBackendOptions {
  DeviceProfile link;     // its h2d, d2h and duplex bandwidths pace the copies
  double time_scale = 1;  // copies take time_scale x the link's time
  bool pace = false;      // false: copies are plain memcpy
  bool prefault = true;   // touch every page at allocation (not while timed)
  // When set, launch_op runs this instead of the op's synthetic kernel, on the
  // compute stream's thread (with a null stream).
  OpKernelHook kernel;
};

std::unique_ptr<Backend> make_host_backend(const HostBackendOptions& options);

}  // namespace sa::runtime
