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

namespace goenv::bindings {

namespace py = pybind11;

// Env options by name; any other keyword is a graph-builder parameter.
// `placement` is a rule name or one device per node; `priority` one value per node.
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

inline EnvConfig config_from(const py::dict& options) {
  EnvConfig c;
  for (auto [key_handle, value] : options) {
    const std::string key = py::str(key_handle);
    try {
      if (key == "cluster") c.cluster = value.cast<std::string>();
      else if (key == "horizon") c.horizon = int_option(value, key);
      else if (key == "decision_mode") c.decision_mode = value.cast<std::string>();
      else if (key == "invalid_penalty") {
        GOENV_CHECK(!py::isinstance<py::bool_>(value), InvalidArgument, "option 'invalid_penalty' must be a number, got bool");
        c.invalid_penalty = value.cast<double>();
      }
      else if (key == "priority_levels") c.priority_levels = int_option(value, key);
      else if (key == "fusion_levels") c.fusion_levels = int_option(value, key);
      else if (key == "max_fusion_size") c.max_fusion_size = int_option(value, key);
      else if (key == "colocation") c.colocation = value.cast<std::string>();
      else if (key == "observation_version") c.observation_version = int_option(value, key);
      else if (key == "start") {
        GOENV_CHECK(py::isinstance<py::str>(value), InvalidArgument,
                    "option 'start' must be 'default' or a baseline's name (goenv.baselines.list()); for given "
                    "decisions use env.reset(options={'start': {...}}) or env.set_start({...})");
        c.start = value.cast<std::string>();
      }
      else if (key == "placement" && py::isinstance<py::str>(value)) c.placement = value.cast<std::string>();
      else if (key == "placement") {  // explicit device per node
        const auto devices = integer_values(value, "placement");
        GOENV_CHECK(devices.ndim() == 1 && devices.size() > 0, InvalidArgument,
                    "placement must be 'default', 'single', 'expert' or a 1-D array of devices, one per node");
        try {
          c.initial_placement = narrow_to_int32(devices.data(), static_cast<std::size_t>(devices.size()), "placement");
        } catch (const InvalidAction& e) {
          throw InvalidArgument(e.what());  // an option, not an action
        }
      } else if (key == "priority") {
        if (value.is_none()) continue;
        const auto values = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(value);
        GOENV_CHECK(values && values.ndim() == 1 && values.size() > 0, InvalidArgument,
                    "priority must be a 1-D array of numbers, one per node");
        c.initial_priority.assign(values.data(), values.data() + values.size());
      }
      else {
        GOENV_CHECK((py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value)) &&
                        !py::isinstance<py::bool_>(value), InvalidArgument,
                    "option '" << key << "' must be a number (graph parameter) or one of cluster, horizon, "
                               "decision_mode, invalid_penalty, priority_levels, fusion_levels, max_fusion_size, "
                               "colocation, placement, priority, observation_version, start");
        c.graph_params[key] = value.cast<double>();
      }
    } catch (const py::cast_error&) {
      GOENV_FAIL(InvalidArgument, "option '" << key << "' has the wrong type: "
                                             << std::string(py::str(py::type::of(value).attr("__name__"))));
    }
  }
  return c;
}

// A dict action's keys beyond the task's heads: an InvalidAction naming them (a misspelt or
// foreign head would otherwise be ignored without a word).
inline void refuse_other_keys(const py::dict& action, const std::vector<Head>& heads, const std::string& what) {
  if (action.size() == heads.size()) return;  // every head is there (checked before), so nothing else
  std::string other, names;
  for (const auto& item : action) {
    const std::string key = py::str(item.first);
    if (std::none_of(heads.begin(), heads.end(), [&](Head h) { return key == head_name(h); }))
      other += (other.empty() ? "'" : ", '") + key + "'";
  }
  for (Head h : heads) names += (names.empty() ? "" : ", ") + std::string(head_name(h));
  GOENV_FAIL(InvalidAction, what << " has key(s) " << other << " that are not heads of the task; its heads: " << names);
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
