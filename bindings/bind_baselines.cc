// Baselines (envs/baselines/baseline.h): names, descriptors, and solve with the
// GIL released; decisions come back as numpy arrays.
#include <pybind11/stl.h>

#include "bindings/guard.h"
#include "bindings/numpy_helpers.h"
#include "envs/baselines/baseline.h"

namespace goenv::bindings {

void bind_baselines(py::module_& m) {
  m.def("baseline_names", &baseline_names, py::arg("task") = "",
        "Registered baselines, sorted; with a task name only those that can run on it.");
  m.def("baseline_info", [](const std::string& name) {
    const Baseline& b = baseline(name);
    std::vector<std::string> heads;
    for (Head h : b.heads) heads.emplace_back(head_name(h));
    py::dict d;
    d["name"] = b.name;
    d["heads"] = heads;
    d["description"] = b.description;
    return d;
  }, py::arg("name"));
  m.def("solve_baseline", [](Env& env, const std::string& name, std::int64_t simulator_calls, std::uint64_t seed,
                             bool measure) {
    BaselineResult r =
        guarded(env.guard(), [&] { return solve_baseline(env, name, {simulator_calls, seed}, measure); });
    const auto n = static_cast<py::ssize_t>(r.decisions.placement.size());
    py::dict d;
    d["method"] = r.method;
    d["placement"] = to_numpy(std::move(r.decisions.placement), {n});
    d["priority"] = to_numpy(std::move(r.decisions.priority), {n});
    d["fusion"] = to_numpy(std::move(r.decisions.fusion), {n});
    d["runtime"] = r.runtime;
    d["oom"] = r.oom;
    d["invalid"] = r.invalid;
    d["invalid_reason"] = r.invalid_reason;
    d["simulator_calls"] = r.simulator_calls;
    const auto calls = static_cast<py::ssize_t>(r.curve.size());
    d["curve"] = to_numpy(std::move(r.curve), {calls});
    d["seconds"] = r.seconds;
    d["lower_bound"] = r.lower_bound;
    d["initial_runtime"] = r.initial_runtime;
    return d;
  }, py::arg("env"), py::arg("name"), py::arg("simulator_calls") = 1000, py::arg("seed") = 0,
     py::arg("measure") = true,
     "Runs a baseline on the env without touching its episode; see goenv.baselines.solve. measure=False: the "
     "decisions only (runtime and lower_bound NaN), for callers that simulate them themselves.");
  m.def("quantize_priorities", [](py::handle values, int levels) {
    const py::array array = py::array::ensure(values);
    GOENV_CHECK(array && array.ndim() == 1, InvalidArgument, "priorities must be a 1-D array");
    auto q = quantize_priorities(double_array(values, array.shape(0), "priorities"), levels);
    const auto n = static_cast<py::ssize_t>(q.size());
    return to_numpy(std::move(q), {n});
  }, py::arg("values"), py::arg("levels"),
     "Order-preserving integer levels in [0, levels) for the env's priority head.");
}

}  // namespace goenv::bindings
