// Actions from Python: split into their heads by one helper for Env.step and VectorEnv.step
// alike (the same dict rules, the same words), then each head's value converted by the env's
// rules (one decision per node) or the vector env's (a batch of them, in one of its layouts).
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <array>
#include <sstream>
#include <string>
#include <vector>

#include "bindings/numpy_helpers.h"
#include "core/error.h"
#include "envs/env.h"
#include "envs/vector_env.h"

namespace goenv::bindings {

namespace py = pybind11;

// One head's part of an action and how errors name it ("actions['placement']").
struct HeadPart {
  py::object value;
  std::string what;
};

inline std::string head_names(const std::vector<Head>& heads) {
  std::string names;
  for (Head h : heads) names += (names.empty() ? "" : ", ") + std::string(head_name(h));
  return names;
}

// A single head's action is the value itself; several heads' is a dict with exactly one entry
// per head name: a missing entry, or a key that is no head (a misspelt one would otherwise be
// ignored without a word), is an InvalidAction naming the heads. `what` names the action.
inline std::vector<HeadPart> head_parts(py::handle action, const std::vector<Head>& heads, const std::string& what) {
  if (heads.size() == 1) return {{py::reinterpret_borrow<py::object>(action), what}};
  GOENV_CHECK(py::isinstance<py::dict>(action), InvalidAction,
              what << " must be a dict with one entry per head: " << head_names(heads));
  const auto d = py::reinterpret_borrow<py::dict>(action);
  std::vector<HeadPart> parts;
  for (Head h : heads) {
    const char* name = head_name(h);
    GOENV_CHECK(d.contains(name), InvalidAction, what << " has no '" << name << "' entry; heads: " << head_names(heads));
    parts.push_back({d[name], what + "['" + name + "']"});
  }
  if (d.size() != heads.size()) {  // every head is there, so the rest are not heads
    std::string other;
    for (const auto& item : d) {
      const std::string key = py::str(item.first);
      if (std::none_of(heads.begin(), heads.end(), [&](Head h) { return key == head_name(h); }))
        other += (other.empty() ? "'" : ", '") + key + "'";
    }
    GOENV_FAIL(InvalidAction, what << " has key(s) " << other << " that are not heads of the task; its heads: "
                                   << head_names(heads));
  }
  return parts;
}

// An Env's action: one int64 vector per head, of one value per node (one in node mode, where a
// head's action is a scalar or a one-element array).
inline std::vector<std::vector<std::int64_t>> env_action(const Env& env, py::handle action) {
  const std::int64_t count = env.node_mode() ? 1 : env.graph().num_nodes();
  std::vector<std::vector<std::int64_t>> values;
  for (HeadPart& part : head_parts(action, env.heads(), env.id() + " action")) {
    if (env.node_mode()) {  // any size but one is an InvalidAction below
      refuse_masked(part.value, part.what);
      try {
        part.value = py::module_::import("numpy").attr("ravel")(part.value);
      } catch (const py::error_already_set& e) {
        GOENV_FAIL(InvalidAction, part.what << " is not an array of integers: " << e.what());
      }
    }
    values.push_back(integer_array(part.value, count, part.what));
  }
  return values;
}

// One head's batched actions as a C-contiguous int64 array in one of the shapes the vector env
// accepts (its `layout` set accordingly): (B,) in node mode, (B, max nodes) stacked or padded,
// (total nodes,) concatenated. An int64 array already in that form is used without a copy.
inline py::array batch_head_action(const VectorEnv& e, const HeadPart& part, ActionLayout& layout) {
  const py::ssize_t b = e.num_envs();
  refuse_masked(part.value, part.what);
  py::array a = py::isinstance<py::array>(part.value) ? py::reinterpret_borrow<py::array>(part.value)
                                                       : py::array::ensure(part.value);
  GOENV_CHECK(a, InvalidAction, part.what << " must be an array of integers");
  auto* proxy = py::detail::array_proxy(a.ptr());
  const int nd = proxy->nd;
  const py::ssize_t* dims = proxy->dimensions;
  bool ok = false;
  if (e.node_mode()) {
    ok = nd == 1 && dims[0] == b;
    layout = {false, 1};
  } else if (e.layout() == BatchLayout::kConcatenated && nd == 1) {
    ok = dims[0] == e.total_nodes();
    layout = {true, 0};
  } else {
    ok = nd == 2 && dims[0] == b && dims[1] == e.max_nodes();
    layout = {false, e.max_nodes()};
  }
  if (!ok) {  // name the accepted shapes
    std::ostringstream expected;
    if (e.node_mode()) {
      expected << "(" << b << ",) [num_envs]";
    } else if (e.layout() == BatchLayout::kConcatenated) {
      expected << "(" << e.total_nodes() << ",) [total nodes, concatenated] or (" << b << ", " << e.max_nodes()
               << ") [num_envs, max nodes, padded]";
    } else {
      expected << "(" << b << ", " << e.max_nodes() << ") [num_envs, "
               << (e.layout() == BatchLayout::kPadded ? "max_nodes" : "num_nodes") << "]";
    }
    GOENV_FAIL(InvalidAction, part.what << " must have shape " << expected.str() << ", got "
                                        << std::string(py::str(py::getattr(a, "shape"))));
  }
  const auto* descr = py::detail::array_descriptor_proxy(proxy->descr);
  if (descr->type_num == py::detail::npy_api::NPY_INT64_ &&
      (proxy->flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) && descr->byteorder != '>')
    return a;  // the common case: no copy, no check of each value
  try {
    return integer_values(a, part.what);
  } catch (const InvalidArgument& error) {
    throw InvalidAction(error.what());  // an action's bad value is an invalid action
  }
}

// A VectorEnv's actions: each head's array in `held` (kept alive for the step), all heads in
// one layout.
inline void batch_action(const VectorEnv& e, py::handle actions, std::array<py::array, 3>& held,
                         ActionLayout& layout) {
  const auto parts = head_parts(actions, e.env(0).heads(), "actions");
  for (std::size_t h = 0; h < parts.size(); ++h) {
    ActionLayout this_layout;
    held[h] = batch_head_action(e, parts[h], this_layout);
    GOENV_CHECK(h == 0 || (this_layout.concatenated == layout.concatenated &&
                           this_layout.row_width == layout.row_width),
                InvalidAction, "every head's actions must use the same layout (concatenated or padded)");
    layout = this_layout;
  }
}

}  // namespace goenv::bindings
