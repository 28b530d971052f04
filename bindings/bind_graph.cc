#include <pybind11/stl.h>

#include <filesystem>
#include <system_error>

#include "bindings/numpy_helpers.h"
#include "core/serialization.h"
#include "datasets/registry.h"
#include "envs/observation.h"

namespace goenv::bindings {

namespace {

using MutableGraph = std::shared_ptr<Graph>;  // pybind11 holder; the graph itself is never mutated

MutableGraph hold(GraphPtr g) { return std::const_pointer_cast<Graph>(std::move(g)); }

// The binary form, both ways, with the GIL released while it is (de)serialized (a graph is
// immutable): to_bytes / from_bytes and pickling share them.
py::bytes bytes_of(const Graph& g) {
  std::string bytes;
  {
    py::gil_scoped_release release;
    bytes = graph_to_bytes(g);
  }
  return py::bytes(bytes);
}

MutableGraph graph_of(const py::bytes& b) {
  std::string bytes(b);
  py::gil_scoped_release release;
  return hold(graph_from_bytes(bytes));
}

std::vector<std::int32_t> op_type_column(py::handle op_type, std::int64_t n) {
  std::vector<std::int32_t> ids(static_cast<std::size_t>(n), op_type_id("Other"));
  if (op_type.is_none()) return ids;
  py::sequence seq = py::reinterpret_borrow<py::sequence>(op_type);
  GOENV_CHECK(static_cast<std::int64_t>(py::len(seq)) == n, InvalidArgument,
              "op_type must have " << n << " entries, got " << py::len(seq));
  for (std::int64_t i = 0; i < n; ++i) {
    py::object x = seq[i];
    if (py::isinstance<py::str>(x)) {
      std::string text;
      try {
        text = x.cast<std::string>();
      } catch (const py::cast_error&) {  // a lone surrogate: not encodable as UTF-8
        GOENV_FAIL(InvalidArgument, "op_type[" << i << "] is not UTF-8 text: " << std::string(py::repr(x)));
      }
      ids[i] = op_type_id(text);
    } else {
      const bool whole = !py::isinstance<py::bool_>(x) && PyIndex_Check(x.ptr());  // int or numpy integer
      GOENV_CHECK(whole, InvalidArgument,
                  "op_type[" << i << "] must be an op type's name or id (goenv.op_type_names()), got "
                             << std::string(py::repr(x)));
      long long id = -1;
      try {
        id = py::reinterpret_steal<py::int_>(PyNumber_Index(x.ptr())).cast<long long>();
      } catch (const py::cast_error&) {
        id = -1;  // beyond int64: out of range below
      }
      GOENV_CHECK(id >= 0 && id <= INT32_MAX, InvalidArgument,
                  "op_type[" << i << "] is " << std::string(py::repr(x)) << ", not an op type id (goenv.op_type_names())");
      ids[i] = static_cast<std::int32_t>(id);
      op_type_info(ids[i]);  // range check with a clear error
    }
  }
  return ids;
}

std::vector<std::int64_t> byte_column(py::handle values, std::int64_t n, const char* what) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(n), 0);
  if (values.is_none()) return out;
  const auto doubles = double_array(values, n, what);
  for (std::int64_t i = 0; i < n; ++i) {
    GOENV_CHECK(std::isfinite(doubles[i]) && doubles[i] >= 0, InvalidGraph,
                what << "[" << i << "] must be finite and >= 0, got " << doubles[i]);
    out[i] = integral_value(doubles[i], what, i);
  }
  return out;
}

std::vector<std::int32_t> id_column(py::handle values, std::int64_t n, const char* what) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(n), kNone);
  if (values.is_none()) return out;
  const auto ints = integer_values(values, what);
  GOENV_CHECK(ints.ndim() == 1 && ints.shape(0) == n, InvalidGraph, what << " must have shape (" << n << ",)");
  for (std::int64_t i = 0; i < n; ++i) {
    GOENV_CHECK(ints.data()[i] >= -1 && ints.data()[i] <= INT32_MAX, InvalidGraph,
                what << "[" << i << "] is " << ints.data()[i] << "; ids are >= 0, or -1 for none");
    out[i] = static_cast<std::int32_t>(ints.data()[i]);
  }
  return out;
}

