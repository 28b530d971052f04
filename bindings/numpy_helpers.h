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

// An integer array of exactly `expected` elements (any shape that flattens to
// it is refused: the shape must be (expected,)). Float arrays are accepted only
// when every value is integral; NaN, fractions and bools are errors.
inline std::vector<std::int64_t> integer_array(py::handle value, std::int64_t expected, const std::string& what) {
  py::array array = py::array::ensure(value);
  GOENV_CHECK(array, InvalidAction, what << " must be an array of integers");
  GOENV_CHECK(array.ndim() == 1 && array.shape(0) == expected, InvalidAction,
              what << " must have shape (" << expected << ",), got shape "
                   << std::string(py::str(py::getattr(array, "shape"))));
  const char kind = array.dtype().kind();
  GOENV_CHECK(kind == 'i' || kind == 'u' || kind == 'f', InvalidAction,
              what << " must have an integer dtype, got " << std::string(py::str(array.dtype())));
  std::vector<std::int64_t> out(static_cast<std::size_t>(expected));
  if (kind == 'f') {
    auto doubles = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(array);
    for (std::int64_t i = 0; i < expected; ++i) {
      const double x = doubles.at(i);
      GOENV_CHECK(std::isfinite(x) && x == std::floor(x), InvalidAction,
                  what << "[" << i << "] is " << x << ", not an integer");
      out[i] = static_cast<std::int64_t>(x);
    }
  } else {
    auto ints = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(array);
    std::copy(ints.data(), ints.data() + expected, out.begin());
  }
  return out;
}

// A float64 column of `expected` values (from_arrays, simulate priorities).
inline std::vector<double> double_array(py::handle value, std::int64_t expected, const std::string& what) {
  auto array = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(value);
  GOENV_CHECK(array, InvalidArgument, what << " must be an array of numbers");
  GOENV_CHECK(array.ndim() == 1 && array.shape(0) == expected, InvalidArgument,
              what << " must have shape (" << expected << ",), got shape "
                   << std::string(py::str(py::getattr(array, "shape"))));
  return std::vector<double>(array.data(), array.data() + expected);
}

}  // namespace goenv::bindings
