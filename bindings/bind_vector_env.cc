// The C++ VectorEnv in Python (EnvPool-style): batched numpy arrays, the GIL
// released while the envs step, shapes and dtypes checked here before any
// worker thread runs.
//
// Each step writes straight into its result arrays. With copy=True (default)
// those are fresh numpy arrays every step, so observations a caller keeps are
// never overwritten (Gymnasium's expectation); with copy=False they are views of
// buffers the engine reuses, valid until the next step or reset. The static
// observation parts are read-only views built once (the same graph: one copy
// broadcast over the batch with stride 0).
#include <pybind11/stl.h>

#include <chrono>

#include "bindings/actions.h"
#include "bindings/batch_arrays.h"
#include "bindings/env_options.h"
#include "bindings/guard.h"
#include "bindings/numpy_helpers.h"
#include "envs/spec.h"
#include "envs/start.h"
#include "envs/vector_env.h"

namespace goenv::bindings {

namespace {

using Engine = std::shared_ptr<VectorEnv>;

class PyVectorEnv {
 public:
  PyVectorEnv(const std::vector<const Env*>& templates, py::handle num_threads_value, py::object pad_to,
              int max_episode_steps, bool copy)
      : copy_(copy) {
    const int num_threads = checked_num_threads(int_option(num_threads_value, "num_threads"));
    GOENV_CHECK(!templates.empty(), InvalidArgument, "a vector env needs at least one env");
    bool same_graph = true;
    for (const Env* t : templates) same_graph = same_graph && t->graph_ptr() == templates.front()->graph_ptr();
    BatchLayout layout = same_graph ? BatchLayout::kStacked : BatchLayout::kConcatenated;
    int pad_nodes = 0, pad_edges = 0;
    if (!pad_to.is_none()) {
      GOENV_CHECK(py::isinstance<py::sequence>(pad_to) && py::len(pad_to) == 2, InvalidArgument,
                  "pad_to must be (max_nodes, max_edges), got " << std::string(py::repr(pad_to)));
      auto seq = py::reinterpret_borrow<py::sequence>(pad_to);
      pad_nodes = seq[0].cast<int>();
      pad_edges = seq[1].cast<int>();
      layout = BatchLayout::kPadded;
    }
    {
      py::gil_scoped_release release;
      engine_ = VectorEnv::from_templates(templates, layout, num_threads, pad_nodes, pad_edges, max_episode_steps);
    }
    build_static_views();
    py::array_t<bool> ones(engine_->num_envs());
    std::fill(ones.mutable_data(), ones.mutable_data() + engine_->num_envs(), true);
    ones.attr("setflags")(py::arg("write") = false);
    all_true_ = ones;
  }

  VectorEnv& engine() { return *engine_; }
  bool copy() const { return copy_; }
  void set_copy(bool copy) { copy_ = copy; }

