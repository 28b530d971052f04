// numpy arrays for the vector env's batches: fresh ones made straight by numpy's C API (the
// per-step path) and views over buffers the engine or a static observation owns.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <initializer_list>
#include <vector>

namespace goenv::bindings {

namespace py = pybind11;

// A numpy array over memory that `owner` keeps alive, with explicit strides.
template <typename T>
py::array strided_view(const T* data, std::vector<py::ssize_t> shape, std::vector<py::ssize_t> strides,
                       const py::object& owner, bool writeable) {
  py::array view(py::dtype::of<T>(), std::move(shape), std::move(strides), data, owner);
  if (!writeable) view.attr("setflags")(py::arg("write") = false);
  return view;
}

inline std::vector<py::ssize_t> row_strides(const std::vector<py::ssize_t>& shape, py::ssize_t item) {
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t s = item;
  for (std::size_t k = shape.size(); k-- > 0;) {
    strides[k] = s;
    s *= shape[k];
  }
  return strides;
}

// A read-only view; `broadcast` repeats one block `batch` times with stride 0.
template <typename T>
py::array static_view(const T* data, std::vector<py::ssize_t> block, const py::object& owner, bool broadcast,
                      py::ssize_t batch) {
  auto strides = row_strides(block, sizeof(T));
  if (broadcast) {
    block.insert(block.begin(), batch);
    strides.insert(strides.begin(), 0);
  }
  return strided_view(data, std::move(block), std::move(strides), owner, false);
}

// A fresh uninitialized C-contiguous array straight from numpy's C API (the
// per-step path: pybind11's generic constructor costs several times more).
inline py::object new_array(int type_num, std::initializer_list<py::ssize_t> shape) {
  auto& api = py::detail::npy_api::get();
  PyObject* descr = api.PyArray_DescrFromType_(type_num);  // new reference, stolen below
  if (!descr) throw py::error_already_set();
  py::ssize_t dims[3];
  int nd = 0;
  for (py::ssize_t d : shape) dims[nd++] = d;
  PyObject* array = api.PyArray_NewFromDescr_(api.PyArray_Type_, descr, nd, dims, nullptr, nullptr, 0, nullptr);
  if (!array) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(array);
}

inline void* array_data(const py::object& a) { return a ? py::detail::array_proxy(a.ptr())->data : nullptr; }

constexpr int kFloat32 = py::detail::npy_api::NPY_FLOAT_;
constexpr int kFloat64 = py::detail::npy_api::NPY_DOUBLE_;
constexpr int kInt8 = py::detail::npy_api::NPY_BYTE_;
constexpr int kBool = py::detail::npy_api::NPY_BOOL_;
constexpr int kInt64 = py::detail::npy_api::NPY_INT64_;

}  // namespace goenv::bindings
