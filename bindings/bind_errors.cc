// Maps goenv's C++ exceptions once to a small Python hierarchy that also
// subclasses the standard exceptions callers already catch.
#include <pybind11/pybind11.h>

#include "core/error.h"

namespace goenv::bindings {

namespace py = pybind11;

namespace {

PyObject* new_exception(py::module_& m, const char* name, py::tuple bases, const char* doc) {
  const std::string qualified = std::string("goenv.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (!type) throw py::error_already_set();
  m.add_object(name, py::handle(type));
  return type;
}

}  // namespace

void bind_errors(py::module_& m) {
  static PyObject* error = new_exception(m, "Error", py::make_tuple(py::handle(PyExc_Exception)),
                                         "Base class of every goenv error.");
  static PyObject* invalid_argument = new_exception(
      m, "InvalidArgument", py::make_tuple(py::handle(error), py::handle(PyExc_ValueError)),
      "A bad value: shape, dtype, range or option.");
  static PyObject* invalid_graph = new_exception(m, "InvalidGraph", py::make_tuple(py::handle(invalid_argument)),
                                                 "A malformed graph or file.");
  static PyObject* invalid_action = new_exception(m, "InvalidAction", py::make_tuple(py::handle(invalid_argument)),
                                                  "An action outside the action space.");
  static PyObject* reset_needed = new_exception(
      m, "ResetNeeded", py::make_tuple(py::handle(error), py::handle(PyExc_RuntimeError)),
      "step() before reset() or after the episode ended.");
  static PyObject* not_found = new_exception(m, "NotFound",
                                             py::make_tuple(py::handle(error), py::handle(PyExc_KeyError)),
                                             "An unknown env id, graph, preset or method name.");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InvalidGraph& e) {
      PyErr_SetString(invalid_graph, e.what());
    } catch (const InvalidAction& e) {
      PyErr_SetString(invalid_action, e.what());
    } catch (const InvalidArgument& e) {
      PyErr_SetString(invalid_argument, e.what());
    } catch (const ResetNeeded& e) {
      PyErr_SetString(reset_needed, e.what());
    } catch (const NotFound& e) {
      PyErr_SetString(not_found, e.what());
    } catch (const Error& e) {
      PyErr_SetString(error, e.what());
    }
  });
}

}  // namespace goenv::bindings