GraphPtr from_arrays(py::handle edge_index, py::handle flops, py::handle output_bytes, py::handle param_bytes,
                     py::handle op_type, py::handle edge_bytes, py::handle cost_us, py::handle names,
                     py::handle group, py::handle colocation, const std::string& name) {
  // The sizes first, from the arrays' shapes: a broadcast (stride-0) array may claim millions
  // of entries in a few bytes, and must cost nothing to refuse (a list is already its caller's
  // memory: it is counted after conversion, still before any node is made).
  const auto check_count = [](std::int64_t count, std::int64_t limit, const char* what) {
    GOENV_CHECK(count <= limit, InvalidGraph, "too many " << what << ": " << count << " (at most " << limit << ")");
  };
  for (const auto& [values, axis, limit, what] : {std::tuple{flops, 0, kMaxNodes, "nodes (flops)"},
                                                  std::tuple{edge_index, 1, kMaxEdges, "edges (edge_index)"}}) {
    if (!py::isinstance<py::array>(values)) continue;
    const auto array = py::reinterpret_borrow<py::array>(values);
    if (array.ndim() > axis) check_count(array.shape(axis), limit, what);
  }
  refuse_complex(flops, "flops");
  auto flops_column = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(flops);
  GOENV_CHECK(flops_column && flops_column.ndim() == 1, InvalidArgument, "flops must be a 1-D array of numbers");
  const std::int64_t n = flops_column.shape(0);
  check_count(n, kMaxNodes, "nodes (flops)");
  const auto edges = integer_values(edge_index, "edge_index");
  GOENV_CHECK(edges.ndim() == 2 && edges.shape(0) == 2, InvalidArgument, "edge_index must have shape (2, E)");
  const std::int64_t m = edges.shape(1);
  check_count(m, kMaxEdges, "edges (edge_index)");
  std::vector<NodeSpec> nodes(static_cast<std::size_t>(n));
  const auto ops = op_type_column(op_type, n);
  const auto out_bytes = byte_column(output_bytes, n, "output_bytes");
  const auto params = byte_column(param_bytes, n, "param_bytes");
  const auto groups = id_column(group, n, "group");
  const auto colocations = id_column(colocation, n, "colocation");
  std::vector<double> costs;
  int cost_columns = 0;
  if (!cost_us.is_none()) {
    refuse_complex(cost_us, "cost_us");
    auto c = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(cost_us);
    GOENV_CHECK(c && c.ndim() >= 1 && c.shape(0) == n && (c.ndim() == 1 || (c.ndim() == 2 && c.shape(1) == kNumDeviceKinds)),
                InvalidArgument, "cost_us must have shape (" << n << ",) or (" << n << ", 3) [cpu, gpu, tpu]");
    cost_columns = c.ndim() == 1 ? 1 : kNumDeviceKinds;
    costs.assign(c.data(), c.data() + n * cost_columns);
  }
  if (!names.is_none())
    GOENV_CHECK(static_cast<std::int64_t>(py::len(names)) == n, InvalidArgument, "names must have " << n << " entries");
  for (std::int64_t v = 0; v < n; ++v) {
    NodeSpec& s = nodes[v];
    if (names.is_none()) {
      s.name = "n" + std::to_string(v);
    } else {
      // The length is checked on Python's UTF-8 view before anything is copied: 4,000 references
      // to one long string must not cost 4,000 copies before the limit refuses them.
      Py_ssize_t size = 0;
      const char* utf8 = nullptr;
      py::str text;  // holds the UTF-8 view below
      try {
        text = py::str(py::reinterpret_borrow<py::sequence>(names)[v]);
        utf8 = PyUnicode_AsUTF8AndSize(text.ptr(), &size);  // cached in the str object, not copied
        if (utf8 == nullptr) throw py::error_already_set();
      } catch (const py::error_already_set& e) {  // e.g. a lone surrogate: not encodable as UTF-8
        GOENV_FAIL(InvalidGraph, "names[" << v << "] is not UTF-8 text: " << e.what());
      }
      GOENV_CHECK(static_cast<std::size_t>(size) <= kMaxNameBytes, InvalidGraph,
                  "names[" << v << "] is " << size << " bytes of UTF-8, at most " << kMaxNameBytes);
      s.name.assign(utf8, static_cast<std::size_t>(size));
    }
    s.op_type = ops[v];
    s.flops = flops_column.at(v);
    s.output_bytes = out_bytes[v];
    s.param_bytes = params[v];
    s.group = groups[v];
    s.colocation = colocations[v];
    for (int k = 0; cost_columns && k < kNumDeviceKinds; ++k)
      s.cost[k] = costs[v * cost_columns + (cost_columns == 1 ? 0 : k)] * 1e-6;  // stored in seconds
  }
  const auto bytes = edge_bytes.is_none() ? std::vector<std::int64_t>() : byte_column(edge_bytes, m, "edge_bytes");
  std::vector<std::array<std::int64_t, 3>> edge_list(static_cast<std::size_t>(m));
  for (std::int64_t e = 0; e < m; ++e) {
    const std::int64_t src = edges.at(0, e), dst = edges.at(1, e);
    GOENV_CHECK(src >= 0 && src < n && dst >= 0 && dst < n, InvalidGraph,
                "dangling edge " << e << ": " << src << " -> " << dst << ", nodes are [0, " << n << ")");
    edge_list[e] = {src, dst, bytes.empty() ? out_bytes[src] : bytes[e]};
  }
  py::gil_scoped_release release;
  return Graph::from_specs(name, std::move(nodes), std::move(edge_list));
}

}  // namespace

