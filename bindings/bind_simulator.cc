#include <pybind11/stl.h>

#include <algorithm>
#include <memory>

#include "bindings/numpy_helpers.h"
#include "core/fusion.h"
#include "core/lower_bound.h"
#include "core/simulator.h"

namespace goenv::bindings {

namespace {

// A goenv.Graph, or InvalidArgument naming what came instead: None casts to a null
// pointer, which simulate and lower_bound would dereference.
std::shared_ptr<Graph> as_graph(py::handle g, const char* what) {
  GOENV_CHECK(py::isinstance<Graph>(g), InvalidArgument,
              what << " needs a goenv.Graph, got " << std::string(py::str(py::type::handle_of(g).attr("__name__"))));
  return g.cast<std::shared_ptr<Graph>>();
}

bool same_cluster(const Cluster& a, const Cluster& b) {
  if (a.num_devices() != b.num_devices() || a.links().size() != b.links().size()) return false;
  for (int d = 0; d < a.num_devices(); ++d) {
    const Device &x = a.device(d), &y = b.device(d);
    if (x.kind != y.kind || x.peak_flops != y.peak_flops || x.memory_bandwidth != y.memory_bandwidth ||
        x.memory_bytes != y.memory_bytes || x.launch_overhead != y.launch_overhead || x.op_gap != y.op_gap)
      return false;
  }
  for (std::size_t i = 0; i < a.links().size(); ++i) {
    const Link &x = a.links()[i], &y = b.links()[i];
    if (x.src != y.src || x.dst != y.dst || x.bandwidth != y.bandwidth || x.latency != y.latency ||
        x.channel != y.channel)
      return false;
  }
  return true;
}

// goenv.simulate in a loop on one graph must not rebuild the simulator (cost
// table, adjacency: as long as a run on gnmt-8) every call, so each thread keeps
// its last one, reused for the same graph object and an equal cluster. It holds
// that graph until the thread simulates another one.
// The old one is freed before the new one is built, so the new one reuses its
// memory (no fresh pages to fault in). Fused calls keep their own.
template <typename S>
S& cached(std::unique_ptr<S>& last, const GraphPtr& graph, const Cluster& cluster) {
  if (!last || &last->graph() != graph.get() || !same_cluster(last->cluster(), cluster)) {
    last.reset();
    last = std::make_unique<S>(graph, cluster);
  }
  return *last;
}

Simulator& cached_simulator(const GraphPtr& graph, const Cluster& cluster) {
  thread_local std::unique_ptr<Simulator> last;
  return cached(last, graph, cluster);
}

FusedSimulator& cached_fused_simulator(const GraphPtr& graph, const Cluster& cluster) {
  thread_local std::unique_ptr<FusedSimulator> last;
  return cached(last, graph, cluster);
}

}  // namespace

void bind_simulator(py::module_& m) {
  py::class_<SimulationResult>(m, "SimulationResult", "What one simulation measured. Times in seconds.")
      .def_readonly("runtime", &SimulationResult::runtime)
      .def_readonly("oom", &SimulationResult::oom)
      .def_readonly("invalid", &SimulationResult::invalid)
      .def_readonly("invalid_reason", &SimulationResult::invalid_reason)
      .def_readonly("bytes_moved", &SimulationResult::bytes_moved)
      .def_property_readonly("device_busy", [](const SimulationResult& r) { return py::array_t<double>(r.device_busy.size(), r.device_busy.data()); })
      .def_property_readonly("peak_memory", [](const SimulationResult& r) { return py::array_t<double>(r.peak_memory.size(), r.peak_memory.data()); })
      .def_property_readonly("start", [](const SimulationResult& r) { return py::array_t<double>(r.start.size(), r.start.data()); })
      .def_property_readonly("finish", [](const SimulationResult& r) { return py::array_t<double>(r.finish.size(), r.finish.data()); })
      .def_property_readonly("device", [](const SimulationResult& r) { return py::array_t<std::int32_t>(r.device.size(), r.device.data()); })
      .def_property_readonly("kernel", [](const SimulationResult& r) {
        std::vector<std::int32_t> k = r.kernel;
        if (k.empty())
          for (std::size_t v = 0; v < r.start.size(); ++v) k.push_back(static_cast<std::int32_t>(v));
        const auto n = static_cast<py::ssize_t>(k.size());
        return to_numpy(std::move(k), {n});
      }, "Kernel id per node: fused nodes share one.")
      .def_property_readonly("critical", [](const SimulationResult& r) { return py::array_t<std::uint8_t>(r.critical.size(), r.critical.data()).attr("astype")("bool"); })
      .def_property_readonly("transfers", [](const SimulationResult& r) {
        // Columns: one entry per transfer.
        py::dict out;
        std::vector<std::int64_t> node, src, dst;
        std::vector<double> bytes, start, end;
        for (const Transfer& t : r.transfers) {
          node.push_back(t.node);
          src.push_back(t.src);
          dst.push_back(t.dst);
          bytes.push_back(t.bytes);
          start.push_back(t.start);
          end.push_back(t.end);
        }
        const auto k = static_cast<py::ssize_t>(r.transfers.size());
        out["node"] = to_numpy(std::move(node), {k});
        out["src"] = to_numpy(std::move(src), {k});
        out["dst"] = to_numpy(std::move(dst), {k});
        out["bytes"] = to_numpy(std::move(bytes), {k});
        out["start"] = to_numpy(std::move(start), {k});
        out["end"] = to_numpy(std::move(end), {k});
        return out;
      })
      .def("__repr__", [](const SimulationResult& r) {
        return "<goenv.SimulationResult runtime=" + std::to_string(r.runtime * 1e3) + " ms" +
               (r.oom ? " OOM" : "") + (r.invalid ? " INVALID" : "") + ">";
      });

  m.def("simulate",
        [](py::handle graph, const Cluster& cluster, py::handle placement, py::handle priority, py::handle fusion,
           int max_fusion_size) {
          auto g = as_graph(graph, "simulate");
          const int n = g->num_nodes();
          std::vector<std::int32_t> p, f;
          std::vector<double> q;
          if (!placement.is_none()) p = int32_array(placement, n, "placement");
          if (!priority.is_none()) q = double_array(priority, n, "priority");
          if (!fusion.is_none()) f = int32_array(fusion, n, "fusion");
          const Decisions decisions{p.empty() ? nullptr : p.data(), q.empty() ? nullptr : q.data()};
          py::gil_scoped_release release;
          if (!f.empty())
            return SimulationResult(cached_fused_simulator(g, cluster).run(decisions, f.data(), max_fusion_size));
          return SimulationResult(cached_simulator(g, cluster).run(decisions));
        },
        py::arg("graph"), py::arg("cluster"), py::arg("placement") = py::none(), py::arg("priority") = py::none(),
        py::arg("fusion") = py::none(), py::arg("max_fusion_size") = 16,
        "Simulates the graph on the cluster. placement: device per node (default all on 0);\n"
        "priority: higher runs first among ready ops on a device (default FIFO);\n"
        "fusion: fusion priority per node (0 = alone; default: no fusion), greedy pass as in docs/simulator.md.");

  m.def("simulate_batch",
        [](py::handle graph, const Cluster& cluster, py::handle placement, py::handle priority, py::handle fusion,
           int max_fusion_size) {
          // K decisions of one graph in one call (the labeller's): one conversion, the GIL released
          // over the whole loop, the outcomes written straight into stacked arrays.
          auto g = as_graph(graph, "simulate_batch");
          const py::ssize_t n = g->num_nodes(), devices = cluster.num_devices();
          auto rows = [&](py::handle value, const char* what) {
            refuse_masked(value, what);
            py::array array = py::array::ensure(value);
            GOENV_CHECK(array && array.ndim() == 2 && array.shape(1) == n, InvalidAction,
                        what << " must be an array of shape (K, " << n << ")");
            return array;
          };
          const py::array placements = rows(placement, "placement");
          const py::ssize_t k = placements.shape(0);
          std::vector<std::int32_t> p;
          try {
            const auto ints = integer_values(placements, "placement");
            p = narrow_to_int32(ints.data(), static_cast<std::size_t>(k * n), "placement (flat)");
          } catch (const InvalidArgument& e) {
            throw InvalidAction(e.what());
          }
          std::vector<double> q;
          if (!priority.is_none()) {
            auto values = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(rows(priority, "priority"));
            GOENV_CHECK(values.shape(0) == k, InvalidAction, "priority must have as many rows as placement");
            q.assign(values.data(), values.data() + k * n);
          }
          std::vector<std::int32_t> f;
          if (!fusion.is_none()) {
            const py::array levels = rows(fusion, "fusion");
            GOENV_CHECK(levels.shape(0) == k, InvalidAction, "fusion must have as many rows as placement");
            try {
              const auto ints = integer_values(levels, "fusion");
              f = narrow_to_int32(ints.data(), static_cast<std::size_t>(k * n), "fusion (flat)");
            } catch (const InvalidArgument& e) {
              throw InvalidAction(e.what());
            }
          }
          py::array_t<double> runtime(k), bytes_moved(k), peak({k, devices}), busy({k, devices});
          py::array_t<bool> oom(k), invalid(k);
          py::array_t<float> start({k, n}), finish({k, n});
          double *runtime_out = runtime.mutable_data(), *bytes_out = bytes_moved.mutable_data(),
                 *peak_out = peak.mutable_data(), *busy_out = busy.mutable_data();
          bool *oom_out = oom.mutable_data(), *invalid_out = invalid.mutable_data();
          float *start_out = start.mutable_data(), *finish_out = finish.mutable_data();
          {
            py::gil_scoped_release release;
            auto any = [n](const auto* row) { return std::any_of(row, row + n, [](auto x) { return x != 0; }); };
            for (py::ssize_t i = 0; i < k; ++i) {
              // A row of zeros is the default, as goenv.simulate's None: FIFO, no fusion.
              const double* q_row = q.empty() || !any(q.data() + i * n) ? nullptr : q.data() + i * n;
              const std::int32_t* f_row = f.empty() || !any(f.data() + i * n) ? nullptr : f.data() + i * n;
              const Decisions decisions{p.data() + i * n, q_row};
              const SimulationResult& r = f_row ? cached_fused_simulator(g, cluster).run(decisions, f_row, max_fusion_size)
                                                : cached_simulator(g, cluster).run(decisions);
              GOENV_CHECK(static_cast<py::ssize_t>(r.start.size()) == n && r.finish.size() == r.start.size() &&
                              static_cast<py::ssize_t>(r.peak_memory.size()) == devices &&
                              r.device_busy.size() == r.peak_memory.size(),
                          Error, "simulate_batch: a result of unexpected size");
              runtime_out[i] = r.runtime;
              bytes_out[i] = r.bytes_moved;
              oom_out[i] = r.oom;
              invalid_out[i] = r.invalid;
              std::copy(r.peak_memory.begin(), r.peak_memory.end(), peak_out + i * devices);
              std::copy(r.device_busy.begin(), r.device_busy.end(), busy_out + i * devices);
              std::copy(r.start.begin(), r.start.end(), start_out + i * n);  // float64 -> float32, rounded
              std::copy(r.finish.begin(), r.finish.end(), finish_out + i * n);
            }
          }
          py::dict out;
          out["runtime"] = runtime;
          out["oom"] = oom;
          out["invalid"] = invalid;
          out["bytes_moved"] = bytes_moved;
          out["peak_memory"] = peak;
          out["device_busy"] = busy;
          out["start"] = start;
          out["finish"] = finish;
          return out;
        },
        py::arg("graph"), py::arg("cluster"), py::arg("placement"), py::arg("priority") = py::none(),
        py::arg("fusion") = py::none(), py::arg("max_fusion_size") = 16,
        "Simulates K decisions of one graph: placement (K, N); priority and fusion (K, N) or None,\n"
        "a row of zeros being the default (FIFO; no fusion). Returns stacked arrays: runtime, oom,\n"
        "invalid, bytes_moved (K,), peak_memory, device_busy (K, devices), start, finish (K, N) float32.");

  m.def("lower_bound", [](py::handle graph, const Cluster& cluster, bool fusion) {
    auto g = as_graph(graph, "lower_bound");
    py::gil_scoped_release release;
    const LowerBound lb = lower_bound(*g, cluster, fusion);
    py::gil_scoped_acquire acquire;
    py::dict d;
    d["value"] = lb.value;
    d["critical_path"] = lb.critical_path;
    d["work"] = lb.work;
    return d;
  }, py::arg("graph"), py::arg("cluster"), py::arg("fusion") = false,
     "Seconds no decision can beat: max(critical path, work / devices); fusion=True: no decision\n"
     "with fusion either (a fusible op counts only its compute).");
}

}  // namespace goenv::bindings
