#include <pybind11/stl.h>

#include <algorithm>
#include <set>

#include "bindings/numpy_helpers.h"
#include "core/cluster.h"
#include "core/serialization.h"

namespace goenv::bindings {

namespace {

// A Link made without a channel: it gets one of its own when its cluster is made.
constexpr int kOwnChannel = -1;

// One constructor argument, taken as an object and converted here by pybind11's own caster, so
// that a missing or mistyped one is named (pybind11's refusal is a signature dump that is not).
// Required arguments default to None: None says the argument is missing.
template <typename T>
T argument(py::handle value, const char* call, const char* name, const char* meaning, bool required = false) {
  GOENV_CHECK(!(required && value.is_none()), InvalidArgument,
              call << " needs " << name << ", " << meaning);
  py::detail::make_caster<T> caster;
  GOENV_CHECK(caster.load(value, true), InvalidArgument,
              call << ": " << name << " must be " << meaning << ", got "
                   << std::string(py::str(py::type::handle_of(value).attr("__name__"))) << " "
                   << std::string(py::repr(value)));
  return py::detail::cast_op<T>(std::move(caster));
}

// Links without a channel (kOwnChannel) get the lowest channels no other link uses, one each.
std::vector<Link> with_own_channels(std::vector<Link> links) {
  std::set<int> used;
  for (const Link& l : links)
    if (l.channel != kOwnChannel) used.insert(l.channel);
  int next = 0;
  for (Link& l : links) {
    if (l.channel != kOwnChannel) continue;
    while (used.count(next) > 0) ++next;
    l.channel = next++;
  }
  return links;
}

}  // namespace

void bind_cluster(py::module_& m) {
  py::class_<Device>(m, "Device", "A device. Units: FLOP/s, bytes/s, bytes, seconds.")
      .def(py::init([](py::handle name, py::handle kind, py::handle peak_flops, py::handle memory_bandwidth,
                       py::handle memory_bytes, py::handle launch_overhead, py::handle op_gap) {
             const char* call = "goenv.Device";
             return Device{argument<std::string>(name, call, "name", "a string", true),
                           parse_device_kind(argument<std::string>(kind, call, "kind", "'cpu', 'gpu' or 'tpu'")),
                           argument<double>(peak_flops, call, "peak_flops", "a number (FLOP/s)", true),
                           argument<double>(memory_bandwidth, call, "memory_bandwidth", "a number (bytes/s)", true),
                           argument<double>(memory_bytes, call, "memory_bytes", "a number (capacity, bytes)", true),
                           argument<double>(launch_overhead, call, "launch_overhead", "a number (seconds per kernel)"),
                           argument<double>(op_gap, call, "op_gap", "a number (seconds idle after each op)")};
           }),
           py::arg("name") = py::none(), py::arg("kind") = "gpu", py::arg("peak_flops") = py::none(),
           py::arg("memory_bandwidth") = py::none(), py::arg("memory_bytes") = py::none(),
           py::arg("launch_overhead") = 0.0, py::arg("op_gap") = 0.0,
           "Device(name, kind='gpu', peak_flops, memory_bandwidth, memory_bytes, launch_overhead=0.0, op_gap=0.0):\n"
           "name, peak_flops, memory_bandwidth and memory_bytes are required.")
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
      .def(py::init([](py::handle src, py::handle dst, py::handle bandwidth, py::handle latency, py::handle channel) {
             const char* call = "goenv.Link";
             Link link{argument<int>(src, call, "src", "an integer (a device index)", true),
                       argument<int>(dst, call, "dst", "an integer (a device index)", true),
                       argument<double>(bandwidth, call, "bandwidth", "a number (bytes/s)", true),
                       argument<double>(latency, call, "latency", "a number (seconds per transfer)"), kOwnChannel};
             // No channel: one of its own (a link carries one transfer at a time, docs/simulator.md), so that
             // latency's default is usable; a given channel's range is the cluster's to check, as before.
             if (!channel.is_none()) {
               link.channel = argument<int>(channel, call, "channel", "an integer, or None for a channel of its own");
               GOENV_CHECK(link.channel >= 0, InvalidArgument,
                           call << ": channel must be >= 0 (or None: a channel of its own), got " << link.channel);
             }
             return link;
           }),
           py::arg("src") = py::none(), py::arg("dst") = py::none(), py::arg("bandwidth") = py::none(),
           py::arg("latency") = 0.0, py::arg("channel") = py::none(),
           "Link(src, dst, bandwidth, latency=0.0, channel=None): src, dst and bandwidth are required;\n"
           "channel None gives the link a channel no other link of its cluster uses.")
      .def_readonly("src", &Link::src)
      .def_readonly("dst", &Link::dst)
      .def_readonly("bandwidth", &Link::bandwidth)
      .def_readonly("latency", &Link::latency)
      .def_property_readonly("channel", [](const Link& l) -> py::object {
        return l.channel == kOwnChannel ? py::object(py::none()) : py::object(py::int_(l.channel));
      });

  py::class_<Cluster>(m, "Cluster", "Devices and the links between them.")
      .def(py::init([](std::string name, std::vector<Device> devices, std::vector<Link> links) {
             return Cluster(std::move(name), std::move(devices), with_own_channels(std::move(links)));
           }),
           py::arg("name"), py::arg("devices"), py::arg("links"))
      .def_static("preset", &Cluster::preset, py::arg("name"))
      .def_static("preset_names", &Cluster::preset_names)
      .def_property_readonly("name", &Cluster::name)
      .def_property_readonly("num_devices", &Cluster::num_devices)
      .def_property_readonly("devices", &Cluster::devices)
      .def_property_readonly("links", &Cluster::links)
      .def("to_json", &cluster_to_json)
      .def_static("from_json", [](py::handle json) {
        // bytes are read as before; anything else but a str is named (was a signature dump)
        return cluster_from_json(py::isinstance<py::bytes>(json)
                                     ? json.cast<std::string>()
                                     : text_argument(json, "Cluster.from_json's json (the text to_json() gives)"));
      }, py::arg("json"))
      .def(py::pickle([](const Cluster& c) { return py::bytes(cluster_to_bytes(c)); },
                      [](const py::bytes& b) { return cluster_from_bytes(std::string(b)); }))
      .def("__repr__", [](const Cluster& c) {
        return "<goenv.Cluster '" + c.name() + "': " + std::to_string(c.num_devices()) + " devices>";
      });
}

}  // namespace goenv::bindings
