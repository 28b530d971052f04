// Small builders shared by the core GoogleTest files: clusters whose numbers make
// hand arithmetic exact, one-line node specs, seeded random DAGs, and a helper
// that returns an expected exception's message.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/simulator.h"

namespace goenv::test {

// With test_device(), an op of k * kGflop FLOPs computes for exactly k seconds and
// an op touching k * kMbyte bytes streams for exactly k seconds.
inline constexpr double kGflop = 1e9;
inline constexpr std::int64_t kMbyte = 1000000;

// 1 GFLOP/s, 1 MB/s memory, 1 TB capacity, no launch overhead, no op gap.
inline Device test_device(DeviceKind kind = DeviceKind::kGpu, std::string name = "") {
  Device d;
  d.name = name.empty() ? device_kind_name(kind) : std::move(name);
  d.kind = kind;
  d.peak_flops = 1e9;
  d.memory_bandwidth = 1e6;
  d.memory_bytes = 1e12;
  d.launch_overhead = 0;
  d.op_gap = 0;
  return d;
}

// Every ordered pair of `devices` linked at `bandwidth` bytes/s (1 KB/s: 1000
// bytes take exactly one second) plus `latency`; `channel(src, dst)` decides which
// links share a channel (default: one channel per ordered pair, nothing shared).
inline Cluster test_cluster(std::vector<Device> devices, double bandwidth = 1e3, double latency = 0,
                            std::function<int(int, int)> channel = nullptr) {
  const int n = static_cast<int>(devices.size());
  for (int i = 0; i < n; ++i)
    if (devices[i].name == device_kind_name(devices[i].kind)) devices[i].name += ":" + std::to_string(i);
  std::vector<Link> links;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) links.push_back({s, d, bandwidth, latency, channel ? channel(s, d) : s * n + d});
  return Cluster("test", std::move(devices), std::move(links));
}

inline Cluster test_cluster(int num_devices, const Device& device = test_device(), double bandwidth = 1e3,
                            double latency = 0, std::function<int(int, int)> channel = nullptr) {
  return test_cluster(std::vector<Device>(num_devices, device), bandwidth, latency, std::move(channel));
}

// One op: a MatMul (opaque) unless told otherwise.
inline NodeSpec op(std::string name, double flops, std::int64_t output_bytes = 0, std::int64_t param_bytes = 0) {
  NodeSpec s;
  s.name = std::move(name);
  s.op_type = op_type_id("MatMul");
  s.flops = flops;
  s.output_bytes = output_bytes;
  s.param_bytes = param_bytes;
  return s;
}

// A DAG of `num_nodes` nodes whose ids are a random permutation of a topological
// order (so "lowest id" and "topological" differ). Edges i -> j (in that order)
// appear with probability `edge_prob`. Costs include zeros, so zero-cost kernels
// appear; `rich` also sets shapes, groups, colocation, allowed kinds and
// measured costs on several kinds (for round-trip tests).
inline GraphPtr random_dag(std::mt19937& rng, int num_nodes, double edge_prob, bool rich = false) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int> op_kind(0, num_op_types() - 1);
  std::vector<NodeId> id(num_nodes);
  std::iota(id.begin(), id.end(), 0);
  std::shuffle(id.begin(), id.end(), rng);  // id[i] = node id of the i-th node in topological order

  std::vector<NodeSpec> nodes(num_nodes);
  for (int i = 0; i < num_nodes; ++i) {
    NodeSpec& s = nodes[id[i]];
    s.name = "n" + std::to_string(id[i]);
    s.op_type = op_kind(rng);
    s.flops = unit(rng) < 0.15 ? 0.0 : unit(rng) * 2e10;
    s.output_bytes = unit(rng) < 0.15 ? 0 : static_cast<std::int64_t>(unit(rng) * 4e8);
    s.param_bytes = unit(rng) < 0.5 ? 0 : static_cast<std::int64_t>(unit(rng) * 1e8);
    if (unit(rng) < 0.1) s.cost[static_cast<int>(DeviceKind::kGpu)] = unit(rng) < 0.3 ? 0.0 : unit(rng) * 1e-3;
    if (rich) {
      const int rank = static_cast<int>(unit(rng) * 4);
      for (int r = 0; r < rank; ++r) s.shape.push_back(unit(rng) < 0.1 ? -1 : static_cast<std::int64_t>(unit(rng) * 4096));
      s.group = unit(rng) < 0.3 ? kNone : static_cast<std::int32_t>(unit(rng) * 10) * 7;
      s.colocation = unit(rng) < 0.7 ? kNone : static_cast<std::int32_t>(unit(rng) * 5) * 11;
      s.allowed_kinds = static_cast<std::uint8_t>(unit(rng) * 8);
      for (double& c : s.cost)
        if (unit(rng) < 0.3) c = unit(rng) * 1e-2;
    }
  }
  std::vector<std::array<std::int64_t, 3>> edges;
  for (int i = 0; i < num_nodes; ++i)
    for (int j = i + 1; j < num_nodes; ++j)
      if (unit(rng) < edge_prob) {
        const std::int64_t bytes = unit(rng) < 0.7 ? nodes[id[i]].output_bytes
                                                   : static_cast<std::int64_t>(unit(rng) * 1e8);
        edges.push_back({id[i], id[j], bytes});
      }
  std::shuffle(edges.begin(), edges.end(), rng);
  return Graph::from_specs("random", std::move(nodes), std::move(edges));
}

// FNV-1a over bytes: equal digests mean equal results, bit for bit.
class Digest {
 public:
  void add(const void* data, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) hash_ = (hash_ ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
  }
  template <typename T>
  void add_vector(const std::vector<T>& v) {
    add(v.data(), v.size() * sizeof(T));
  }
  template <typename... T>
  void add_values(const T&... values) {
    (add(&values, sizeof values), ...);
  }
  template <typename... V>
  void add_vectors(const V&... vectors) {
    (add_vector(vectors), ...);
  }
  std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 1469598103934665603ull;
};

// Every output of a simulation (times, devices, memory, transfers, kernels).
inline std::uint64_t result_digest(const SimulationResult& r) {
  Digest d;
  d.add_values(r.runtime, r.bytes_moved, r.oom, r.invalid);
  d.add(r.invalid_reason.data(), r.invalid_reason.size());
  d.add_vectors(r.device_busy, r.peak_memory, r.start, r.finish, r.device, r.critical, r.kernel);
  for (const Transfer& t : r.transfers) d.add_values(t.node, t.src, t.dst, t.bytes, t.start, t.end);  // not the padding
  return d.value();
}

// Runs `f`, which must throw E; returns the message (or fails the test).
template <typename E, typename F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception of the requested type, none was thrown";
  return "";
}

}  // namespace goenv::test

// EXPECT_HAS(text, "needle"): the text contains the needle (prints the text otherwise).
#define EXPECT_HAS(text, needle)                                                              \
  EXPECT_NE(std::string(text).find(needle), std::string::npos)                                \
      << "expected to find \"" << (needle) << "\" in: " << (text)
