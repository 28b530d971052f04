// Env options given as Python keywords, shared by goenv._core and goenv._agents
// (both rebuild envs from them): one parser, one error for a wrong type.
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <climits>
#include <limits>
#include <string>

#include "bindings/numpy_helpers.h"
#include "core/error.h"
#include "envs/env.h"
#include "envs/spec.h"

namespace goenv::bindings {

namespace py = pybind11;

// An int option: a Python or numpy integer (not a bool, not a float), in int range.
inline int int_option(py::handle value, const std::string& key) {
  const bool integer = (py::isinstance<py::int_>(value) || py::hasattr(value, "__index__")) &&
                       !py::isinstance<py::bool_>(value) && !py::isinstance(value, py::module_::import("numpy").attr("bool_"));
  GOENV_CHECK(integer, InvalidArgument,
              "option '" << key << "' must be an int, got " << std::string(py::str(py::type::of(value).attr("__name__"))));
  const py::int_ number = py::reinterpret_steal<py::int_>(PyNumber_Index(value.ptr()));
  if (!number) throw py::error_already_set();
  int overflow = 0;  // beyond long long: reported as out of range below
  const long long x = PyLong_AsLongLongAndOverflow(number.ptr(), &overflow);
  GOENV_CHECK(overflow == 0 && x >= INT_MIN && x <= INT_MAX, InvalidArgument,
              "option '" << key << "' is " << std::string(py::str(number)) << ", outside the int range");
  return static_cast<int>(x);
}

// One option's value into `c`, as envs/spec.h says the option is read.
inline void set_option(EnvConfig& c, const OptionField& field, py::handle value) {
  const std::string key = field.name;
  switch (field.kind) {
    case OptionKind::kInt: c.*std::get<int EnvConfig::*>(field.member) = int_option(value, key); return;
    case OptionKind::kFloat:
      GOENV_CHECK(!py::isinstance<py::bool_>(value), InvalidArgument, "option '" << key << "' must be a number, got bool");
      c.*std::get<double EnvConfig::*>(field.member) = value.cast<double>();
      return;
    case OptionKind::kText: c.*std::get<std::string EnvConfig::*>(field.member) = value.cast<std::string>(); return;
    case OptionKind::kCluster: c.cluster = value.cast<std::string>(); return;
    case OptionKind::kStart:
      GOENV_CHECK(py::isinstance<py::str>(value), InvalidArgument,
                  "option 'start' must be 'default' or a baseline's name (goenv.baselines.list()); for given "
                  "decisions use env.reset(options={'start': {...}}) or env.set_start({...})");
      c.start = value.cast<std::string>();
      return;
    case OptionKind::kPlacement: {
      if (py::isinstance<py::str>(value)) {
        c.placement = value.cast<std::string>();
        return;
      }
      const auto devices = integer_values(value, "placement");  // explicit device per node
      GOENV_CHECK(devices.ndim() == 1 && devices.size() > 0, InvalidArgument,
                  "placement must be 'default', 'single', 'expert' or a 1-D array of devices, one per node");
      try {
        c.initial_placement = narrow_to_int32(devices.data(), static_cast<std::size_t>(devices.size()), "placement");
      } catch (const InvalidAction& e) {
        throw InvalidArgument(e.what());  // an option, not an action
      }
      return;
    }
    case OptionKind::kPriority: {
      if (value.is_none()) return;
      const auto values = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(value);
      GOENV_CHECK(values && values.ndim() == 1 && values.size() > 0, InvalidArgument,
                  "priority must be a 1-D array of numbers, one per node");
      c.initial_priority.assign(values.data(), values.data() + values.size());
      return;
    }
  }
}

// The options of envs/spec.h; any other keyword is a graph-builder parameter (a number).
inline EnvConfig config_from(const py::dict& options) {
  EnvConfig c;
  for (auto [key_handle, value] : options) {
    const std::string key = py::str(key_handle);
    try {
      if (const OptionField* field = find_option(key)) {
        set_option(c, *field, value);
        continue;
      }
      GOENV_CHECK((py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value)) &&
                      !py::isinstance<py::bool_>(value), InvalidArgument,
                  "option '" << key << "' must be a number (graph parameter) or one of " << option_names());
      c.graph_params[key] = value.cast<double>();
    } catch (const py::cast_error&) {
      GOENV_FAIL(InvalidArgument, "option '" << key << "' has the wrong type: "
                                             << std::string(py::str(py::type::of(value).attr("__name__"))));
    }
  }
  return c;
}

