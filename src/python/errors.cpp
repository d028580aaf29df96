#include "python/errors.h"

#include <exception>
#include <new>
#include <string>

#include "util/error.h"

namespace py = pybind11;

namespace sa::python {

void register_errors(py::module_& m) {
  // A user's mistake (a bad file, a budget too small): sa::Error.
  static py::exception<Error> error(m, "Error", PyExc_ValueError);
  // Local to this module: a global translator would also take the C++
  // exceptions of every other pybind11 module in the process (torch's
  // c10::Error, raised by a user's forward pass inside a Trainer's capture,
  // came out as "internal error (a bug in swapadvisor)").
  py::register_local_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    try {
      std::rethrow_exception(p);
    } catch (const py::error_already_set&) {
      throw;  // a Python exception raised inside a call: as it is
    } catch (const py::builtin_exception&) {
      throw;  // pybind11's own (a wrong argument type): the package checks those first
    } catch (const Error& e) {
      error(e.what());
    } catch (const std::bad_alloc&) {
      error(
          "out of memory: the input needs more memory than this machine let swapadvisor "
          "have");
    } catch (const InternalError& e) {
      error(e.what());  // says that it is a bug, and where
    } catch (const std::exception& e) {
      error((std::string("internal error (a bug in swapadvisor): ") + e.what()).c_str());
    }
  });
}

}  // namespace sa::python
