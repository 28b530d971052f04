#include "envs/observation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "core/error.h"

namespace goenv {

namespace {

// Squashes byte and FLOP counts (1 .. 1e15) into roughly [0, 1].
float log_scale(double x) { return static_cast<float>(std::log1p(std::max(0.0, x)) / 35.0); }

}  // namespace

const std::vector<std::string>& node_feature_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& info : op_types()) n.push_back("op_" + std::string(info.name));
    for (const char* s : {"log_flops", "log_output_bytes", "log_param_bytes", "depth", "topo_position",
                          "log_in_degree", "log_out_degree", "elementwise", "reduction", "opaque",
                          "colocated", "grouped"})
      n.push_back(s);
    return n;
  }();
  return names;
}

const std::vector<std::string>& edge_feature_names() {
  static const std::vector<std::string> names = {"log_bytes", "relative_bytes", "crosses_group"};
  return names;
}

const std::vector<std::string>& node_state_names(int version) {
  static const std::vector<std::string> v1 = {"priority", "fusion", "start", "finish", "critical", "decided", "current"};
  static const std::vector<std::string> v2 = [] {
    auto n = v1;
    n.push_back("slack");  // appended: version 1 is a prefix
    return n;
  }();
  GOENV_CHECK(version == 1 || version == 2, InvalidArgument,
              "observation_version must be 1 or 2, got " << version);
  return version == 1 ? v1 : v2;
}

const std::vector<std::string>& device_feature_names() {
  static const std::vector<std::string> names = {
      "cpu", "gpu", "tpu", "log_peak_flops", "log_memory_bandwidth", "log_memory_capacity", "launch_overhead",
      "relative_peak_flops", "relative_memory_bandwidth", "relative_memory_capacity", "log_link_bandwidth_out",
      "log_link_bandwidth_in", "link_latency"};
  return names;
}

const std::vector<std::string>& device_state_names() {
  static const std::vector<std::string> names = {"busy", "idle", "finish", "log_peak_memory", "memory_fraction",
                                                 "node_fraction", "over_capacity"};
  return names;
}

std::vector<float> device_features(const Cluster& cluster) {
  const int d = cluster.num_devices(), f = static_cast<int>(device_feature_names().size());
  double max_flops = 0, max_bandwidth = 0, max_memory = 0;
  for (const Device& x : cluster.devices()) {
    max_flops = std::max(max_flops, x.peak_flops);
    max_bandwidth = std::max(max_bandwidth, x.memory_bandwidth);
    max_memory = std::max(max_memory, x.memory_bytes);
  }
  // Microseconds squashed like the byte counts: 1 us ~ 0.02, 1 s ~ 0.4.
  const auto log_us = [](double seconds) { return log_scale(seconds * 1e6); };
  std::vector<float> out(static_cast<std::size_t>(d) * f, 0.f);
  for (int i = 0; i < d; ++i) {
    const Device& x = cluster.device(i);
    float* row = &out[static_cast<std::size_t>(i) * f];
    row[static_cast<int>(x.kind)] = 1.f;
    row[3] = log_scale(x.peak_flops);
    row[4] = log_scale(x.memory_bandwidth);
    row[5] = log_scale(x.memory_bytes);
    row[6] = log_us(x.launch_overhead + x.op_gap);
    row[7] = static_cast<float>(x.peak_flops / max_flops);
    row[8] = static_cast<float>(x.memory_bandwidth / max_bandwidth);
    row[9] = static_cast<float>(x.memory_bytes / max_memory);
    double out_bandwidth = 0, in_bandwidth = 0, latency = 0;
    for (int j = 0; j < d; ++j) {
      if (j == i) continue;
      out_bandwidth += cluster.link(i, j).bandwidth;
      in_bandwidth += cluster.link(j, i).bandwidth;
      latency += cluster.link(i, j).latency;
    }
    const double others = std::max(1, d - 1);  // one device: no links, zeros
    row[10] = log_scale(out_bandwidth / others);
    row[11] = log_scale(in_bandwidth / others);
    row[12] = log_us(latency / others);
  }
  return out;
}

