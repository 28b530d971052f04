// Devices and the directed links between them. Units: FLOP/s, bytes/s, bytes,
// seconds. Every ordered pair of distinct devices has a link; links that share a
// `channel` carry one transfer at a time between them (a bus), so a preset can
// model one NVLink per pair or, like Placeto's K80 box, one outgoing bus per device.
#pragma once

#include <string>
#include <vector>

#include "core/device_kind.h"

namespace goenv {

// Documented limits of an accepted cluster (docs/limits.md): with the graph's
// limits (core/graph.h) they keep every simulated time finite.
inline constexpr int kMaxDevices = 256;
inline constexpr double kMinRate = 1.0;        // FLOP/s, bytes/s and bytes: at least 1
inline constexpr double kMaxDelaySeconds = 1e6;  // launch overhead, op gap, link latency

struct Device {
  std::string name;
  DeviceKind kind = DeviceKind::kGpu;
  double peak_flops = 0;        // FLOP/s
  double memory_bandwidth = 0;  // bytes/s
  double memory_bytes = 0;      // capacity
  double launch_overhead = 0;   // seconds added to every kernel
  double op_gap = 0;            // seconds the device idles after each op of nonzero cost
};

struct Link {
  int src = 0, dst = 0;
  double bandwidth = 0;  // bytes/s
  double latency = 0;    // seconds per transfer
  int channel = 0;       // transfers on the same channel serialize
};

class Cluster {
 public:
  Cluster() = default;
  // Validates: finite rates >= kMinRate, delays in [0, kMaxDelaySeconds], UTF-8
  // names, at most kMaxDevices, channels below the number of links, and a link
  // for every ordered pair of devices.
  Cluster(std::string name, std::vector<Device> devices, std::vector<Link> links);

  const std::string& name() const { return name_; }
  int num_devices() const { return static_cast<int>(devices_.size()); }
  const std::vector<Device>& devices() const { return devices_; }
  const Device& device(int d) const { return devices_[d]; }
  const std::vector<Link>& links() const { return links_; }
  const Link& link(int src, int dst) const { return links_[link_index_[src * num_devices() + dst]]; }
  int num_channels() const { return num_channels_; }
  double transfer_time(int src, int dst, double bytes) const {
    const Link& l = link(src, dst);
    return l.latency + bytes / l.bandwidth;
  }

  // Named presets: "2xgpu-pcie", "4xgpu-nvlink", "cpu+2xgpu", "placeto-k80", ...
  static Cluster preset(const std::string& name);
  static std::vector<std::string> preset_names();

 private:
  std::string name_;
  std::vector<Device> devices_;
  std::vector<Link> links_;
  std::vector<int> link_index_;
  int num_channels_ = 0;
};

}  // namespace goenv
