// goenv._agents: the thin pybind11 layer over agents/agent.h. It includes no
// torch header and does not link torch_python: observations come in and actions
// go out as numpy arrays; envs come as ids or as bytes (graph, cluster), never
// as goenv._core objects, so the two modules share no C++ class layout.
// Python imports torch before this module (goenv/agents), so the LibTorch it
// links is the one already mapped.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>

#include "agents/agent.h"
#include "bindings/env_options.h"
#include "bindings/guard.h"
#include "bindings/numpy_helpers.h"
#include "core/serialization.h"
#include "envs/registry.h"

namespace goenv::bindings {

namespace {

using agents::Agent;
using agents::AgentConfig;

// goenv._core's exception classes, looked up once (references kept for the process).
struct ErrorTypes {
  PyObject *error, *invalid_argument, *invalid_graph, *invalid_action, *reset_needed, *not_found;
};
const ErrorTypes& error_types() {
  static const ErrorTypes types = [] {
    py::module_ core = py::module_::import("goenv._core");
    auto get = [&](const char* name) { return py::object(core.attr(name)).release().ptr(); };
    return ErrorTypes{get("Error"), get("InvalidArgument"), get("InvalidGraph"),
                      get("InvalidAction"), get("ResetNeeded"), get("NotFound")};
  }();
  return types;
}

// An env argument, made here from plain data so that no C++ object crosses
// from goenv._core (the two modules never share a class layout): an env id, or
// a dict {task, graph: Graph.to_bytes(), cluster: cluster bytes, options}
// describing a GraphEnv (see goenv/agents/agent.py).
std::unique_ptr<Env> env_argument(py::handle value) {
  if (py::isinstance<py::str>(value)) {
    const std::string id = value.cast<std::string>();
    py::gil_scoped_release release;
    return make_env(id);
  }
  GOENV_CHECK(py::isinstance<py::dict>(value), InvalidArgument,
              "expected an env id or an env description, got "
                  << std::string(py::str(py::type::handle_of(value).attr("__name__"))));
  const py::dict d = py::reinterpret_borrow<py::dict>(value);
  for (const char* key : {"task", "graph", "cluster", "options"})
    GOENV_CHECK(d.contains(key), InvalidArgument, "env description has no '" << key << "' entry");
  const std::string task = d["task"].cast<std::string>();
  const std::string graph = d["graph"].cast<std::string>();
  const std::string cluster = d["cluster"].cast<std::string>();
  const EnvConfig config = config_from(d["options"].cast<py::dict>());
  GOENV_CHECK(config.graph_params.empty() && config.cluster.empty(), InvalidArgument,
              "env description: unknown option(s); the graph and cluster travel as bytes");
  std::unique_ptr<Env> env;
  {
    py::gil_scoped_release release;
    env = make_env_on_graph(task, graph_from_bytes(graph), cluster_from_bytes(cluster), config);
  }
  // A start of given decisions ({head: values}, checked as set_start checks them): what
  // the described env's resets begin from. A named start travels in the options too, and
  // keeps its name; given decisions have "default" there (envs.env_options).
  if (d.contains("start") && !d["start"].is_none()) {
    GOENV_CHECK(py::isinstance<py::dict>(d["start"]), InvalidArgument,
                "env description: 'start' must be {head: values}, got "
                    << std::string(py::str(py::type::handle_of(d["start"]).attr("__name__"))));
    Solution start = solution_from(*env, d["start"].cast<py::dict>());
    py::gil_scoped_release release;
    env->set_start(std::move(start), config.start == "default" ? std::string() : config.start);  // as envs.start_name
  }
  return env;
}

py::dict metrics_dict(const agents::UpdateMetrics& m) {
  py::dict d;
  d["step"] = m.step;
  d["update"] = m.update;
  d["mean_reward"] = m.mean_reward;
  d["mean_runtime"] = m.mean_runtime;
  d["best_runtime"] = m.best_runtime;
  d["mean_speedup"] = m.mean_speedup;
  d["best_speedup"] = m.best_speedup;
  d["invalid_fraction"] = m.invalid_fraction;
  d["policy_loss"] = m.policy_loss;
  d["value_loss"] = m.value_loss;
  d["entropy"] = m.entropy;
  d["approx_kl"] = m.approx_kl;
  d["clip_fraction"] = m.clip_fraction;
  d["teacher_loss"] = m.teacher_loss;
  d["teacher_coef"] = m.teacher_coef;
  d["entropy_coef"] = m.entropy_coef;
  d["seconds"] = m.seconds;
  return d;
}

py::dict imitation_dict(const agents::ImitationMetrics& m) {
  py::dict d;
  d["step"] = m.step;
  d["loss"] = m.loss;
  d["accuracy"] = m.accuracy;
  d["simulator_calls"] = m.simulator_calls;
  d["seconds"] = m.seconds;
  return d;
}

// A Python callable (or None) called with imitation_dict() after each step; False stops.
agents::Agent::ImitationCallback imitation_callback(const py::object& callback) {
  return [&callback](const agents::ImitationMetrics& metrics) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (callback.is_none()) return true;
    py::object result = callback(imitation_dict(metrics));
    return result.is_none() || result.cast<bool>();
  };
}

// Per-head (N,) decisions as {head name: int64 array}.
py::dict decisions_dict(const std::vector<Head>& heads, const std::vector<std::vector<std::int64_t>>& actions) {
  py::dict d;
  for (std::size_t h = 0; h < heads.size() && h < actions.size(); ++h)
    d[py::str(head_name(heads[h]))] = py::array_t<std::int64_t>(static_cast<py::ssize_t>(actions[h].size()),
                                                                 actions[h].data());
  return d;
}

py::object typed_value(char type, const std::string& text) {
  switch (type) {
    case 'i': return py::int_(std::stoll(text));
    case 'd': return py::float_(std::stod(text));
    case 'b': return py::bool_(text == "1");
    default: return py::str(text);
  }
}

py::dict config_dict(const AgentConfig& config) {
  const auto text = agents::config_to_text(config);
  py::dict d;
  for (const auto& f : agents::config_fields()) d[py::str(f.name)] = typed_value(f.type, text.at(f.name));
  return d;
}

AgentConfig agent_config_from(const py::dict& options) {
  AgentConfig config;
  const py::object numpy_bool = py::module_::import("numpy").attr("bool_");
  const py::object numpy_number = py::module_::import("numpy").attr("number");
  const py::object numpy_integer = py::module_::import("numpy").attr("integer");
  for (auto [key, value] : options) {
    const std::string name = py::str(key);
    char type = 0;  // an unknown name: set_config names the options
    for (const auto& f : agents::config_fields())
      if (f.name == name) type = f.type;
    if (py::isinstance<py::str>(value)) {  // a string option; a number's text is refused ("7" is not 7)
      GOENV_CHECK(type == 0 || type == 's', InvalidArgument,
                  "agent option '" << name << "' must be " << (type == 'b' ? "a bool" : "a number") << ", got str");
      agents::set_config(config, name, value.cast<std::string>());
      continue;
    }
    // By the option's type: a bool is no number (learning_rate=True) and a number no bool
    // (normalize_advantages=1), an integer option takes an integer (hidden=8.0 is refused, as
    // goenv.arguments does), and numpy scalars count as Python's (hidden=np.int64(16)).
    // Integers go through exactly: seed=2**53 + 1 is not seed=2**53.
    const bool is_bool = py::isinstance<py::bool_>(value) || py::isinstance(value, numpy_bool);
    const bool is_integer = !is_bool && (py::isinstance<py::int_>(value) || py::isinstance(value, numpy_integer));
    const bool is_number = !is_bool && (is_integer || py::isinstance<py::float_>(value) ||
                                        py::isinstance(value, numpy_number));
    const bool fits = type == 0 || (type == 'b' ? is_bool : type == 'i' ? is_integer : type == 'd' && is_number);
    GOENV_CHECK(fits, InvalidArgument,
                "agent option '" << name << "' must be "
                                 << (type == 'b' ? "a bool" : type == 's' ? "a string" : type == 'i' ? "an integer" : "a number")
                                 << ", got " << std::string(py::str(py::type::handle_of(value).attr("__name__"))));
    if (type == 'i' || type == 'b') {
      const py::int_ whole = py::reinterpret_steal<py::int_>(PyNumber_Index(value.ptr()));
      if (!whole) throw py::error_already_set();
      std::int64_t exact = 0;
      try {
        exact = whole.cast<std::int64_t>();
      } catch (const py::cast_error&) {
        throw InvalidArgument("agent option '" + name + "' is out of range: " + std::string(py::str(whole)));
      }
      agents::set_config(config, name, exact);
      continue;
    }
    const double number = is_number ? py::reinterpret_steal<py::float_>(PyNumber_Float(value.ptr())).cast<double>() : 0.0;
    agents::set_config(config, name, number);
  }
  agents::validate(config);
  return config;
}

template <typename T>
py::array_t<T, py::array::c_style | py::array::forcecast> column(const py::dict& obs, const char* key) {
  GOENV_CHECK(obs.contains(key), InvalidArgument, "observation has no '" << key << "' entry");
  auto a = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(obs[key]);
  GOENV_CHECK(a, InvalidArgument, "observation['" << key << "'] must be a numeric array");
  return a;
}

std::string shape_of(const py::array& a) { return py::str(py::getattr(a, "shape")); }

// A static entry may carry a batch axis (vector envs); every item must then be the same graph.
template <typename T>
const T* shared_static(const py::array_t<T, py::array::c_style | py::array::forcecast>& a, int batched_ndim,
                       std::int64_t batch, const char* key) {
  if (a.ndim() < batched_ndim) return a.data();
  GOENV_CHECK(a.shape(0) == batch, InvalidArgument,
              "observation['" << key << "'] has batch size " << a.shape(0) << ", node_state has " << batch);
  const std::size_t item = static_cast<std::size_t>(a.size() / std::max<py::ssize_t>(1, a.shape(0))) * sizeof(T);
  const auto* bytes = reinterpret_cast<const char*>(a.data());
  for (std::int64_t i = 1; i < batch; ++i)
    GOENV_CHECK(std::memcmp(bytes, bytes + i * item, item) == 0, InvalidArgument,
                "batched observations must all be of one graph: observation['" << key << "'][" << i
                                                                            << "] differs from item 0");
  return a.data();
}

py::dict act(Agent& agent, const py::dict& obs, bool deterministic, py::handle colocation) {
  const auto state = column<float>(obs, "node_state");
  const auto mask = column<std::int8_t>(obs, "action_mask");
  const auto globals = column<float>(obs, "globals");
  const auto features = column<float>(obs, "node_features");
  GOENV_CHECK(obs.contains("edge_index"), InvalidArgument, "observation has no 'edge_index' entry");
  // Node ids: a fraction is refused, not truncated (as env.step refuses a fractional action).
  const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast> edges =
      integer_values(obs["edge_index"], "observation['edge_index']");
  GOENV_CHECK(state.ndim() == 2 || state.ndim() == 3, InvalidArgument,
              "observation['node_state'] must have shape (N, S) or (B, N, S), got " << shape_of(state));
  const bool batched = state.ndim() == 3;
  agents::ObservationBatch o;
  o.batch = batched ? static_cast<int>(state.shape(0)) : 1;
  o.num_nodes = static_cast<int>(state.shape(batched ? 1 : 0));
  o.node_state_dim = static_cast<int>(state.shape(batched ? 2 : 1));
  const int d = batched ? 1 : 0;
  GOENV_CHECK(mask.ndim() == 2 + d && mask.shape(d) == o.num_nodes && (!batched || mask.shape(0) == o.batch),
              InvalidArgument,
              "observation['action_mask'] must have shape " << (batched ? "(B, N, A)" : "(N, A)") << " with N="
                                                            << o.num_nodes << ", got " << shape_of(mask));
  GOENV_CHECK(globals.ndim() == 1 + d && (!batched || globals.shape(0) == o.batch), InvalidArgument,
              "observation['globals'] must have shape " << (batched ? "(B, G)" : "(G,)") << ", got " << shape_of(globals));
  GOENV_CHECK((features.ndim() == 2 || (batched && features.ndim() == 3)) &&
                  features.shape(features.ndim() - 2) == o.num_nodes,
              InvalidArgument, "observation['node_features'] must have shape (N, F) with N=" << o.num_nodes << ", got "
                                                                                            << shape_of(features));
  GOENV_CHECK((edges.ndim() == 2 || (batched && edges.ndim() == 3)) && edges.shape(edges.ndim() - 2) == 2,
              InvalidArgument, "observation['edge_index'] must have shape (2, E), got " << shape_of(edges));
  o.action_mask_width = static_cast<int>(mask.shape(1 + d));
  o.global_dim = static_cast<int>(globals.shape(d));
  o.node_feature_dim = static_cast<int>(features.shape(features.ndim() - 1));
  o.num_edges = static_cast<int>(edges.shape(edges.ndim() - 1));
  o.node_features = shared_static(features, 3, o.batch, "node_features");
  o.edge_index = shared_static(edges, 3, o.batch, "edge_index");
  o.node_state = state.data();
  o.action_mask = mask.data();
  o.globals = globals.data();
  py::array_t<float, py::array::c_style | py::array::forcecast> devices;
  if (obs.contains("device_features")) {  // observation version 2: (D, Fd), or (B, D, Fd) broadcast
    devices = column<float>(obs, "device_features");
    GOENV_CHECK(devices.ndim() == 2 || (batched && devices.ndim() == 3), InvalidArgument,
                "observation['device_features'] must have shape (D, Fd), got " << shape_of(devices));
    o.num_devices = static_cast<int>(devices.shape(devices.ndim() - 2));
    o.device_feature_dim = static_cast<int>(devices.shape(devices.ndim() - 1));
    o.device_features = shared_static(devices, 3, o.batch, "device_features");
  }
  std::vector<std::int32_t> groups;
  if (!colocation.is_none()) {
    for (const std::int64_t c : integer_array(colocation, o.num_nodes, "colocation"))
      groups.push_back(c < 0 ? -1 : static_cast<std::int32_t>(std::min<std::int64_t>(c, INT32_MAX)));
    o.colocation = groups.data();
  }
  std::vector<Head> heads;  // read under the guard: a load on another thread may replace the spec
  auto actions = guarded(agent.guard(), [&] {
    heads = agent.spec().heads;
    return agent.act(o, deterministic);
  });
  py::dict out;
  std::vector<py::ssize_t> shape = batched ? std::vector<py::ssize_t>{o.batch, o.num_nodes}
                                           : std::vector<py::ssize_t>{o.num_nodes};
  for (std::size_t h = 0; h < actions.size(); ++h) out[head_name(heads[h])] = to_numpy(std::move(actions[h]), shape);
  return out;
}

// A rollout as a dict of numpy arrays that own the C++ vectors (no copy);
// rollout_from is its inverse (one copy into C++ vectors).
py::dict rollout_dict(agents::Rollout&& r, const agents::PolicySpec& spec) {
  const py::ssize_t m = r.samples(), o = r.num_observations, n = r.num_nodes;
  py::dict d;
  d["env_id"] = r.env_id;
  d["graph"] = r.graph;
  d["policy_version"] = r.policy_version;
  d["copies"] = r.copies;
  d["steps"] = r.steps;
  d["initial_runtime"] = r.initial_runtime;
  d["best_runtime"] = r.best_runtime;
  d["node_state"] = to_numpy(std::move(r.node_state), {o, n, r.node_state_dim});
  d["action_mask"] = to_numpy(std::move(r.action_mask), {o, n, r.action_mask_width});
  d["globals"] = to_numpy(std::move(r.globals), {o, r.global_dim});
  d["observation"] = to_numpy(std::move(r.observation), {m});
  py::dict actions;
  for (std::size_t h = 0; h < r.actions.size(); ++h) {
    const py::ssize_t width = m > 0 ? static_cast<py::ssize_t>(r.actions[h].size()) / m : 0;
    actions[head_name(spec.heads[h])] = to_numpy(std::move(r.actions[h]), {m, width});
  }
  d["actions"] = actions;
  d["log_prob"] = to_numpy(std::move(r.log_prob), {m});
  d["value"] = to_numpy(std::move(r.value), {m});
  d["reward"] = to_numpy(std::move(r.reward), {m});
  d["done"] = to_numpy(std::move(r.done), {m}).attr("view")("bool");
  d["invalid"] = to_numpy(std::move(r.invalid), {m}).attr("view")("bool");
  d["runtime"] = to_numpy(std::move(r.runtime), {m});
  d["speedup"] = to_numpy(std::move(r.speedup), {m});
  d["bootstrap"] = to_numpy(std::move(r.bootstrap), {static_cast<py::ssize_t>(r.copies)});
  return d;
}

template <typename T>
std::vector<T> rollout_array(const py::dict& d, const char* key, int ndim, std::vector<py::ssize_t>* shape = nullptr) {
  GOENV_CHECK(d.contains(key), InvalidArgument, "rollout has no '" << key << "' entry");
  py::array a = py::array::ensure(d[key]);
  GOENV_CHECK(a && a.ndim() == ndim, InvalidArgument,
              "rollout['" << key << "'] must be a " << ndim << "-d array");
  if (std::is_same_v<T, std::uint8_t> && a.dtype().kind() == 'b') a = a.attr("view")("uint8");
  auto typed = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(a);
  GOENV_CHECK(typed, InvalidArgument, "rollout['" << key << "'] has the wrong dtype");
  if (shape != nullptr) shape->assign(typed.shape(), typed.shape() + typed.ndim());
  return std::vector<T>(typed.data(), typed.data() + typed.size());
}

agents::Rollout rollout_from(py::handle value, const agents::PolicySpec& spec) {
  GOENV_CHECK(py::isinstance<py::dict>(value), InvalidArgument, "a rollout must be a dict (from Agent.collect)");
  const py::dict d = py::reinterpret_borrow<py::dict>(value);
  for (const char* key : {"env_id", "graph", "policy_version", "copies", "steps", "initial_runtime", "best_runtime", "actions"})
    GOENV_CHECK(d.contains(key), InvalidArgument, "rollout has no '" << key << "' entry");
  agents::Rollout r;
  r.env_id = d["env_id"].cast<std::string>();
  r.graph = d["graph"].cast<int>();
  r.policy_version = d["policy_version"].cast<std::int64_t>();
  r.copies = d["copies"].cast<int>();
  r.steps = d["steps"].cast<int>();
  r.initial_runtime = d["initial_runtime"].cast<double>();
  r.best_runtime = d["best_runtime"].cast<double>();
  std::vector<py::ssize_t> shape;
  r.node_state = rollout_array<float>(d, "node_state", 3, &shape);
  r.num_observations = static_cast<int>(shape[0]);
  r.num_nodes = static_cast<int>(shape[1]);
  r.node_state_dim = static_cast<int>(shape[2]);
  r.action_mask = rollout_array<std::int8_t>(d, "action_mask", 3, &shape);
  r.action_mask_width = static_cast<int>(shape[2]);
  r.globals = rollout_array<float>(d, "globals", 2, &shape);
  r.global_dim = static_cast<int>(shape[1]);
  r.observation = rollout_array<std::int32_t>(d, "observation", 1);
  const py::dict actions = d["actions"].cast<py::dict>();
  for (Head h : spec.heads) {
    const char* name = head_name(h);
    GOENV_CHECK(actions.contains(name), InvalidArgument, "rollout['actions'] has no '" << name << "' head");
    r.actions.push_back(rollout_array<std::int64_t>(actions, name, 2));
  }
  r.log_prob = rollout_array<double>(d, "log_prob", 1);
  r.value = rollout_array<float>(d, "value", 1);
  r.reward = rollout_array<float>(d, "reward", 1);
  r.done = rollout_array<std::uint8_t>(d, "done", 1);
  r.invalid = rollout_array<std::uint8_t>(d, "invalid", 1);
  r.runtime = rollout_array<double>(d, "runtime", 1);
  r.speedup = rollout_array<double>(d, "speedup", 1);
  r.bootstrap = rollout_array<float>(d, "bootstrap", 1);
  return r;
}

std::vector<std::unique_ptr<Env>> env_arguments(const py::list& envs, std::vector<const Env*>& pointers) {
  std::vector<std::unique_ptr<Env>> owned;
  for (py::handle e : envs) {
    owned.push_back(env_argument(e));
    pointers.push_back(owned.back().get());
  }
  return owned;
}

}  // namespace

}  // namespace goenv::bindings