  // start: None; a start's name ("heft", "best-heuristic", ...); {head: values} for every env;
  // or a list with one per env of those, or None (that env's own start).
  py::tuple reset(py::handle seeds, py::handle mask, py::handle start) {
    const int b = engine_->num_envs();
    std::vector<std::uint64_t> seed_values(b, 0);
    if (!seeds.is_none()) {
      auto s = py::array_t<std::uint64_t, py::array::c_style | py::array::forcecast>::ensure(seeds);
      GOENV_CHECK(s && s.ndim() == 1 && s.shape(0) == b, InvalidArgument,
                  "seeds must have shape (" << b << ",) [num_envs]");
      std::copy(s.data(), s.data() + b, seed_values.begin());
    }
    py::array_t<std::uint8_t> mask_bytes;
    if (!mask.is_none()) {
      py::array m = py::array::ensure(mask);
      GOENV_CHECK(m && m.dtype().kind() == 'b' && m.ndim() == 1 && m.shape(0) == b, InvalidArgument,
                  "reset_mask must be a bool array of shape (" << b << ",) [num_envs]");
      mask_bytes = py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>::ensure(m);
    }
    std::vector<py::object> per_env;  // each env's start (None: its own)
    if (!start.is_none()) {
      const bool one_for_all = py::isinstance<py::str>(start) || py::isinstance<py::dict>(start);
      GOENV_CHECK(one_for_all || py::isinstance<py::list>(start) || py::isinstance<py::tuple>(start), InvalidArgument,
                  "options['start'] must be a start's name, {head: values}, or a list of those (or None) with one "
                  "per env, got " << std::string(py::str(py::type::handle_of(start).attr("__name__"))));
      if (one_for_all) {
        per_env.assign(b, py::reinterpret_borrow<py::object>(start));
      } else {
        for (py::handle item : start) per_env.push_back(py::reinterpret_borrow<py::object>(item));
        GOENV_CHECK(static_cast<int>(per_env.size()) == b, InvalidArgument,
                    "options['start'] has " << per_env.size() << " entries; the vector env has num_envs=" << b);
      }
    }
    // Given decisions are converted here (the GIL held; a graph never changes); names become
    // decisions under the guard, as they may run the heuristics on the env.
    std::vector<Solution> starts(per_env.size());
    std::vector<std::string> names(per_env.size());
    for (std::size_t i = 0; i < per_env.size(); ++i) {
      const py::object& s = per_env[i];
      if (py::isinstance<py::str>(s)) {
        names[i] = s.cast<std::string>();
        GOENV_CHECK(!names[i].empty(), InvalidArgument, "options['start'][" << i << "]: an empty name");
      } else if (py::isinstance<py::dict>(s)) {
        starts[i] = solution_from(engine_->env(static_cast<int>(i)), s.cast<py::dict>());
      } else {
        GOENV_CHECK(s.is_none(), InvalidArgument,
                    "options['start'][" << i << "] must be a start's name, {head: values} or None");
      }
    }
    Outputs out = outputs(false);
    std::vector<double> bounds;
    InfoExtras extras;
    guarded(engine_->guard(), [&] {
      for (std::size_t i = 0; i < names.size(); ++i)
        if (!names[i].empty()) starts[i] = start_decisions(engine_->env(static_cast<int>(i)), names[i]);
      engine_->reset(seed_values.data(), mask.is_none() ? nullptr : mask_bytes.data(), out.buffers,
                     per_env.empty() ? nullptr : &starts);
      bounds = lower_bounds();
      extras = info_extras();
    });
    set_lower_bounds(std::move(bounds));
    return py::make_tuple(observation(out), info(out, extras));
  }

  py::tuple step(py::handle actions) {
    const auto& heads = engine_->env(0).heads();
    std::array<py::array, 3> held;  // keeps converted arrays alive
    std::array<const std::int64_t*, 3> pointers{};
    ActionLayout layout;
    batch_action(*engine_, actions, held, layout);
    for (std::size_t h = 0; h < heads.size(); ++h)
      pointers[h] = static_cast<const std::int64_t*>(held[h].data());
    Outputs out = outputs(true);
    const bool need_bounds = !lower_bound_;  // a batch restored by set_state, never reset here
    std::vector<double> bounds;
    InfoExtras extras;
    guarded(engine_->guard(), [&] {
      engine_->step(pointers.data(), layout, out.buffers);
      if (need_bounds) bounds = lower_bounds();
      extras = info_extras();
    });
    if (need_bounds) set_lower_bounds(std::move(bounds));
    return py::make_tuple(observation(out), out.reward, out.terminated, out.truncated, info(out, extras));
  }

  py::dict static_observation() const { return static_obs_; }

  // Calls that read or change the episodes hold the engine's guard (bindings/guard.h).
  template <typename F>
  auto locked(F&& body) -> decltype(body()) {
    return guarded(engine_->guard(), std::forward<F>(body));
  }

 private:
  // Per-env info the engine's buffers do not carry.
  struct InfoExtras {
    std::vector<double> bytes_moved;
    std::vector<std::string> invalid_reason;
  };

  // Result arrays (null objects where a call has none) and their data pointers.
  struct Outputs {
    BatchBuffers buffers;
    py::object node_state, action_mask, globals, reward, terminated, truncated, runtime, initial_runtime, speedup,
        peak_memory, oom, invalid, rejected_runtime, colocation_moved, device_state, best_runtime;
  };