// The options an env was made with, by envs/spec.h, plus its graph parameters: its `config`.
// "given" as the start: decisions set as such (set_start), which no option rebuilds.
inline py::dict config_dict(const Env& env) {
  const EnvConfig& c = env.config();
  const auto n = static_cast<py::ssize_t>(env.graph().num_nodes());
  py::dict d;
  for (const auto& [k, v] : c.graph_params) d[py::str(k)] = v;
  for (const OptionField& field : option_fields()) {
    py::object value;
    switch (field.kind) {
      case OptionKind::kInt: value = py::int_(c.*std::get<int EnvConfig::*>(field.member)); break;
      case OptionKind::kFloat: value = py::float_(c.*std::get<double EnvConfig::*>(field.member)); break;
      case OptionKind::kText: value = py::str(c.*std::get<std::string EnvConfig::*>(field.member)); break;
      case OptionKind::kCluster: value = py::str(env.cluster().name()); break;
      case OptionKind::kStart:
        value = py::str(!c.start.empty() ? c.start : env.has_start() ? std::string("given") : std::string("default"));
        break;
      case OptionKind::kPlacement:
        value = c.initial_placement.empty() ? py::object(py::str(c.placement))
                                            : to_numpy(std::vector<std::int32_t>(c.initial_placement), {n});
        break;
      case OptionKind::kPriority:
        value = c.initial_priority.empty() ? py::object(py::none())
                                           : to_numpy(std::vector<double>(c.initial_priority), {n});
        break;
    }
    d[py::str(field.name)] = value;
  }
  return d;
}

// One numpy array per head the env decides: its decisions of `s` (solution_from's inverse).
inline py::dict solution_dict(const Env& env, const Solution& s) {
  const auto n = static_cast<py::ssize_t>(env.graph().num_nodes());
  py::dict d;
  for (Head h : env.heads()) {
    if (h == Head::kPlacement) d["placement"] = to_numpy(std::vector<std::int32_t>(s.placement), {n});
    if (h == Head::kPriority) d["priority"] = to_numpy(std::vector<double>(s.priority), {n});
    if (h == Head::kFusion) d["fusion"] = to_numpy(std::vector<std::int32_t>(s.fusion), {n});
  }
  return d;
}

// A start given as {head: values} (any subset of placement / priority / fusion): env.set_start's
// argument in goenv._core, and an env description's "start" in goenv._agents.
inline Solution solution_from(const Env& env, const py::dict& d) {
  const std::int64_t n = env.graph().num_nodes();
  GOENV_CHECK(!d.empty(), InvalidArgument, env.id() << ": an empty start; give decisions for the task's heads");
  Solution s;
  for (auto [key, value] : d) {
    const std::string head = py::str(key);
    GOENV_CHECK(head == "placement" || head == "priority" || head == "fusion", InvalidArgument,
                env.id() << ": a start has keys placement, priority and fusion, got '" << head << "'");
    try {
      if (head == "priority") {
        s.priority = double_array(value, n, "start priority");
        continue;
      }
      (head == "placement" ? s.placement : s.fusion) = int32_array(value, n, "start " + head);
    } catch (const InvalidAction& e) {
      throw InvalidArgument(e.what());  // a bad start is a bad argument, not an action
    }
  }
  return s;
}

}  // namespace goenv::bindings
