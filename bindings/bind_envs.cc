// One generic binding for every env (EnvPool-style): observations leave C++ as
// numpy arrays without copies, the GIL is released while simulating.
#include <pybind11/stl.h>

#include <cmath>

#include "bindings/actions.h"
#include "bindings/env_options.h"
#include "bindings/guard.h"
#include "bindings/numpy_helpers.h"
#include "envs/registry.h"
#include "envs/spec.h"
#include "envs/start.h"

namespace goenv::bindings {

namespace {

// One info value of one env; `best`: env.best() copied under the env's guard with the info.
py::object info_value(InfoKey key, const Env& env, const StepInfo& info, const Solution& best) {
  switch (key) {
    case InfoKey::kRuntime: return py::float_(info.runtime);
    case InfoKey::kInitialRuntime: return py::float_(info.initial_runtime);
    case InfoKey::kSpeedup: return py::float_(info.speedup);
    case InfoKey::kLowerBound: return py::float_(info.lower_bound);
    case InfoKey::kPeakMemory: return py::array_t<double>(info.peak_memory.size(), info.peak_memory.data());
    case InfoKey::kBytesMoved: return py::float_(info.bytes_moved);
    case InfoKey::kOom: return py::bool_(info.oom);
    case InfoKey::kInvalid: return py::bool_(info.invalid);
    case InfoKey::kInvalidReason: return py::str(info.invalid_reason);
    case InfoKey::kColocationMoved: return py::int_(info.colocation_moved);
    case InfoKey::kRejectedRuntime: return py::float_(info.rejected_runtime);
    case InfoKey::kBestRuntime: return py::float_(info.best_runtime);
    case InfoKey::kBest: return solution_dict(env, best);
  }
  GOENV_FAIL(Error, "info key " << static_cast<int>(key) << " has no value");
}

// The keys of envs/spec.h: those present always, and the rejected decision's when there was one.
py::dict info_dict(const Env& env, const StepInfo& info, const Solution& best) {
  py::dict d;
  for (const InfoField& field : info_fields()) {
    if (field.presence == Presence::kRejected && std::isnan(info.rejected_runtime)) continue;  // StepInfo's "none"
    d[field.name] = info_value(field.key, env, info, best);
  }
  return d;
}

py::dict observation_dict(const Env& env, DynamicObservation&& dynamic) {
  auto shared = env.static_observation_ptr();
  const StaticObservation& s = *shared;
  py::capsule owner(new std::shared_ptr<const StaticObservation>(shared),
                    [](void* p) { delete static_cast<std::shared_ptr<const StaticObservation>*>(p); });
  const py::ssize_t n = s.num_nodes;
  py::dict obs;
  obs[observation_name(ObservationKey::kNodeFeatures)] = readonly_view(s.node_features, {n, s.node_feature_dim}, owner);
  obs[observation_name(ObservationKey::kEdgeIndex)] = readonly_view(s.edge_index, {2, s.num_edges}, owner);
  obs[observation_name(ObservationKey::kEdgeFeatures)] = readonly_view(s.edge_features, {s.num_edges, s.edge_feature_dim}, owner);
  const auto state_dim = static_cast<py::ssize_t>(dynamic.node_state.size()) / std::max<py::ssize_t>(n, 1);
  obs[observation_name(ObservationKey::kNodeState)] = to_numpy(std::move(dynamic.node_state), {n, state_dim});
  obs[observation_name(ObservationKey::kActionMask)] = to_numpy(std::move(dynamic.action_mask), {n, env.action_mask_width()});
  const auto g = static_cast<py::ssize_t>(dynamic.globals.size());
  obs[observation_name(ObservationKey::kGlobals)] = to_numpy(std::move(dynamic.globals), {g});
  if (env.observation_version() >= 2) {
    const auto d = static_cast<py::ssize_t>(env.cluster().num_devices());
    auto features = env.device_features_ptr();
    py::capsule features_owner(new std::shared_ptr<const std::vector<float>>(features), [](void* p) {
      delete static_cast<std::shared_ptr<const std::vector<float>>*>(p);
    });
    obs[observation_name(ObservationKey::kDeviceFeatures)] =
        readonly_view(*features, {d, static_cast<py::ssize_t>(features->size()) / std::max<py::ssize_t>(d, 1)},
                      features_owner);
    obs[observation_name(ObservationKey::kDeviceState)] = to_numpy(std::move(dynamic.device_state), {d, env.device_state_dim()});
  }
  return obs;
}

}  // namespace

void bind_envs(py::module_& m) {
  py::class_<Env>(m, "Env", "The C++ environment behind goenv's gymnasium wrapper.")
      .def("reset", [](Env& env, std::uint64_t seed, std::optional<py::dict> start) {
        StepInfo info;
        std::optional<Solution> from;
        if (start) from = solution_from(env, *start);
        Solution best;
        DynamicObservation obs = guarded(env.guard(), [&] {
          DynamicObservation o = env.reset(seed, &info, from ? &*from : nullptr);
          best = env.best();
          return o;
        });
        return py::make_tuple(observation_dict(env, std::move(obs)), info_dict(env, info, best));
      }, py::arg("seed") = 0, py::arg("start") = py::none(),
         "Starts an episode: from `start` ({head: values}) when given, else from the env's start.")
      .def("step", [](Env& env, py::handle action) {
        const auto parts = env_action(env, action);
        std::vector<const std::int64_t*> pointers;
        for (const auto& p : parts) pointers.push_back(p.data());
        Solution best;
        StepResult r = guarded(env.guard(), [&] {
          StepResult out = env.step(pointers);
          best = env.best();
          return out;
        });
        return py::make_tuple(observation_dict(env, std::move(r.observation)), r.reward, r.terminated,
                              r.truncated, info_dict(env, r.info, best));
      }, py::arg("action"))
      .def("get_state", [](const Env& env) { return py::bytes(guarded(env.guard(), [&] { return env.get_state(); })); },
           "The episode state as bytes (cereal); set_state() restores it exactly.")
      .def("set_state", [](Env& env, const py::bytes& state) {
        const std::string bytes = state;
        guarded(env.guard(), [&] { env.set_state(bytes); });
      }, py::arg("state"))
      .def_property_readonly("config", [](const Env& env) {
        return config_dict(env);
      }, "The options this env was made with (graph parameters included).")
      .def_property_readonly("task", &Env::task)
      .def_property_readonly("lower_bound", [](const Env& env) {
        const LowerBound& lb = env.bound();
        return py::dict(py::arg("value") = lb.value, py::arg("critical_path") = lb.critical_path,
                        py::arg("work") = lb.work);
      }, "Seconds no decision of this task can beat (with fusion where the task decides it).")
      .def_property_readonly("id", &Env::id)
      .def_property_readonly("heads", [](const Env& env) {
        std::vector<std::string> names;
        for (Head h : env.heads()) names.emplace_back(head_name(h));
        return names;
      })
      .def_property_readonly("head_choices", [](const Env& env) {
        std::vector<int> c;
        for (Head h : env.heads()) c.push_back(env.choices(h));
        return c;
      })
      .def_property_readonly("node_mode", &Env::node_mode)
      .def_property_readonly("horizon", [](const Env& env) { return env.config().horizon; })
      .def_property_readonly("num_nodes", [](const Env& env) { return env.graph().num_nodes(); })
      .def_property_readonly("num_edges", [](const Env& env) { return env.graph().num_edges(); })
      .def_property_readonly("num_devices", [](const Env& env) { return env.cluster().num_devices(); })
      .def_property_readonly("node_feature_dim", [](const Env& env) { return env.static_observation().node_feature_dim; })
      .def_property_readonly("edge_feature_dim", [](const Env& env) { return env.static_observation().edge_feature_dim; })
      .def_property_readonly("node_state_dim", &Env::node_state_dim)
      .def_property_readonly("observation_version", &Env::observation_version)
      .def_property_readonly("device_state_dim", &Env::device_state_dim)
      .def_property_readonly("device_feature_dim", [](const Env& env) {
        return env.observation_version() >= 2 ? static_cast<int>(device_feature_names().size()) : 0;
      })
      .def_property_readonly("start", [](const Env& env) {
        return solution_dict(env, guarded(env.guard(), [&] { return env.start(); }));
      }, "The decisions every reset starts from ({head: values}): the initial ones unless a start was set.")
      .def("set_start", [](Env& env, const py::dict& start, std::string name) {
        Solution s = solution_from(env, start);
        guarded(env.guard(), [&] { env.set_start(std::move(s), std::move(name)); });
      }, py::arg("start"), py::arg("name") = "",
         "Makes every later reset start from these decisions ({head: values}); checked. `name`: the "
         "start's name for config['start'] (a baseline's, 'default'), empty for decisions given as such.")
      .def_property_readonly("has_start", &Env::has_start,
                             "Whether a start was set (a named one or decisions): `start` is then where resets begin.")
      .def_property_readonly("global_dim", [](const Env&) { return global_names().size(); })
      .def_property_readonly("action_mask_width", &Env::action_mask_width)
      .def_property_readonly("graph", [](const Env& env) { return std::const_pointer_cast<Graph>(env.graph_ptr()); })
      .def_property_readonly("cluster", &Env::cluster)
      // The episode's state: copied under the env's guard (another thread may be stepping it).
      .def_property_readonly("initial_runtime", [](const Env& env) {
        return guarded(env.guard(), [&] { return env.initial_runtime(); });
      })
      .def_property_readonly("placement", [](const Env& env) {
        auto p = guarded(env.guard(), [&] { return env.placement(); });
        const auto n = static_cast<py::ssize_t>(p.size());
        return to_numpy(std::move(p), {n});
      })
      .def_property_readonly("priority", [](const Env& env) {
        auto p = guarded(env.guard(), [&] { return env.priority(); });
        const auto n = static_cast<py::ssize_t>(p.size());
        return to_numpy(std::move(p), {n});
      })
      .def_property_readonly("fusion", [](const Env& env) {
        auto f = guarded(env.guard(), [&] { return env.fusion(); });
        const auto n = static_cast<py::ssize_t>(f.size());
        return to_numpy(std::move(f), {n});
      })
      .def_property_readonly("started", &Env::started, "Whether reset() was called (step and render need it).")
      .def_property_readonly("last_result", [](const Env& env) {
        return guarded(env.guard(), [&] { return env.last_result(); });
      }, "The simulation of the current (last adopted) decisions.");

  m.def("make_env", [](const std::string& id, py::kwargs options) {
    const EnvConfig config = config_from(options);
    py::gil_scoped_release release;
    return make_env(id, config);
  }, py::arg("id"));
  m.def("make_env_on_graph", [](const std::string& task, std::shared_ptr<Graph> graph, const Cluster& cluster,
                                py::kwargs options) {
    const EnvConfig config = config_from(options);
    py::gil_scoped_release release;
    return make_env_on_graph(task, graph, cluster, config);
  }, py::arg("task"), py::arg("graph"), py::arg("cluster"));
  m.def("start_decisions", [](Env& env, const std::string& name) {
    Solution s = guarded(env.guard(), [&] { return start_decisions(env, name); });
    return solution_dict(env, s);
  }, py::arg("env"), py::arg("name"),
     "The decisions start `name` stands for on the env ('default' or a baseline's name), {head: values}.");
  m.def("list_env_ids", &list_env_ids);
  m.def("task_names", &task_names);
  m.def("option_fields", [] {  // envs/spec.h
    py::list fields;
    for (const OptionField& f : option_fields())
      fields.append(py::dict(py::arg("name") = f.name, py::arg("type") = option_type(f.kind), py::arg("doc") = f.doc));
    return fields;
  });
  m.def("observation_fields", [] {  // envs/spec.h: goenv/spaces.py builds the spaces from these, the docs a table
    py::list fields;
    for (const ObservationField& f : observation_fields()) {
      py::dict d;
      d["name"] = f.name;
      d["dtype"] = f.dtype;
      py::list dims;
      for (const char* dim : f.dims) dims.append(dim);
      d["dims"] = dims;
      d["per_env"] = f.per_env;
      d["static"] = f.is_static;
      d["range"] = range_name(f.range);
      d["since_version"] = f.since_version;
      d["columns"] = f.columns ? py::object(py::cast(f.columns())) : py::object(py::none());
      d["doc"] = f.doc;
      fields.append(d);
    }
    return fields;
  });
  m.def("info_fields", [] {  // envs/spec.h, for the Python side and the docs' reference table
    py::list fields;
    for (const InfoField& f : info_fields()) {
      py::dict d;
      d["name"] = f.name;
      d["type"] = f.type;
      d["present"] = presence_name(f.presence);
      d["doc"] = f.doc;
      d["vector"] = f.vector_shape ? py::object(py::str(f.vector_shape)) : py::object(py::none());
      d["vector_note"] = f.vector_note;
      fields.append(d);
    }
    return fields;
  });
}

}  // namespace goenv::bindings
