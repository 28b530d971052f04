// Conversions shared by every binding file: vectors handed to numpy without a
// copy, read-only views into shared C++ data, and checked action/array inputs.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"

namespace goenv::bindings {

namespace py = pybind11;

// Moves the vector into a numpy array that owns it (no copy).
template <typename T>
py::array_t<T> to_numpy(std::vector<T>&& data, std::vector<py::ssize_t> shape) {
  auto* owned = new std::vector<T>(std::move(data));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(shape, owned->data(), free_when_done);
}

// A read-only view of `data`, keeping `owner` alive as the array's base.
template <typename T>
py::array_t<T> readonly_view(const T* data, std::vector<py::ssize_t> shape, py::object owner) {
  py::array_t<T> view(shape, data, owner);
  view.attr("setflags")(py::arg("write") = false);
  return view;
}

template <typename T>
py::array_t<T> readonly_view(const std::vector<T>& data, std::vector<py::ssize_t> shape, py::object owner) {
  return readonly_view(data.data(), std::move(shape), std::move(owner));
}

// A str argument (`path`: an os.PathLike too) as UTF-8, or InvalidArgument naming `what`:
// pybind11's own refusal is a signature dump, and a lone surrogate fails to encode.
inline std::string text_argument(py::handle value, const char* what, bool path = false) {
  py::object text = py::reinterpret_borrow<py::object>(value);
  if (path && !py::isinstance<py::str>(value) && py::hasattr(value, "__fspath__")) text = value.attr("__fspath__")();
  GOENV_CHECK(py::isinstance<py::str>(text), InvalidArgument,
              what << " must be a " << (path ? "path (str or os.PathLike)" : "string") << ", got "
                   << std::string(py::str(py::type::handle_of(value).attr("__name__"))));
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
  if (data == nullptr) {
    PyErr_Clear();
    GOENV_FAIL(InvalidArgument, what << " is not valid Unicode (a lone surrogate?)");
  }
  return std::string(data, static_cast<std::size_t>(size));
}

// Converts one number of an integer-valued column, refusing fractions, NaN and
// values outside int64 (never a silent truncation or wrap-around).
inline std::int64_t integral_value(double x, const std::string& what, std::int64_t index) {
  GOENV_CHECK(std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9.2e18, InvalidArgument,
              what << "[" << index << "] is " << x << ", not an integer in int64 range");
  return static_cast<std::int64_t>(x);
}

// `array` as a C-contiguous array of T (a copy when it is not one already); a conversion numpy
// cannot make (out of memory) is InvalidArgument naming `what`, never an empty array.
template <class T>
py::array_t<T> converted(const py::array& array, const std::string& what) {
  auto out = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(array);
  if (!out) {
    PyErr_Clear();
    GOENV_FAIL(InvalidArgument, what << ": numpy could not convert its " << array.size() << " values");
  }
  return out;
}

// Any integer or integral-float numpy array as int64, checked value by value.
inline py::array_t<std::int64_t> integer_values(py::handle value, const std::string& what) {
  py::array array = py::array::ensure(value);
  GOENV_CHECK(array, InvalidArgument, what << " must be an array of integers");
  const char kind = array.dtype().kind();
  GOENV_CHECK(kind == 'i' || kind == 'u' || kind == 'f', InvalidArgument,
              what << " must have an integer dtype, got " << std::string(py::str(array.dtype())));
  if (kind == 'i') return converted<std::int64_t>(array, what);
  auto doubles = converted<double>(array, what);
  if (kind == 'u') {  // uint64 beyond int64 would wrap: check in the unsigned domain
    auto unsigned_values = converted<std::uint64_t>(array, what);
    for (py::ssize_t i = 0; i < unsigned_values.size(); ++i)
      GOENV_CHECK(unsigned_values.data()[i] <= static_cast<std::uint64_t>(INT64_MAX), InvalidArgument,
                  what << "[" << i << "] is " << unsigned_values.data()[i] << ", outside int64");
    return converted<std::int64_t>(array, what);
  }
  py::array_t<std::int64_t> out(std::vector<py::ssize_t>(array.shape(), array.shape() + array.ndim()));
  for (py::ssize_t i = 0; i < doubles.size(); ++i) out.mutable_data()[i] = integral_value(doubles.data()[i], what, i);
  return out;
}

// An integer array of shape (expected,). Float arrays are accepted only when
// every value is integral; NaN, fractions, bools and out-of-range values are errors.
// numpy.ma arrays are refused: converting one silently drops its mask.
// A masked array exists only once numpy.ma is imported, so numpy.ma is looked up
// in sys.modules, never imported here: importing it took ~20 ms, the cold start
// of a process's first goenv.simulate or step with an array (docs/performance.md). Another
// thread may be importing it (matplotlib, at a first render): until the module
// has its MaskedArray, no masked array exists yet.
inline void refuse_masked(py::handle value, const std::string& what) {
  static py::handle masked_array;  // numpy.ma.MaskedArray once seen (kept alive: released)
  if (!masked_array) {
    static const py::handle modules = py::object(py::module_::import("sys").attr("modules")).release();
    const py::handle numpy_ma = PyDict_GetItemString(modules.ptr(), "numpy.ma");  // borrowed, no error set
    if (!numpy_ma || !py::hasattr(numpy_ma, "MaskedArray")) return;
    masked_array = py::object(numpy_ma.attr("MaskedArray")).release();
  }
  GOENV_CHECK(!py::isinstance(value, masked_array), InvalidAction,
              what << " is a masked array; pass plain values (numpy.ma.filled) so no mask is ignored");
}

inline std::vector<std::int64_t> integer_array(py::handle value, std::int64_t expected, const std::string& what) {
  refuse_masked(value, what);
  py::array array = py::array::ensure(value);
  GOENV_CHECK(array, InvalidAction, what << " must be an array of integers");
  GOENV_CHECK(array.ndim() == 1 && array.shape(0) == expected, InvalidAction,
              what << " must have shape (" << expected << ",), got shape "
                   << std::string(py::str(py::getattr(array, "shape"))));
  try {
    const auto ints = integer_values(array, what);
    return std::vector<std::int64_t>(ints.data(), ints.data() + expected);
  } catch (const InvalidArgument& e) {
    throw InvalidAction(e.what());  // an action's bad value is an invalid action
  }
}

// `values` (decisions: devices, fusion levels) as the int32 the simulator takes; a value
// beyond int32 is refused with its index and value, never wrapped (2**32 + 1 is not device 1).
inline std::vector<std::int32_t> narrow_to_int32(const std::int64_t* values, std::size_t count,
                                                 const std::string& what) {
  std::vector<std::int32_t> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    GOENV_CHECK(values[i] >= INT32_MIN && values[i] <= INT32_MAX, InvalidAction,
                what << "[" << i << "] is " << values[i] << ", out of range for a device or a fusion level");
    out[i] = static_cast<std::int32_t>(values[i]);
  }
  return out;
}

// A decision column of `expected` values (integer_array, then narrow_to_int32).
inline std::vector<std::int32_t> int32_array(py::handle value, std::int64_t expected, const std::string& what) {
  const auto values = integer_array(value, expected, what);
  return narrow_to_int32(values.data(), values.size(), what);
}

// A float64 column of `expected` values (from_arrays, simulate priorities).
// Complex values would be cast to real (numpy's forcecast) with their imaginary part dropped.
inline void refuse_complex(py::handle value, const std::string& what) {
  const py::array raw = py::array::ensure(value);
  GOENV_CHECK(!raw || raw.dtype().kind() != 'c', InvalidArgument, what << " must be real numbers, got complex values");
}

inline std::vector<double> double_array(py::handle value, std::int64_t expected, const std::string& what) {
  refuse_complex(value, what);
  auto array = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(value);
  GOENV_CHECK(array, InvalidArgument, what << " must be an array of numbers");
  GOENV_CHECK(array.ndim() == 1 && array.shape(0) == expected, InvalidArgument,
              what << " must have shape (" << expected << ",), got shape "
                   << std::string(py::str(py::getattr(array, "shape"))));
  return std::vector<double>(array.data(), array.data() + expected);
}

}  // namespace goenv::bindings
