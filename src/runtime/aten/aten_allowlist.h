#pragma once
// The ATen operators an exec file may run (Note [ATen allow-list]).
//
// Note [ATen allow-list]
// ----------------------
// An exec file is a program: `run --kernels aten` calls every operator it
// names through libtorch's dispatcher. libtorch has operators that open
// files (aten::from_file maps a file shared and writable), change a
// tensor's storage (set_), print, or move data between devices; a crafted
// exec file naming one of them created, grew and zeroed files and exited 0.
// So an exec file may name only the operators swapadvisor-capture records
// in the training steps it supports (python/swapadvisor_capture/recorder.py
// records the ATen ops a step dispatches below autograd; the committed
// captures in tests/data/capture and the profiled graphs in tests/data/graphs
// and tests/data/amp show which), listed by family in aten_allowlist.cpp,
// every overload of each. An operator outside the list is refused when the
// exec file is read, before anything runs, naming the file, the op and its
// index; capturing a model that needs another operator means adding it here
// (it must compute on its tensor arguments only).
//
// The list says what an op may be; what it may touch is checked against the
// graph with the operator's schema (Note [ATen access check] in
// runtime/aten/aten_access.h): an overload that writes an argument (an in-place
// or out= overload, `Tensor(a!)` in its schema) may write only tensors the
// graph's op updates or creates. A few kernels write arguments their schema
// does not mark (batch norm's running statistics in training); the list
// names those arguments, so that the check counts them as writes.

#include <span>
#include <string_view>

namespace sa::runtime {

struct AllowedAtenOp {
  std::string_view name;    // the schema name, "aten::addmm" (every overload)
  std::string_view family;  // why it is on the list (aten_allowlist.cpp)
  // Arguments the kernel writes without its schema saying so (space
  // separated), and the bool argument that must be true for it to write them
  // ("" : always).
  std::string_view undeclared_writes = {};
  std::string_view undeclared_when = {};
};

// The list, sorted by name.
std::span<const AllowedAtenOp> aten_allowlist();

// The entry of an operator ("aten::addmm", no overload), or nullptr when an
// exec file may not run it.
const AllowedAtenOp* find_allowed_aten_op(std::string_view name);

}  // namespace sa::runtime