PYBIND11_MODULE(_agents, m) {
  using namespace goenv;
  using namespace goenv::bindings;
  m.doc() = "goenv reference agents (LibTorch): PPO and the GO policy; use goenv.agents, not this module";
  error_types();  // imports goenv._core for its exception classes
  py::register_local_exception_translator([](std::exception_ptr p) {
    const ErrorTypes& t = error_types();
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InvalidGraph& e) {
      PyErr_SetString(t.invalid_graph, e.what());
    } catch (const InvalidAction& e) {
      PyErr_SetString(t.invalid_action, e.what());
    } catch (const InvalidArgument& e) {
      PyErr_SetString(t.invalid_argument, e.what());
    } catch (const ResetNeeded& e) {
      PyErr_SetString(t.reset_needed, e.what());
    } catch (const NotFound& e) {
      PyErr_SetString(t.not_found, e.what());
    } catch (const Error& e) {
      PyErr_SetString(t.error, e.what());
    }
  });

  py::class_<agents::Agent>(m, "Agent", "A PPO-trained policy (algorithm 'ppo' or 'go') over goenv envs.")
      .def(py::init([](const py::dict& options) { return agents::Agent(agent_config_from(options)); }),
           py::arg("options") = py::dict())
      .def_property_readonly("config", [](const agents::Agent& a) {
        return config_dict(guarded(a.guard(), [&] { return a.config(); }));
      })
      .def_property_readonly("has_policy", [](const agents::Agent& a) { return guarded(a.guard(), [&] { return a.has_policy(); }); })
      .def_property_readonly("spec", [](const agents::Agent& a) -> py::object {
        std::optional<agents::PolicySpec> spec;
        guarded(a.guard(), [&] {
          if (a.has_policy()) spec = a.spec();
        });
        if (!spec) return py::none();
        const auto& s = *spec;
        py::dict d;
        d["node_feature_dim"] = s.node_feature_dim;
        d["node_state_dim"] = s.node_state_dim;
        d["global_dim"] = s.global_dim;
        py::list heads;
        for (Head h : s.heads) heads.append(head_name(h));
        d["heads"] = heads;
        d["choices"] = s.choices;  // 0 (kAnyDevices): the graph's device count
        d["any_devices"] = s.any_devices();
        return d;
      })
      .def_property_readonly("num_parameters", [](const agents::Agent& a) {
        return guarded(a.guard(), [&] { return a.num_parameters(); });
      })
      .def_property_readonly("steps_trained", [](const agents::Agent& a) {
        return guarded(a.guard(), [&] { return a.steps_trained(); });
      })
      .def_property_readonly("device", [](const agents::Agent& a) { return guarded(a.guard(), [&] { return a.device(); }); })
      .def("setup", [](agents::Agent& a, py::handle env) {
        std::unique_ptr<Env> e = env_argument(env);
        guarded(a.guard(), [&] { a.setup(agents::PolicySpec::of(*e, a.config())); });
      }, py::arg("env"), "Builds the policy for this env's features and heads.")
      .def("train", [](agents::Agent& a, const py::list& envs, std::int64_t total_steps, py::object callback) {
        std::vector<const Env*> pointers;
        auto owned = env_arguments(envs, pointers);
        agents::Agent::Callback on_update = [&callback](const agents::UpdateMetrics& metrics) {
          py::gil_scoped_acquire gil;
          if (PyErr_CheckSignals() != 0) throw py::error_already_set();  // Ctrl-C stops training
          if (callback.is_none()) return true;
          py::object result = callback(metrics_dict(metrics));
          return result.is_none() || result.cast<bool>();
        };
        guarded(a.guard(), [&] { a.train(pointers, total_steps, on_update); });
      }, py::arg("envs"), py::arg("total_steps"), py::arg("callback") = py::none())
      .def("imitate", [](agents::Agent& a, const py::list& envs, std::int64_t steps, const std::string& teacher,
                         py::object callback) {
        std::vector<const Env*> pointers;
        auto owned = env_arguments(envs, pointers);
        const agents::Agent::ImitationCallback on_step = imitation_callback(callback);
        return imitation_dict(guarded(a.guard(), [&] { return a.imitate(pointers, steps, teacher, on_step); }));
      }, py::arg("envs"), py::arg("steps"), py::arg("teacher") = "", py::arg("callback") = py::none())
      .def("learn_moves", [](agents::Agent& a, const py::list& envs, std::int64_t steps, std::int64_t states,
                             double temperature, py::object callback) {
        std::vector<const Env*> pointers;
        auto owned = env_arguments(envs, pointers);
        const agents::Agent::ImitationCallback on_step = imitation_callback(callback);
        return imitation_dict(guarded(a.guard(), [&] {
          return a.learn_moves(pointers, steps, states, temperature, on_step);
        }));
      }, py::arg("envs"), py::arg("steps"), py::arg("states"), py::arg("temperature"), py::arg("callback"))
      .def("teacher", [](const agents::Agent& a, py::handle env) -> py::object {
        std::unique_ptr<Env> e = env_argument(env);
        std::optional<agents::Teacher> kept;  // a copy: a later load may drop the agent's own
        guarded(a.guard(), [&] {
          if (const agents::Teacher* found = a.teacher(*e)) kept = *found;
        });
        if (!kept) return py::none();
        const agents::Teacher* t = &*kept;
        py::dict d;
        d["method"] = t->method;
        d["runtime"] = t->runtime;
        d["reward"] = t->reward;
        d["simulator_calls"] = t->simulator_calls;
        d["decisions"] = decisions_dict(e->heads(), t->actions);
        return d;
      }, py::arg("env"))
      .def("optimize", [](agents::Agent& a, py::handle env, std::int64_t budget, const std::string& start,
                          std::int64_t local_search_budget, std::int64_t seed, std::int64_t start_budget,
                          const std::string& proposals) {
        const agents::Proposals reading = agents::proposals_named(proposals);  // refused before the env is read
        std::unique_ptr<Env> e = env_argument(env);
        agents::OptimizeResult r = guarded(a.guard(), [&] {
          return a.optimize(*e, budget, start, local_search_budget, seed, start_budget, reading);
        });
        py::dict d;
        d["env_id"] = r.env_id;
        d["decisions"] = decisions_dict(e->heads(), r.actions);
        d["runtime"] = r.runtime;
        d["greedy_runtime"] = r.greedy_runtime;
        d["initial_runtime"] = r.initial_runtime;
        d["start"] = r.start;
        d["start_runtime"] = r.start_runtime;
        d["start_calls"] = r.start_calls;
        d["source"] = r.source;
        d["simulator_calls"] = r.simulator_calls;
        d["policy_reads"] = r.policy_reads;
        d["proposals"] = r.proposals;
        const auto k = static_cast<py::ssize_t>(r.curve.size());
        d["curve"] = to_numpy(std::move(r.curve), {k});
        return d;
      }, py::arg("env"), py::arg("budget") = 16, py::arg("start") = "", py::arg("local_search_budget") = 0,
         py::arg("seed") = -1, py::arg("start_budget") = kStartBudget, py::arg("proposals") = "learned")
      .def("set_envs", [](agents::Agent& a, const py::list& envs, const std::vector<int>& sampled, std::uint64_t stream) {
        std::vector<const Env*> pointers;
        auto owned = env_arguments(envs, pointers);
        guarded(a.guard(), [&] { a.set_envs(pointers, sampled, stream); });
      }, py::arg("envs"), py::arg("sampled"), py::arg("stream") = 0)
      .def("collect", [](agents::Agent& a) {
        std::optional<agents::PolicySpec> spec;
        std::vector<agents::Rollout> rollouts = guarded(a.guard(), [&] {
          auto collected = a.collect();
          spec = a.spec();
          return collected;
        });
        py::list out;
        for (auto& r : rollouts) out.append(rollout_dict(std::move(r), *spec));
        return out;
      })
      .def("update", [](agents::Agent& a, const py::list& rollouts) {
        std::optional<agents::PolicySpec> spec;
        guarded(a.guard(), [&] {
          if (a.has_policy()) spec = a.spec();
        });
        GOENV_CHECK(spec, InvalidArgument, "update needs a policy: call set_envs first");
        std::vector<agents::Rollout> native;
        for (py::handle r : rollouts) native.push_back(rollout_from(r, *spec));
        return metrics_dict(guarded(a.guard(), [&] { return a.update(native); }));
      }, py::arg("rollouts"))
      .def_property_readonly("weights", [](const agents::Agent& self) {
        auto& a = const_cast<agents::Agent&>(self);
        std::int64_t count = 0;
        std::shared_ptr<const float> data = guarded(a.guard(), [&] {
          count = a.num_parameters();
          return a.weights();
        });
        // The array owns its storage (a load replaces the agent's: the array then keeps the old values).
        const float* values = data.get();
        py::capsule owner(new std::shared_ptr<const float>(std::move(data)),
                          [](void* p) { delete static_cast<std::shared_ptr<const float>*>(p); });
        return readonly_view(values, {static_cast<py::ssize_t>(count)}, owner);
      })
      .def_property_readonly("weights_version", [](const agents::Agent& a) {
        return guarded(a.guard(), [&] { return a.weights_version(); });
      })
      .def("set_weights", [](agents::Agent& a, py::handle weights, std::int64_t version) {
        auto w = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(weights);
        GOENV_CHECK(w && w.ndim() == 1, InvalidArgument, "weights must be a 1-d float32 array");
        const float* data = w.data();
        const auto size = static_cast<std::int64_t>(w.size());
        guarded(a.guard(), [&] { a.set_weights(data, size, version); });
      }, py::arg("weights"), py::arg("version"))
      .def("act", &act, py::arg("observation"), py::arg("deterministic") = false,
           py::arg("colocation") = py::none(),
           "Actions for an observation dict (or a batch of one graph's): {head: (N,) or (B, N) int64}; "
           "colocation (N,) group ids (negative = none) keeps each group on one device.")
      .def("evaluate", [](agents::Agent& a, py::handle env, int episodes, bool deterministic) {
        std::unique_ptr<Env> e = env_argument(env);
        agents::EvaluationResult r = guarded(a.guard(), [&] { return a.evaluate(*e, episodes, deterministic); });
        py::dict d;
        d["env_id"] = r.env_id;
        d["episodes"] = r.episodes;
        d["runtime"] = r.runtime;
        d["initial_runtime"] = r.initial_runtime;
        d["speedup"] = r.speedup;
        d["best_runtime"] = r.best_runtime;
        d["lower_bound"] = r.lower_bound;
        d["invalid_fraction"] = r.invalid_fraction;
        return d;
      }, py::arg("env"), py::arg("episodes") = 1, py::arg("deterministic") = true)
      .def("to_bytes", [](const agents::Agent& a) {
        return py::bytes(guarded(a.guard(), [&] { return a.to_bytes(); }));
      })
      .def("from_bytes", [](agents::Agent& a, const py::bytes& data, const std::string& device) {
        std::string bytes = data;
        guarded(a.guard(), [&] { a.from_bytes(bytes, device); });
      }, py::arg("data"), py::arg("device") = "");

  m.def("config_fields", [] {
    const auto defaults = agents::config_to_text(agents::AgentConfig{});
    py::list out;
    for (const auto& f : agents::config_fields())
      out.append(py::make_tuple(f.name, std::string(1, f.type), typed_value(f.type, defaults.at(f.name)), f.help));
    return out;
  }, "(name, type, default, help) of every agent option.");
  m.def("checkpoint_algorithm", [](const py::bytes& data) { return agents::checkpoint_algorithm(std::string(data)); },
        py::arg("data"), "The algorithm a checkpoint holds; goenv.InvalidArgument when it is not one.");
  m.def("checkpoint_from_arrays", [](const std::map<std::string, std::string>& metadata, const py::dict& arrays) {
    std::vector<py::array> kept;  // alive until written
    std::vector<agents::NamedArray> views;
    for (const auto& [key, value] : arrays) {
      py::array a = py::array::ensure(value, py::array::c_style);
      GOENV_CHECK(a, InvalidArgument, "checkpoint array '" << std::string(py::str(key)) << "' is not an array");
      const std::string kind = py::str(a.dtype().attr("str"));
      const std::string dtype = kind == "<f4" ? "F32" : kind == "<i8" ? "I64" : kind == "|u1" ? "U8" : kind;
      std::vector<std::int64_t> shape(a.shape(), a.shape() + a.ndim());
      views.push_back({py::str(key), dtype, shape, a.data(), static_cast<std::size_t>(a.nbytes())});
      kept.push_back(std::move(a));
    }
    std::string bytes;
    {
      py::gil_scoped_release release;
      bytes = agents::checkpoint_from_arrays(metadata, views);
    }
    return py::bytes(bytes);
  }, py::arg("metadata"), py::arg("arrays"),
        "A checkpoint in the current format from metadata strings and {name: float32/int64/uint8 array}; "
        "checked by loading it (goenv.InvalidArgument names what does not fit).");
}