  // Fresh arrays (copy=True) or views of the engine's reused buffers.
  Outputs outputs(bool with_step_results) {
    const VectorEnv& e = *engine_;
    const py::ssize_t b = e.num_envs(), d = e.num_devices(), g = e.global_dim();
    Outputs o;
    if (copy_) {
      const bool concatenated = e.layout() == BatchLayout::kConcatenated;
      const py::ssize_t rows = e.node_rows(), p = e.max_nodes();
      const py::ssize_t s = e.node_state_dim(), a = e.action_mask_width();
      o.node_state = concatenated ? new_array(kFloat32, {rows, s}) : new_array(kFloat32, {b, p, s});
      o.action_mask = concatenated ? new_array(kInt8, {rows, a}) : new_array(kInt8, {b, p, a});
      o.globals = new_array(kFloat32, {b, g});
      if (with_step_results) {
        o.reward = new_array(kFloat64, {b});
        o.terminated = new_array(kBool, {b});
        o.truncated = new_array(kBool, {b});
      }
      o.runtime = new_array(kFloat64, {b});
      o.initial_runtime = new_array(kFloat64, {b});
      o.speedup = new_array(kFloat64, {b});
      o.peak_memory = new_array(kFloat64, {b, d});
      o.oom = new_array(kBool, {b});
      o.invalid = new_array(kBool, {b});
      o.rejected_runtime = new_array(kFloat64, {b});
      o.colocation_moved = new_array(kInt64, {b});
      if (e.device_state_dim() > 0) o.device_state = new_array(kFloat32, {b, d, e.device_state_dim()});
      o.best_runtime = new_array(kFloat64, {b});
    } else {
      if (!owned_views_ready_) make_owned_views(node_shape(e.node_state_dim()), node_shape(e.action_mask_width()));
      o = owned_views_;
      if (!with_step_results) o.reward = o.terminated = o.truncated = py::object();
    }
    o.buffers.node_state = static_cast<float*>(array_data(o.node_state));
    o.buffers.action_mask = static_cast<std::int8_t*>(array_data(o.action_mask));
    o.buffers.globals = static_cast<float*>(array_data(o.globals));
    o.buffers.reward = static_cast<double*>(array_data(o.reward));
    o.buffers.terminated = static_cast<std::uint8_t*>(array_data(o.terminated));
    o.buffers.truncated = static_cast<std::uint8_t*>(array_data(o.truncated));
    o.buffers.runtime = static_cast<double*>(array_data(o.runtime));
    o.buffers.initial_runtime = static_cast<double*>(array_data(o.initial_runtime));
    o.buffers.speedup = static_cast<double*>(array_data(o.speedup));
    o.buffers.lower_bound = nullptr;  // constant per env: a cached read-only array
    o.buffers.peak_memory = static_cast<double*>(array_data(o.peak_memory));
    o.buffers.oom = static_cast<std::uint8_t*>(array_data(o.oom));
    o.buffers.invalid = static_cast<std::uint8_t*>(array_data(o.invalid));
    o.buffers.rejected_runtime = static_cast<double*>(array_data(o.rejected_runtime));
    o.buffers.colocation_moved = static_cast<std::int64_t*>(array_data(o.colocation_moved));
    o.buffers.device_state = static_cast<float*>(array_data(o.device_state));
    o.buffers.best_runtime = static_cast<double*>(array_data(o.best_runtime));
    return o;
  }

  // Node-level shape: (B, N, k) stacked or padded, (sum N, k) concatenated.
  std::vector<py::ssize_t> node_shape(int width) const {
    const VectorEnv& e = *engine_;
    if (e.layout() == BatchLayout::kConcatenated) return {static_cast<py::ssize_t>(e.total_nodes()), width};
    return {e.num_envs(), e.max_nodes(), width};
  }

