#pragma once
// The parts of swapadvisor._native defined outside module.cpp.

#include <pybind11/pybind11.h>

namespace sa::python {

// swapadvisor._native.Session (session.cpp).
void bind_session(pybind11::module_& m);

}  // namespace sa::python
