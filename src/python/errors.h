#pragma once
// How the module's C++ exceptions reach Python: every one as
// swapadvisor.Error (a ValueError), with the message the command line prints
// for it (src/cli/main.cpp), so that a caller catches one type and never sees
// a bare RuntimeError from the C++ side.

#include <pybind11/pybind11.h>

namespace sa::python {

// Registers swapadvisor._native.Error and the translator into it.
void register_errors(pybind11::module_& m);

}  // namespace sa::python