const std::vector<std::string>& global_names() {
  // Runtimes over the initial runtime: the last decision simulated (a rejected one's too), then
  // the decisions in force (info["runtime"]); the best seen is info's, not the observation's.
  static const std::vector<std::string> names = {"simulated_runtime", "runtime", "progress", "last_reward",
                                                 "oom",               "invalid", "peak_memory_fraction",
                                                 "log_initial_runtime"};
  return names;
}

int node_state_dim(int num_devices, int version) {
  return num_devices + static_cast<int>(node_state_names(version).size());
}

std::shared_ptr<const StaticObservation> static_observation(const GraphPtr& graph) {
  // Cache by graph identity so 64 envs on one graph hold one copy.
  static std::mutex mutex;
  // The graph's weak_ptr guards against a new graph reusing a freed one's address.
  struct Entry {
    std::weak_ptr<const Graph> graph;
    std::weak_ptr<const StaticObservation> observation;
  };
  static std::map<const Graph*, Entry> cache;
  std::lock_guard<std::mutex> lock(mutex);
  for (auto it = cache.begin(); it != cache.end();)  // drop dead entries
    it = it->second.graph.expired() || it->second.observation.expired() ? cache.erase(it) : std::next(it);
  auto it = cache.find(graph.get());
  if (it != cache.end())
    if (auto hit = it->second.observation.lock()) return hit;

  const Graph& g = *graph;
  auto obs = std::make_shared<StaticObservation>();
  const int n = g.num_nodes(), m = g.num_edges(), types = num_op_types();
  const int f = static_cast<int>(node_feature_names().size());
  obs->num_nodes = n;
  obs->num_edges = m;
  obs->node_feature_dim = f;
  obs->edge_feature_dim = static_cast<int>(edge_feature_names().size());
  obs->node_features.assign(static_cast<std::size_t>(n) * f, 0.f);
  std::vector<int> position(n);
  for (int i = 0; i < n; ++i) position[g.topological_order()[i]] = i;
  const int max_depth = std::max(1, n ? *std::max_element(g.depth().begin(), g.depth().end()) : 1);
  for (NodeId v = 0; v < n; ++v) {
    float* row = &obs->node_features[static_cast<std::size_t>(v) * f];
    row[g.op_type()[v]] = 1.f;
    float* x = row + types;
    x[0] = log_scale(g.flops()[v]);
    x[1] = log_scale(static_cast<double>(g.output_bytes()[v]));
    x[2] = log_scale(static_cast<double>(g.param_bytes()[v]));
    x[3] = static_cast<float>(g.depth()[v]) / static_cast<float>(max_depth);
    x[4] = n > 1 ? static_cast<float>(position[v]) / static_cast<float>(n - 1) : 0.f;
    x[5] = static_cast<float>(std::log1p(g.in_offsets()[v + 1] - g.in_offsets()[v]) / 4.0);
    x[6] = static_cast<float>(std::log1p(g.out_offsets()[v + 1] - g.out_offsets()[v]) / 4.0);
    x[7 + static_cast<int>(g.fusible(v))] = 1.f;
    x[10] = g.colocation()[v] != kNone ? 1.f : 0.f;
    x[11] = g.group()[v] != kNone ? 1.f : 0.f;
  }
  obs->edge_index.resize(2 * static_cast<std::size_t>(m));
  std::copy(g.edge_src().begin(), g.edge_src().end(), obs->edge_index.begin());
  std::copy(g.edge_dst().begin(), g.edge_dst().end(), obs->edge_index.begin() + m);
  const double max_bytes =
      m ? static_cast<double>(std::max<std::int64_t>(1, *std::max_element(g.edge_bytes().begin(), g.edge_bytes().end())))
        : 1.0;
  obs->edge_features.resize(static_cast<std::size_t>(m) * obs->edge_feature_dim);
  for (int e = 0; e < m; ++e) {
    float* row = &obs->edge_features[static_cast<std::size_t>(e) * obs->edge_feature_dim];
    row[0] = log_scale(static_cast<double>(g.edge_bytes()[e]));
    row[1] = static_cast<float>(static_cast<double>(g.edge_bytes()[e]) / max_bytes);
    row[2] = g.group()[g.edge_src()[e]] != g.group()[g.edge_dst()[e]] ? 1.f : 0.f;
  }
  cache[graph.get()] = {graph, obs};
  return obs;
}

}  // namespace goenv
