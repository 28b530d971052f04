// Env options given as Python keywords, shared by goenv._core and goenv._agents
// (both rebuild envs from them): one parser, one error for a wrong type.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "core/error.h"
#include "envs/env.h"

namespace goenv::bindings {

namespace py = pybind11;

// Env options by name; any other keyword is a graph-builder parameter.
inline EnvConfig config_from(const py::dict& options) {
  EnvConfig c;
  for (auto [key_handle, value] : options) {
    const std::string key = py::str(key_handle);
    try {
      if (key == "cluster") c.cluster = value.cast<std::string>();
      else if (key == "horizon") c.horizon = value.cast<int>();
      else if (key == "decision_mode") c.decision_mode = value.cast<std::string>();
      else if (key == "invalid_penalty") c.invalid_penalty = value.cast<double>();
      else if (key == "priority_levels") c.priority_levels = value.cast<int>();
      else if (key == "fusion_levels") c.fusion_levels = value.cast<int>();
      else if (key == "max_fusion_size") c.max_fusion_size = value.cast<int>();
      else if (key == "placement") c.placement = value.cast<std::string>();
      else {
        GOENV_CHECK(py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value), InvalidArgument,
                    "option '" << key << "' must be a number (graph parameter) or one of cluster, horizon, "
                               "decision_mode, invalid_penalty, priority_levels, fusion_levels, max_fusion_size, placement");
        c.graph_params[key] = value.cast<double>();
      }
    } catch (const py::cast_error&) {
      GOENV_FAIL(InvalidArgument, "option '" << key << "' has the wrong type: "
                                             << std::string(py::str(py::type::of(value).attr("__name__"))));
    }
  }
  return c;
}

}  // namespace goenv::bindings
