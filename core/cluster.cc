#include "core/cluster.h"

#include <cmath>
#include <functional>
#include <map>

#include "core/error.h"
#include "core/graph.h"  // is_valid_utf8, kMaxNameBytes
#include "core/suggest.h"

namespace goenv {

namespace {

bool rate(double x) { return std::isfinite(x) && x >= kMinRate; }
bool delay(double x) { return std::isfinite(x) && x >= 0 && x <= kMaxDelaySeconds; }
// No NUL either: the JSON reader (cereal over RapidJSON) would cut a name there.
bool text(const std::string& s) {
  return s.size() <= kMaxNameBytes && is_valid_utf8(s) && s.find('\0') == std::string::npos;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGB = 1e9;

// NVIDIA V100-SXM2 16 GB: 15.7 TFLOP/s fp32, 900 GB/s HBM2.
Device v100(int i) { return {"gpu:" + std::to_string(i), DeviceKind::kGpu, 15.7e12, 900 * kGB, 16 * kGiB, 5e-6, 0}; }
// A two-socket server CPU: ~1.5 TFLOP/s fp32 (AVX-512), 100 GB/s DRAM.
Device server_cpu() { return {"cpu:0", DeviceKind::kCpu, 1.5e12, 100 * kGB, 256 * kGiB, 1e-6, 0}; }
// One die of a Tesla K80 (Placeto's testbed): 4.37 TFLOP/s fp32 peak for the
// board = 2.18 per die, 240 GB/s, 12 GiB.
Device k80(int i) { return {"gpu:" + std::to_string(i), DeviceKind::kGpu, 2.18e12, 240 * kGB, 12 * kGiB, 0, 5.7e-6}; }

// Every ordered pair linked; `channel(src, dst)` decides which transfers serialize.
std::vector<Link> all_pairs(int n, double bandwidth, double latency,
                            const std::function<int(int, int)>& channel) {
  std::vector<Link> links;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) links.push_back({s, d, bandwidth, latency, channel(s, d)});
  return links;
}

Cluster gpus(const std::string& name, int n, double bandwidth, double latency) {
  std::vector<Device> devices;
  for (int i = 0; i < n; ++i) devices.push_back(v100(i));
  return Cluster(name, devices, all_pairs(n, bandwidth, latency, [n](int s, int d) { return s * n + d; }));
}

const std::map<std::string, std::function<Cluster()>>& presets() {
  static const std::map<std::string, std::function<Cluster()>> table = [] {
    std::map<std::string, std::function<Cluster()>> t;
    t["1xgpu"] = [] { return gpus("1xgpu", 1, 1, 0); };
    for (int n : {2, 4, 8}) {
      // PCIe 3.0 x16: ~12 GB/s achieved, ~10 us per transfer.
      std::string pcie = std::to_string(n) + "xgpu-pcie";
      t[pcie] = [pcie, n] { return gpus(pcie, n, 12 * kGB, 10e-6); };
      // NVLink 2 (V100): ~50 GB/s per direction between a pair, ~5 us per transfer.
      std::string nvlink = std::to_string(n) + "xgpu-nvlink";
      t[nvlink] = [nvlink, n] { return gpus(nvlink, n, 50 * kGB, 5e-6); };
      // Placeto/Park simulator constants: 7,600 bytes/us plus 25 us per transfer,
      // one outgoing bus per source device, 5.7 us gap after every op.
      std::string k80s = "placeto-k80-" + std::to_string(n);
      t[k80s] = [k80s, n] {
        std::vector<Device> devices;
        for (int i = 0; i < n; ++i) devices.push_back(k80(i));
        return Cluster(k80s, devices, all_pairs(n, 7600e6, 25e-6, [](int s, int) { return s; }));
      };
    }
    t["placeto-k80"] = [] {
      Cluster c = presets().at("placeto-k80-4")();
      return Cluster("placeto-k80", c.devices(), c.links());
    };
    t["cpu+2xgpu"] = [] {
      std::vector<Device> devices = {server_cpu(), v100(0), v100(1)};
      return Cluster("cpu+2xgpu", devices, all_pairs(3, 12 * kGB, 10e-6, [](int s, int d) { return s * 3 + d; }));
    };
    return t;
  }();
  return table;
}

}  // namespace

Cluster::Cluster(std::string name, std::vector<Device> devices, std::vector<Link> links)
    : name_(std::move(name)), devices_(std::move(devices)), links_(std::move(links)) {
  GOENV_CHECK(text(name_), InvalidArgument, "the cluster name is not UTF-8 text without NUL of at most " << kMaxNameBytes << " bytes");
  GOENV_CHECK(!devices_.empty(), InvalidArgument, "cluster '" << name_ << "' has no devices");
  GOENV_CHECK(devices_.size() <= static_cast<std::size_t>(kMaxDevices), InvalidArgument,
              "cluster '" << name_ << "' has " << devices_.size() << " devices; 1 to " << kMaxDevices << " are supported");
  const int n = num_devices();
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    const Device& d = devices_[i];
    GOENV_CHECK(text(d.name), InvalidArgument, "device " << i << ": the name is not UTF-8 text without NUL of at most "
                                                         << kMaxNameBytes << " bytes");
    GOENV_CHECK(static_cast<unsigned>(d.kind) < kNumDeviceKinds, InvalidArgument,
                "device '" << d.name << "': unknown kind " << static_cast<int>(d.kind));
    GOENV_CHECK(rate(d.peak_flops) && rate(d.memory_bandwidth) && rate(d.memory_bytes), InvalidArgument,
                "device '" << d.name << "': peak_flops, memory_bandwidth and memory_bytes must be finite and >= "
                           << kMinRate);
    GOENV_CHECK(delay(d.launch_overhead) && delay(d.op_gap), InvalidArgument,
                "device '" << d.name << "': launch_overhead and op_gap must be in [0, " << kMaxDelaySeconds << "] s");
  }
  GOENV_CHECK(links_.size() <= static_cast<std::size_t>(n) * n, InvalidArgument,
              "cluster '" << name_ << "' has " << links_.size() << " links; " << n << " devices have at most " << n * n);
  link_index_.assign(n * n, -1);
  for (std::size_t i = 0; i < links_.size(); ++i) {
    const Link& l = links_[i];
    GOENV_CHECK(l.src >= 0 && l.src < n && l.dst >= 0 && l.dst < n && l.src != l.dst,
                InvalidArgument, "link " << l.src << " -> " << l.dst << " is not between two devices of " << n);
    GOENV_CHECK(rate(l.bandwidth) && delay(l.latency), InvalidArgument,
                "link " << l.src << " -> " << l.dst << ": bandwidth must be finite and >= " << kMinRate
                        << ", latency in [0, " << kMaxDelaySeconds << "] s");
    GOENV_CHECK(l.channel >= 0 && l.channel < n * n, InvalidArgument,
                "link " << l.src << " -> " << l.dst << ": channel " << l.channel << " outside [0, " << n * n << ")");
    GOENV_CHECK(link_index_[l.src * n + l.dst] == -1, InvalidArgument,
                "two links " << l.src << " -> " << l.dst);
    link_index_[l.src * n + l.dst] = static_cast<int>(i);
    num_channels_ = std::max(num_channels_, l.channel + 1);
  }
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      GOENV_CHECK(s == d || link_index_[s * n + d] != -1, InvalidArgument,
                  "cluster '" << name_ << "' has no link " << s << " -> " << d);
}

Cluster Cluster::preset(const std::string& name) {
  const auto& table = presets();
  auto it = table.find(name);
  if (it == table.end()) {
    std::string known;
    for (const auto& [k, _] : table) known += (known.empty() ? "" : ", ") + k;
    std::vector<std::string> names;
    for (const auto& [k, _] : table) names.push_back(k);
    GOENV_FAIL(NotFound, "unknown cluster preset '" << name << "'; presets: " << known << did_you_mean(name, names));
  }
  return it->second();
}

std::vector<std::string> Cluster::preset_names() {
  std::vector<std::string> names;
  for (const auto& [k, _] : presets()) names.push_back(k);
  return names;
}

}  // namespace goenv
