#include <pybind11/stl.h>

#include "bindings/numpy_helpers.h"
#include "core/cluster.h"
#include "core/serialization.h"

namespace goenv::bindings {

void bind_cluster(py::module_& m) {
  py::class_<Device>(m, "Device", "A device. Units: FLOP/s, bytes/s, bytes, seconds.")
      .def(py::init([](std::string name, const std::string& kind, double peak_flops, double memory_bandwidth,
                       double memory_bytes, double launch_overhead, double op_gap) {
             return Device{std::move(name), parse_device_kind(kind), peak_flops, memory_bandwidth, memory_bytes,
                           launch_overhead, op_gap};
           }),
           py::arg("name"), py::arg("kind") = "gpu", py::arg("peak_flops"), py::arg("memory_bandwidth"),
           py::arg("memory_bytes"), py::arg("launch_overhead") = 0.0, py::arg("op_gap") = 0.0)
      .def_readonly("name", &Device::name)
      .def_property_readonly("kind", [](const Device& d) { return device_kind_name(d.kind); })
      .def_readonly("peak_flops", &Device::peak_flops)
      .def_readonly("memory_bandwidth", &Device::memory_bandwidth)
      .def_readonly("memory_bytes", &Device::memory_bytes)
      .def_readonly("launch_overhead", &Device::launch_overhead)
      .def_readonly("op_gap", &Device::op_gap)
      .def("__repr__", [](const Device& d) {
        return "<goenv.Device " + d.name + " (" + device_kind_name(d.kind) + ")>";
      });

  py::class_<Link>(m, "Link", "A directed link; links sharing a channel carry one transfer at a time.")
      .def(py::init([](int src, int dst, double bandwidth, double latency, int channel) {
             return Link{src, dst, bandwidth, latency, channel};
           }),
           py::arg("src"), py::arg("dst"), py::arg("bandwidth"), py::arg("latency") = 0.0, py::arg("channel"))
      .def_readonly("src", &Link::src)
      .def_readonly("dst", &Link::dst)
      .def_readonly("bandwidth", &Link::bandwidth)
      .def_readonly("latency", &Link::latency)
      .def_readonly("channel", &Link::channel);

  py::class_<Cluster>(m, "Cluster", "Devices and the links between them.")
      .def(py::init<std::string, std::vector<Device>, std::vector<Link>>(), py::arg("name"), py::arg("devices"),
           py::arg("links"))
      .def_static("preset", &Cluster::preset, py::arg("name"))
      .def_static("preset_names", &Cluster::preset_names)
      .def_property_readonly("name", &Cluster::name)
      .def_property_readonly("num_devices", &Cluster::num_devices)
      .def_property_readonly("devices", &Cluster::devices)
      .def_property_readonly("links", &Cluster::links)
      .def("to_json", &cluster_to_json)
      .def_static("from_json", &cluster_from_json)
      .def(py::pickle([](const Cluster& c) { return py::bytes(cluster_to_bytes(c)); },
                      [](const py::bytes& b) { return cluster_from_bytes(std::string(b)); }))
      .def("__repr__", [](const Cluster& c) {
        return "<goenv.Cluster '" + c.name() + "': " + std::to_string(c.num_devices()) + " devices>";
      });
}

}  // namespace goenv::bindings
