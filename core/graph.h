// An immutable computation graph: ops (nodes) and data dependencies (edges),
// stored as a Boost.Graph compressed-sparse-row graph plus struct-of-arrays node
// and edge attributes, so Python gets zero-copy numpy views of every column.
//
// Units: `flops` counts floating-point operations, a multiply-accumulate being
// 2 FLOPs; bytes are bytes; `cost` is seconds. Graphs are built with
// GraphBuilder, validated once (DAG, finite non-negative costs, edges in range)
// and then shared read-only (std::shared_ptr<const Graph>) by every env.
#pragma once

#include <array>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/device_kind.h"
#include "core/op_types.h"

namespace goenv {

using NodeId = std::int32_t;

// Documented maxima of an accepted graph (docs/limits.md). With them every
// sum the core forms (fused kernels, totals, the simulator's times and memory)
// stays finite and inside int64, whatever file or array the graph came from.
// Builders stop at the same counts as they add nodes, before memory grows further.
inline constexpr std::int64_t kMaxNodes = std::int64_t{1} << 21;          // 2,097,152
inline constexpr std::int64_t kMaxEdges = std::int64_t{1} << 23;          // 8,388,608
// Totals bound every part (a fused kernel sums its members, so it stays inside too).
inline constexpr std::int64_t kMaxTotalBytes = std::int64_t{1} << 62;     // output, param, edge bytes: each column's sum
inline constexpr double kMaxTotalFlops = 1e24;                            // flops summed over the graph
inline constexpr double kMaxTotalCostSeconds = 1e9;                       // measured cost, per kind, summed
inline constexpr std::size_t kMaxNameBytes = 4096;                        // node and graph names (UTF-8)

// True when `text` is well-formed UTF-8 (names reach Python as str).
bool is_valid_utf8(const std::string& text);
inline constexpr std::int32_t kNone = -1;
inline constexpr double kNoCost = std::numeric_limits<double>::quiet_NaN();

// Everything a builder says about one op.
struct NodeSpec {
  std::string name;
  int op_type = 0;                    // id in op_types()
  double flops = 0;                   // FLOPs (a multiply-accumulate = 2)
  std::int64_t output_bytes = 0;      // bytes of the op's output tensor(s)
  std::int64_t param_bytes = 0;       // resident weights owned by the op
  std::vector<std::int64_t> shape;    // output shape
  std::int32_t group = kNone;         // layer / stage id (expert placements)
  std::int32_t colocation = kNone;    // nodes sharing an id must share a device
  std::uint8_t allowed_kinds = 0;     // bitmask over DeviceKind; 0 = any
  std::array<double, kNumDeviceKinds> cost = {kNoCost, kNoCost, kNoCost};  // measured seconds per kind
};

class Graph;

// Collects nodes and edges, then validates and freezes them into a Graph.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "graph") : name_(std::move(name)) {}
  NodeId add_node(NodeSpec spec);
  // bytes < 0 means "the producer's output_bytes".
  void add_edge(NodeId src, NodeId dst, std::int64_t bytes = -1);
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  NodeSpec& node(NodeId id);
  std::shared_ptr<const Graph> build() &&;

 private:
  friend class Graph;
  std::string name_;
  std::vector<NodeSpec> nodes_;
  std::vector<std::array<std::int64_t, 3>> edges_;  // src, dst, bytes
};

class Graph {
 public:
  struct EdgeProperty {
    std::int32_t index = 0;
  };
  using Csr = boost::compressed_sparse_row_graph<boost::bidirectionalS, boost::no_property,
                                                 EdgeProperty, boost::no_property, NodeId,
                                                 std::int32_t>;

  // Builds and validates. Throws InvalidGraph naming the offending node/edge.
  static std::shared_ptr<const Graph> from_specs(std::string name, std::vector<NodeSpec> nodes,
                                                 std::vector<std::array<std::int64_t, 3>> edges);

  const std::string& name() const { return name_; }
  int num_nodes() const { return static_cast<int>(flops_.size()); }
  int num_edges() const { return static_cast<int>(edge_src_.size()); }
  const Csr& csr() const { return csr_; }

  // Node columns (index = NodeId).
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<std::int32_t>& op_type() const { return op_type_; }
  const std::vector<double>& flops() const { return flops_; }
  const std::vector<std::int64_t>& output_bytes() const { return output_bytes_; }
  const std::vector<std::int64_t>& param_bytes() const { return param_bytes_; }
  const std::vector<std::vector<std::int64_t>>& shapes() const { return shapes_; }
  const std::vector<std::int32_t>& group() const { return group_; }
  const std::vector<std::int32_t>& colocation() const { return colocation_; }
  const std::vector<std::uint8_t>& allowed_kinds() const { return allowed_kinds_; }
  // Measured cost in seconds, row-major (num_nodes, kNumDeviceKinds); NaN = none.
  const std::vector<double>& cost() const { return cost_; }
  FusibleKind fusible(NodeId v) const { return op_type_info(op_type_[v]).kind; }
  bool allows(NodeId v, DeviceKind kind) const {
    return allowed_kinds_[v] == 0 || (allowed_kinds_[v] >> static_cast<int>(kind)) & 1;
  }

  // Edge columns in CSR order (sorted by source, then destination), index = edge id.
  const std::vector<std::int64_t>& edge_src() const { return edge_src_; }
  const std::vector<std::int64_t>& edge_dst() const { return edge_dst_; }
  const std::vector<std::int64_t>& edge_bytes() const { return edge_bytes_; }

  // Adjacency as flat CSR offsets into edge ids (out: by source; in: by destination).
  const std::vector<std::int32_t>& out_offsets() const { return out_offsets_; }
  const std::vector<std::int32_t>& in_offsets() const { return in_offsets_; }
  const std::vector<std::int32_t>& in_edges() const { return in_edges_; }  // edge ids by dst

  const std::vector<NodeId>& topological_order() const { return topo_order_; }
  const std::vector<std::int32_t>& depth() const { return depth_; }  // longest path from a source
  int num_colocation_groups() const { return num_colocation_groups_; }  // ids are 0..n-1
  int num_groups() const { return num_groups_; }
  std::int64_t total_param_bytes() const;
  double total_flops() const;

  NodeSpec node_spec(NodeId v) const;  // a copy, for rebuilding or serializing

 private:
  Graph() = default;
  void validate_and_index();

  std::string name_;
  Csr csr_;
  std::vector<std::string> names_;
  std::vector<std::int32_t> op_type_;
  std::vector<double> flops_;
  std::vector<std::int64_t> output_bytes_, param_bytes_;
  std::vector<std::vector<std::int64_t>> shapes_;
  std::vector<std::int32_t> group_, colocation_;
  std::vector<std::uint8_t> allowed_kinds_;
  std::vector<double> cost_;
  std::vector<std::int64_t> edge_src_, edge_dst_, edge_bytes_;
  std::vector<std::int32_t> out_offsets_, in_offsets_, in_edges_;
  std::vector<NodeId> topo_order_;
  std::vector<std::int32_t> depth_;
  int num_colocation_groups_ = 0;
  int num_groups_ = 0;
};

using GraphPtr = std::shared_ptr<const Graph>;

}  // namespace goenv