  void make_owned_views(const std::vector<py::ssize_t>& node_state_shape, const std::vector<py::ssize_t>& mask_shape) {
    const BatchBuffers& buf = locked([&]() -> const BatchBuffers& { return engine_->owned_buffers(); });
    const py::ssize_t b = engine_->num_envs(), d = engine_->num_devices();
    py::capsule owner(new Engine(engine_), [](void* p) { delete static_cast<Engine*>(p); });
    auto view = [&](auto* data, std::vector<py::ssize_t> shape) {
      using T = std::remove_pointer_t<decltype(data)>;
      auto strides = row_strides(shape, sizeof(T));
      return strided_view(data, std::move(shape), std::move(strides), owner, true);
    };
    auto bools = [&](std::uint8_t* data) {
      return py::array(py::dtype::of<bool>(), std::vector<py::ssize_t>{b}, std::vector<py::ssize_t>{1}, data, owner);
    };
    Outputs& o = owned_views_;
    o.node_state = view(buf.node_state, node_state_shape);
    o.action_mask = view(buf.action_mask, mask_shape);
    o.globals = view(buf.globals, {b, static_cast<py::ssize_t>(engine_->global_dim())});
    o.reward = view(buf.reward, {b});
    o.terminated = bools(buf.terminated);
    o.truncated = bools(buf.truncated);
    o.runtime = view(buf.runtime, {b});
    o.initial_runtime = view(buf.initial_runtime, {b});
    o.speedup = view(buf.speedup, {b});
    o.peak_memory = view(buf.peak_memory, {b, d});
    o.oom = bools(buf.oom);
    o.invalid = bools(buf.invalid);
    o.rejected_runtime = view(buf.rejected_runtime, {b});
    o.colocation_moved = view(buf.colocation_moved, {b});
    if (buf.device_state)
      o.device_state = view(buf.device_state, {b, d, static_cast<py::ssize_t>(engine_->device_state_dim())});
    o.best_runtime = view(buf.best_runtime, {b});
    owned_views_ready_ = true;
  }

  void build_static_views() {
    const VectorEnv& e = *engine_;
    const BatchedStatic& s = e.static_observation();
    const StaticObservation& first = e.env(0).static_observation();
    const py::ssize_t b = e.num_envs(), f = first.node_feature_dim, fe = first.edge_feature_dim;
    py::dict d;
    if (e.layout() == BatchLayout::kStacked) {
      py::capsule owner(new std::shared_ptr<const StaticObservation>(s.shared),
                        [](void* p) { delete static_cast<std::shared_ptr<const StaticObservation>*>(p); });
      const StaticObservation& x = *s.shared;
      d[observation_name(ObservationKey::kNodeFeatures)] = static_view(x.node_features.data(), {x.num_nodes, f}, owner, true, b);
      d[observation_name(ObservationKey::kEdgeIndex)] = static_view(x.edge_index.data(), {2, x.num_edges}, owner, true, b);
      d[observation_name(ObservationKey::kEdgeFeatures)] = static_view(x.edge_features.data(), {x.num_edges, fe}, owner, true, b);
    } else {
      py::capsule owner(new Engine(engine_), [](void* p) { delete static_cast<Engine*>(p); });
      if (e.layout() == BatchLayout::kConcatenated) {
        const py::ssize_t n = e.total_nodes(), m = e.total_edges();
        d[observation_name(ObservationKey::kNodeFeatures)] = static_view(s.node_features.data(), {n, f}, owner, false, b);
        d[observation_name(ObservationKey::kEdgeIndex)] = static_view(s.edge_index.data(), {2, m}, owner, false, b);
        d[observation_name(ObservationKey::kEdgeFeatures)] = static_view(s.edge_features.data(), {m, fe}, owner, false, b);
        d["batch"] = static_view(s.batch.data(), {n}, owner, false, b);
      } else {
        const py::ssize_t p = e.max_nodes(), q = e.max_edges();
        const bool shared = s.broadcast;
        d[observation_name(ObservationKey::kNodeFeatures)] = static_view(s.node_features.data(), shared ? std::vector<py::ssize_t>{p, f}
                                                                         : std::vector<py::ssize_t>{b, p, f},
                                         owner, shared, b);
        d[observation_name(ObservationKey::kEdgeIndex)] = static_view(s.edge_index.data(), shared ? std::vector<py::ssize_t>{2, q}
                                                                   : std::vector<py::ssize_t>{b, 2, q},
                                      owner, shared, b);
        d[observation_name(ObservationKey::kEdgeFeatures)] = static_view(s.edge_features.data(), shared ? std::vector<py::ssize_t>{q, fe}
                                                                         : std::vector<py::ssize_t>{b, q, fe},
                                         owner, shared, b);
      }
      d["num_nodes"] = static_view(s.num_nodes.data(), {b}, owner, false, b);
      d["num_edges"] = static_view(s.num_edges.data(), {b}, owner, false, b);
    }
    if (e.device_feature_dim() > 0) {  // per env: each its own cluster
      py::capsule owner(new Engine(engine_), [](void* p) { delete static_cast<Engine*>(p); });
      d[observation_name(ObservationKey::kDeviceFeatures)] = static_view(s.device_features.data(),
                                         {b, static_cast<py::ssize_t>(e.num_devices()), e.device_feature_dim()},
                                         owner, false, b);
    }
    static_obs_ = d;
  }

