#pragma once
// The CUDA side of the ATen kernels (Note [ATen on CUDA], aten_kernels.h),
// built into the plugin when its libtorch has CUDA (SA_ATEN_CUDA).

#include <string>

#include "runtime/aten/placement_slots.h"

namespace sa::runtime::aten_cuda {

// libtorch's CUDA allocator replaced, once per process, by one that serves
// the slots (outputs in their pool objects) and otherwise allocates scratch
// from CUDA's stream-ordered pool on the stream libtorch asks for. Must run
// before libtorch allocates any CUDA memory. nullptr, with the reason in
// *why, when this libtorch cannot swap its allocator (before 2.0) or did
// allocate already; outputs are then copied.
PlacementSlots* placing_allocator(int device, std::string* why);

// Scratch given back on a stream that still exists is freed in its order
// (cudaFreeAsync); on one that has ended, or an unknown one, synchronously.
void stream_begins(void* stream);
void stream_ends(void* stream);

}  // namespace sa::runtime::aten_cuda