void bind_graph(py::module_& m) {
  py::class_<Graph, MutableGraph> graph(m, "Graph",
                                        "An immutable computation graph. Columns are read-only numpy views.\n"
                                        "Units: flops count FLOPs (a multiply-accumulate is 2), bytes are bytes.");
  graph
      .def_static("from_arrays",
                  [](py::handle edge_index, py::handle flops, py::handle output_bytes, py::handle param_bytes,
                     py::handle op_type, py::handle edge_bytes, py::handle cost_us, py::handle names,
                     py::handle group, py::handle colocation, py::handle name) {
                    return hold(from_arrays(edge_index, flops, output_bytes, param_bytes, op_type, edge_bytes,
                                            cost_us, names, group, colocation, text_argument(name, "name")));
                  },
                  py::arg("edge_index"), py::kw_only(), py::arg("flops"), py::arg("output_bytes") = py::none(),
                  py::arg("param_bytes") = py::none(), py::arg("op_type") = py::none(),
                  py::arg("edge_bytes") = py::none(), py::arg("cost_us") = py::none(),
                  py::arg("names") = py::none(), py::arg("group") = py::none(),
                  py::arg("colocation") = py::none(), py::arg("name") = "graph",
                  "Builds a graph from numpy columns. op_type: vocabulary names or ids; cost_us: measured\n"
                  "microseconds per node, (N,) for every device kind or (N, 3) for [cpu, gpu, tpu], NaN = none.")
      .def_static("load", [](py::handle path_argument) {
        const std::string path = text_argument(path_argument, "path", /*path=*/true);
        py::gil_scoped_release release;
        return hold(load_graph(path));
      }, py::arg("path"), "Loads a .goenv (cereal binary) or .json file, validating it.")
      .def("save", [](const Graph& g, py::handle path_argument, bool overwrite) {
        const std::string path = text_argument(path_argument, "path", /*path=*/true);
        // A user's file is replaced only when asked (what is not a regular file, save_graph refuses).
        std::error_code ignored;
        GOENV_CHECK(overwrite || !std::filesystem::is_regular_file(path, ignored), InvalidArgument,
                    "graph file " << path << ": the file exists; pass overwrite=True to replace it "
                    "(nothing was written)");
        py::gil_scoped_release release;
        save_graph(g, path);
      }, py::arg("path"), py::arg("overwrite") = false,
         "Saves atomically: cereal binary, or JSON when the path ends in .json. A file already at\n"
         "`path` is refused (goenv.InvalidArgument) unless overwrite=True.")
      .def("to_bytes", &bytes_of)
      .def("to_json", [](const Graph& g) { return graph_to_json(g); }, "The JSON form (as saved to .json files).")
      .def_static("from_json", [](const std::string& text) {
        py::gil_scoped_release release;
        return hold(graph_from_json(text));
      }, py::arg("text"), "Parses and validates the JSON form (str or bytes).")
      .def_static("from_bytes", &graph_of)
      .def(py::pickle(&bytes_of, &graph_of))
      .def_property_readonly("name", &Graph::name)
      .def_property_readonly("num_nodes", &Graph::num_nodes)
      .def_property_readonly("num_edges", &Graph::num_edges)
      .def_property_readonly("edge_index", [](const MutableGraph& g) {
        auto obs = static_observation(g);
        const StaticObservation* raw = obs.get();
        py::capsule owner(new std::shared_ptr<const StaticObservation>(std::move(obs)),
                          [](void* p) { delete static_cast<std::shared_ptr<const StaticObservation>*>(p); });
        return readonly_view(raw->edge_index, {2, raw->num_edges}, owner);
      }, "(2, E) int64 sources and destinations, PyG order.")
      .def_property_readonly("flops", [](py::object self) {
        const Graph& g = self.cast<const Graph&>();
        return readonly_view(g.flops(), {g.num_nodes()}, self);
      })
      .def_property_readonly("output_bytes", [](py::object self) {
        const Graph& g = self.cast<const Graph&>();
        return readonly_view(g.output_bytes(), {g.num_nodes()}, self);
      })
      .def_property_readonly("param_bytes", [](py::object self) {
        const Graph& g = self.cast<const Graph&>();
        return readonly_view(g.param_bytes(), {g.num_nodes()}, self);
      })
      .def_property_readonly("op_types", [](py::object self) {
        const Graph& g = self.cast<const Graph&>();
        return readonly_view(g.op_type(), {g.num_nodes()}, self);
      }, "int32 op-type ids into goenv.op_type_names().")
      .def_property_readonly("group", [](py::object self) {
        const Graph& g = self.cast<const Graph&>();
        return readonly_view(g.group(), {g.num_nodes()}, self);
      })
      .def_property_readonly("colocation", [](py::object self) {
        const Graph& g = self.cast<const Graph&>();
        return readonly_view(g.colocation(), {g.num_nodes()}, self);
      })
      .def_property_readonly("edge_bytes", [](py::object self) {
        const Graph& g = self.cast<const Graph&>();
        return readonly_view(g.edge_bytes(), {g.num_edges()}, self);
      })
      .def_property_readonly("cost_us", [](const Graph& g) {
        std::vector<double> us(g.cost());
        for (double& x : us) x *= 1e6;
        return to_numpy(std::move(us), {g.num_nodes(), kNumDeviceKinds});
      }, "(N, 3) measured microseconds per device kind [cpu, gpu, tpu]; NaN = roofline.")
      .def_property_readonly("topological_order", [](py::object self) {
        const Graph& g = self.cast<const Graph&>();
        return readonly_view(g.topological_order(), {g.num_nodes()}, self);
      })
      .def_property_readonly("names", &Graph::names)
      .def_property_readonly("shapes", &Graph::shapes)
      .def_property_readonly("op_type_names", [](const Graph& g) {
        std::vector<std::string> out;
        for (auto id : g.op_type()) out.emplace_back(op_type_info(id).name);
        return out;
      })
      .def_property_readonly("total_flops", &Graph::total_flops)
      .def_property_readonly("total_param_bytes", &Graph::total_param_bytes)
      .def("__repr__", [](const Graph& g) {
        return "<goenv.Graph '" + g.name() + "': " + std::to_string(g.num_nodes()) + " nodes, " +
               std::to_string(g.num_edges()) + " edges>";
      });

  m.def("op_type_names", [] {
    std::vector<std::string> names;
    for (const auto& info : op_types()) names.emplace_back(info.name);
    return names;
  });
  m.def("op_type_id", [](const std::string& name) { return op_type_id(name); });
  m.def("graph_names", &graph_family_names, "Names of the registered graph families.");
  m.def("graph_family", [](const std::string& name) {
    const GraphFamily& f = graph_family(name);
    py::dict d;
    d["name"] = f.name;
    d["description"] = f.description;
    d["default_cluster"] = f.default_cluster;
    d["params"] = f.defaults;
    return d;
  });
  m.def("build_graph", [](const std::string& name, const GraphParams& params) {
    py::gil_scoped_release release;
    return hold(build_graph(name, params));
  }, py::arg("name"), py::arg("params") = GraphParams{});
  m.def("node_feature_names", &node_feature_names);
  m.def("edge_feature_names", &edge_feature_names);
  m.def("node_state_names", [](int version) { return node_state_names(version); },
        py::arg("observation_version") = kObservationVersion,
        "node_state's columns after the one-hot device columns (version 1 is a prefix of version 2).");
  m.def("device_feature_names", &device_feature_names);
  m.def("device_state_names", &device_state_names);
  m.attr("OBSERVATION_VERSION") = kObservationVersion;
  m.def("global_names", &global_names);
}

}  // namespace goenv::bindings