  py::dict observation(const Outputs& out) const {
    auto obs = py::reinterpret_steal<py::dict>(PyDict_Copy(static_obs_.ptr()));
    if (!obs) throw py::error_already_set();
    set_item(obs, keys_.node_state, out.node_state);
    set_item(obs, keys_.action_mask, out.action_mask);
    set_item(obs, keys_.globals, out.globals);
    if (out.device_state) set_item(obs, keys_.device_state, out.device_state);
    return obs;
  }

  // The info keys of envs/spec.h that a vector env reports, each with Gymnasium's "_key" mask.
  py::dict info(const Outputs& out, const InfoExtras& extras) const {
    py::dict d;
    for (std::size_t k = 0; k < keys_.info.size(); ++k) {
      const InfoField& field = *keys_.info[k].field;
      set_item(d, keys_.info[k].name, info_value(field.key, out, extras));
      // Only envs whose decision was rejected report the rejected keys.
      set_item(d, keys_.info[k].mask,
               field.presence == Presence::kRejected ? out.invalid.attr("copy")() : all_true_);
    }
    return d;
  }

  py::object info_value(InfoKey key, const Outputs& out, const InfoExtras& extras) const {
    switch (key) {
      case InfoKey::kRuntime: return out.runtime;
      case InfoKey::kInitialRuntime: return out.initial_runtime;
      case InfoKey::kSpeedup: return out.speedup;
      case InfoKey::kLowerBound: return lower_bound_;
      case InfoKey::kPeakMemory: return out.peak_memory;
      case InfoKey::kBytesMoved: return to_numpy(std::vector<double>(extras.bytes_moved),
                                                 {static_cast<py::ssize_t>(extras.bytes_moved.size())});
      case InfoKey::kOom: return out.oom;
      case InfoKey::kInvalid: return out.invalid;
      case InfoKey::kInvalidReason: {
        py::list reasons;
        for (const std::string& reason : extras.invalid_reason) reasons.append(py::str(reason));
        return keys_.numpy_array(reasons, py::arg("dtype") = "O");
      }
      case InfoKey::kColocationMoved: return out.colocation_moved;
      case InfoKey::kRejectedRuntime: return out.rejected_runtime;
      case InfoKey::kBestRuntime: return out.best_runtime;
      case InfoKey::kBest: break;  // not reported by a vector env (envs/spec.h says why)
    }
    GOENV_FAIL(Error, "info key " << static_cast<int>(key) << " has no vector value");
  }

  // What the engine's buffers do not carry, read from each env after a reset or step (under
  // the engine's guard).
  InfoExtras info_extras() const {
    InfoExtras extras;
    for (int i = 0; i < engine_->num_envs(); ++i) {
      const StepInfo& info = engine_->env(i).last_info();
      extras.bytes_moved.push_back(info.bytes_moved);
      extras.invalid_reason.push_back(info.invalid_reason);
    }
    return extras;
  }

  // Each env's lower bound is fixed, reported by its first reset: one read-only array.
  // lower_bounds() runs under the engine's guard, set_lower_bounds() with the GIL.
  std::vector<double> lower_bounds() const {
    std::vector<double> bounds(engine_->num_envs());
    for (int i = 0; i < engine_->num_envs(); ++i) bounds[i] = engine_->env(i).last_info().lower_bound;
    return bounds;
  }
  void set_lower_bounds(std::vector<double> bounds) {
    const auto b = static_cast<py::ssize_t>(bounds.size());
    py::array array = to_numpy(std::move(bounds), {b});
    array.attr("setflags")(py::arg("write") = false);
    lower_bound_ = array;
  }

  static void set_item(py::dict& d, const py::object& key, const py::object& value) {
    if (PyDict_SetItem(d.ptr(), key.ptr(), value.ptr()) != 0) throw py::error_already_set();
  }

  // Interned dict keys, made once: the observation's, and the info keys of envs/spec.h that a
  // vector env reports with their masks.
  struct InfoName {
    const InfoField* field;
    py::object name, mask;
  };
  struct Keys {
    static py::object key(ObservationKey k) { return py::str(observation_name(k)); }
    py::object node_state = key(ObservationKey::kNodeState), action_mask = key(ObservationKey::kActionMask),
               globals = key(ObservationKey::kGlobals), device_state = key(ObservationKey::kDeviceState);
    py::object numpy_array = py::module_::import("numpy").attr("array");  // looked up once, not per step
    std::vector<InfoName> info = [] {
      std::vector<InfoName> names;
      for (const InfoField& field : info_fields())
        if (field.vector_shape != nullptr)
          names.push_back({&field, py::str(field.name), py::str(std::string("_") + field.name)});
      return names;
    }();
  };

  Keys keys_;
  py::object lower_bound_;  // (B,) read-only: each env's lower bound never changes
  Engine engine_;
  bool copy_ = true;
  py::dict static_obs_;
  py::object all_true_;
  bool owned_views_ready_ = false;
  Outputs owned_views_;
};

}  // namespace

void bind_vector_env(py::module_& m) {
  m.attr("MAX_THREADS") = kMaxThreads;  // num_threads of vector envs and agents: [1, MAX_THREADS]
  py::class_<PyVectorEnv>(m, "VectorEnv",
                          "B envs of one task stepped in parallel (OpenMP) into batched numpy arrays; "
                          "goenv.make_vec wraps it as a gymnasium.vector.VectorEnv.")
      .def(py::init<const std::vector<const Env*>&, py::handle, py::object, int, bool>(), py::arg("envs"),
           py::arg("num_threads") = 1, py::arg("pad_to") = py::none(), py::arg("max_episode_steps") = 0,
           py::arg("copy") = true,
           "One env per entry of `envs`, each a clone of that env (graph, cluster, options). Envs on one graph\n"
           "batch as (B, N, ...); different graphs concatenate PyG-style (sum N, ...) unless pad_to=(nodes, edges).")
      .def("reset", &PyVectorEnv::reset, py::arg("seeds") = py::none(), py::arg("mask") = py::none(),
           py::arg("start") = py::none(),
           "Resets every env (or those where mask is True); seeds: uint64 (B,); start: this reset's start\n"
           "(a name, {head: values}, or one of those or None per env). Returns (obs, info).")
      .def("step", &PyVectorEnv::step, py::arg("actions"),
           "Steps every env (NEXT_STEP autoreset). Returns (obs, reward, terminated, truncated, info).")
      .def("get_state", [](PyVectorEnv& v) { return py::bytes(v.locked([&] { return v.engine().get_state(); })); },
           "Every env's snapshot plus the autoreset flags, as bytes.")
      .def("set_state", [](PyVectorEnv& v, const py::bytes& state) {
        const std::string bytes = state;
        v.locked([&] { v.engine().set_state(bytes); });
      }, py::arg("state"))
      .def_property("num_threads", [](PyVectorEnv& v) { return v.engine().num_threads(); },
                    [](PyVectorEnv& v, py::handle t) {
                      const int threads = int_option(t, "num_threads");
                      v.locked([&] { v.engine().set_num_threads(threads); });
                    }, "OpenMP threads, in [1, MAX_THREADS].")
      .def_property("copy", &PyVectorEnv::copy, &PyVectorEnv::set_copy,
                    "True: fresh arrays every step; False: views of reused buffers (valid until the next call).")
      .def_property_readonly("num_envs", [](PyVectorEnv& v) { return v.engine().num_envs(); })
      .def_property_readonly("layout", [](PyVectorEnv& v) { return batch_layout_name(v.engine().layout()); })
      .def_property_readonly("same_graph", [](PyVectorEnv& v) { return v.engine().same_graph(); })
      .def_property_readonly("node_mode", [](PyVectorEnv& v) { return v.engine().node_mode(); })
      .def_property_readonly("max_episode_steps", [](PyVectorEnv& v) { return v.engine().max_episode_steps(); })
      .def_property_readonly("task", [](PyVectorEnv& v) { return v.engine().env(0).task(); })
      .def_property_readonly("ids", [](PyVectorEnv& v) {
        std::vector<std::string> ids;
        for (int i = 0; i < v.engine().num_envs(); ++i) ids.push_back(v.engine().env(i).id());
        return ids;
      })
      .def_property_readonly("heads", [](PyVectorEnv& v) {
        std::vector<std::string> names;
        for (Head h : v.engine().env(0).heads()) names.emplace_back(head_name(h));
        return names;
      })
      .def_property_readonly("head_choices", [](PyVectorEnv& v) {
        std::vector<int> c;
        for (Head h : v.engine().env(0).heads()) c.push_back(v.engine().env(0).choices(h));
        return c;
      })
      .def_property_readonly("num_devices", [](PyVectorEnv& v) { return v.engine().num_devices(); })
      .def_property_readonly("node_feature_dim",
                             [](PyVectorEnv& v) { return v.engine().env(0).static_observation().node_feature_dim; })
      .def_property_readonly("edge_feature_dim",
                             [](PyVectorEnv& v) { return v.engine().env(0).static_observation().edge_feature_dim; })
      .def_property_readonly("node_state_dim", [](PyVectorEnv& v) { return v.engine().node_state_dim(); })
      .def_property_readonly("action_mask_width", [](PyVectorEnv& v) { return v.engine().action_mask_width(); })
      .def_property_readonly("global_dim", [](PyVectorEnv& v) { return v.engine().global_dim(); })
      .def_property_readonly("observation_version", [](PyVectorEnv& v) { return v.engine().observation_version(); })
      .def_property_readonly("device_state_dim", [](PyVectorEnv& v) { return v.engine().device_state_dim(); })
      .def_property_readonly("device_feature_dim", [](PyVectorEnv& v) { return v.engine().device_feature_dim(); })
      .def_property_readonly("max_nodes", [](PyVectorEnv& v) { return v.engine().max_nodes(); },
                             "Nodes per env row: the graph's (stacked), the largest (concatenated), pad_to (padded).")
      .def_property_readonly("max_edges", [](PyVectorEnv& v) { return v.engine().max_edges(); })
      .def_property_readonly("total_nodes", [](PyVectorEnv& v) { return v.engine().total_nodes(); })
      .def_property_readonly("total_edges", [](PyVectorEnv& v) { return v.engine().total_edges(); })
      .def_property_readonly("num_nodes", [](PyVectorEnv& v) {
        std::vector<int> n;
        for (int i = 0; i < v.engine().num_envs(); ++i) n.push_back(v.engine().env(i).graph().num_nodes());
        return n;
      })
      .def_property_readonly("num_edges", [](PyVectorEnv& v) {
        std::vector<int> n;
        for (int i = 0; i < v.engine().num_envs(); ++i) n.push_back(v.engine().env(i).graph().num_edges());
        return n;
      })
      .def_property_readonly("static_observation", &PyVectorEnv::static_observation,
                             "The read-only static entries of every observation (built once).")
      .def_property_readonly("last_call_seconds", [](PyVectorEnv& v) { return v.locked([&] { return v.engine().last_call_seconds(); }); },
                             "C++ wall time of the last step/reset (without the Python boundary).")
      .def("graph", [](PyVectorEnv& v, int i) { return std::const_pointer_cast<Graph>(v.engine().env(i).graph_ptr()); },
           py::arg("index"))
      .def("cluster", [](PyVectorEnv& v, int i) { return v.engine().env(i).cluster(); }, py::arg("index"))
      .def("last_result", [](PyVectorEnv& v, int i) { return v.locked([&] { return v.engine().env(i).last_result(); }); },
           py::arg("index"),
           "The simulation of env i's current decisions (for rendering).")
      .def("best", [](PyVectorEnv& v, int i) {
             const Solution best = v.locked([&] { return v.engine().env(i).best(); });
             return solution_dict(v.engine().env(i), best);
           },
           py::arg("index"), "Env i's best adopted decisions of its episode ({head: (N,) array}).")
      .def("env_state", [](PyVectorEnv& v, int i) { return py::bytes(v.locked([&] { return v.engine().env(i).get_state(); })); },
           py::arg("index"), "Env i's snapshot, as GraphEnv.get_state() gives it.");
}

}  // namespace goenv::bindings
