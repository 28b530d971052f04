#include "core/graph.h"

#include <algorithm>
#include <boost/graph/strong_components.hpp>
#include <boost/graph/topological_sort.hpp>
#include <iterator>
#include <map>
#include <numeric>

#include "core/error.h"

namespace goenv {

const char* device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kGpu: return "gpu";
    case DeviceKind::kTpu: return "tpu";
  }
  return "?";
}

DeviceKind parse_device_kind(std::string_view name) {
  if (name == "cpu") return DeviceKind::kCpu;
  if (name == "gpu") return DeviceKind::kGpu;
  if (name == "tpu") return DeviceKind::kTpu;
  GOENV_FAIL(NotFound, "unknown device kind '" << name << "'; known: cpu, gpu, tpu");
}

NodeId GraphBuilder::add_node(NodeSpec spec) {
  GOENV_CHECK(static_cast<std::int64_t>(nodes_.size()) < kMaxNodes, InvalidArgument,
              "graph '" << name_ << "' would exceed " << kMaxNodes << " nodes; lower its size parameters");
  nodes_.push_back(std::move(spec));
  return static_cast<NodeId>(nodes_.size() - 1);
}

void GraphBuilder::add_edge(NodeId src, NodeId dst, std::int64_t bytes) {
  GOENV_CHECK(src >= 0 && src < num_nodes() && dst >= 0 && dst < num_nodes(), InvalidGraph,
              "edge " << src << " -> " << dst << " refers to a node outside [0, " << num_nodes()
                      << ")");
  GOENV_CHECK(static_cast<std::int64_t>(edges_.size()) < kMaxEdges, InvalidArgument,
              "graph '" << name_ << "' would exceed " << kMaxEdges << " edges; lower its size parameters");
  edges_.push_back({src, dst, bytes < 0 ? nodes_[src].output_bytes : bytes});
}

NodeSpec& GraphBuilder::node(NodeId id) {
  GOENV_CHECK(id >= 0 && id < num_nodes(), InvalidArgument, "node " << id << " out of range");
  return nodes_[id];
}

std::shared_ptr<const Graph> GraphBuilder::build() && {
  return Graph::from_specs(std::move(name_), std::move(nodes_), std::move(edges_));
}

namespace {

bool finite_non_negative(double x) { return std::isfinite(x) && x >= 0; }

// Adds x >= 0 to a column total, refusing a total above `limit` (checked: no signed overflow).
void add_to_total(std::int64_t& total, std::int64_t x, std::int64_t limit, const char* column) {
  GOENV_CHECK(!__builtin_add_overflow(total, x, &total) && total <= limit, InvalidGraph,
              column << " summed over the graph exceed " << limit << " bytes");
}

}  // namespace

bool is_valid_utf8(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    int extra;
    std::uint32_t code;
    if ((c & 0xE0) == 0xC0) extra = 1, code = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) extra = 2, code = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) extra = 3, code = c & 0x07;
    else return false;
    if (i + extra >= n) return false;  // cut short
    for (int k = 1; k <= extra; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return false;
      code = (code << 6) | (s[i + k] & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and values past U+10FFFF are not UTF-8.
    static constexpr std::uint32_t kMinCode[] = {0, 0x80, 0x800, 0x10000};
    if (code < kMinCode[extra] || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return false;
    i += extra + 1;
  }
  return true;
}

std::shared_ptr<const Graph> Graph::from_specs(std::string name, std::vector<NodeSpec> nodes,
                                               std::vector<std::array<std::int64_t, 3>> edges) {
  std::shared_ptr<Graph> g(new Graph());
  g->name_ = std::move(name);
  const auto n = static_cast<std::int64_t>(nodes.size());
  GOENV_CHECK(n <= kMaxNodes, InvalidGraph, "too many nodes: " << n << " (at most " << kMaxNodes << ")");
  GOENV_CHECK(static_cast<std::int64_t>(edges.size()) <= kMaxEdges, InvalidGraph,
              "too many edges: " << edges.size() << " (at most " << kMaxEdges << ")");
  // No NUL in a name: the JSON reader (cereal over RapidJSON) would cut it there.
  GOENV_CHECK(g->name_.size() <= kMaxNameBytes && is_valid_utf8(g->name_) && g->name_.find('\0') == std::string::npos,
              InvalidGraph, "the graph name is not UTF-8 text without NUL of at most " << kMaxNameBytes << " bytes");
  std::int64_t total_output_bytes = 0, total_param_bytes = 0, total_edge_bytes = 0;
  double total_flops = 0;
  std::array<double, kNumDeviceKinds> total_cost{};

  std::map<std::int32_t, std::int32_t> colocation_ids, group_ids;
  for (std::int64_t v = 0; v < n; ++v) {
    auto& s = nodes[v];
    // Named only when a check fails: building the text per node would dominate loading.
    GOENV_CHECK(s.name.size() <= kMaxNameBytes && is_valid_utf8(s.name) && s.name.find('\0') == std::string::npos,
                InvalidGraph, "node " << v << ": the name is not UTF-8 text without NUL of at most " << kMaxNameBytes
                                      << " bytes");
    const auto who = [&] { return "node " + std::to_string(v) + " ('" + s.name + "')"; };
    GOENV_CHECK(s.op_type >= 0 && s.op_type < num_op_types(), InvalidGraph,
                who() << ": op type id " << s.op_type << " out of range");
    GOENV_CHECK(finite_non_negative(s.flops), InvalidGraph,
                who() << ": flops must be finite and >= 0, got " << s.flops);
    total_flops += s.flops;
    GOENV_CHECK(total_flops <= kMaxTotalFlops, InvalidGraph, "flops summed over the graph exceed " << kMaxTotalFlops);
    GOENV_CHECK(s.output_bytes >= 0, InvalidGraph,
                who() << ": output_bytes must be >= 0, got " << s.output_bytes);
    GOENV_CHECK(s.param_bytes >= 0, InvalidGraph,
                who() << ": param_bytes must be >= 0, got " << s.param_bytes);
    add_to_total(total_output_bytes, s.output_bytes, kMaxTotalBytes, "output_bytes");
    add_to_total(total_param_bytes, s.param_bytes, kMaxTotalBytes, "param_bytes");
    GOENV_CHECK(s.allowed_kinds < (1u << kNumDeviceKinds), InvalidGraph,
                who() << ": allowed device kind mask " << int(s.allowed_kinds) << " has unknown bits");
    for (int k = 0; k < kNumDeviceKinds; ++k) {
      const double c = s.cost[k];
      GOENV_CHECK(std::isnan(c) || finite_non_negative(c), InvalidGraph,
                  who() << ": measured cost must be finite and >= 0 (or absent), got " << c);
      if (!std::isnan(c)) total_cost[k] += c;
      GOENV_CHECK(total_cost[k] <= kMaxTotalCostSeconds, InvalidGraph,
                  "measured costs summed over the graph exceed " << kMaxTotalCostSeconds << " s");
    }
    GOENV_CHECK(s.colocation >= kNone && s.group >= kNone, InvalidGraph,
                who() << ": group and colocation ids must be >= 0 or -1 (none)");
    // Dense ids, in order of first appearance: stable across save/load.
    if (s.colocation != kNone)
      s.colocation = colocation_ids.emplace(s.colocation, colocation_ids.size()).first->second;
    if (s.group != kNone) s.group = group_ids.emplace(s.group, group_ids.size()).first->second;
  }
  g->num_colocation_groups_ = static_cast<int>(colocation_ids.size());
  g->num_groups_ = static_cast<int>(group_ids.size());

  for (const auto& [src, dst, bytes] : edges) {
    GOENV_CHECK(src >= 0 && src < n && dst >= 0 && dst < n, InvalidGraph,
                "dangling edge " << src << " -> " << dst << ": nodes are [0, " << n << ")");
    GOENV_CHECK(src != dst, InvalidGraph, "self-loop on node " << src << " ('" << nodes[src].name << "')");
    GOENV_CHECK(bytes >= 0, InvalidGraph,
                "edge " << src << " -> " << dst << ": bytes must be >= 0, got " << bytes);
    add_to_total(total_edge_bytes, bytes, kMaxTotalBytes, "edge bytes");
  }
  // CSR order; a tensor consumed twice by one op is one dependency (largest bytes kept).
  if (!std::is_sorted(edges.begin(), edges.end())) std::sort(edges.begin(), edges.end());  // files are sorted
  std::vector<std::array<std::int64_t, 3>> unique_edges;
  for (const auto& e : edges) {
    if (!unique_edges.empty() && unique_edges.back()[0] == e[0] && unique_edges.back()[1] == e[1])
      unique_edges.back()[2] = std::max(unique_edges.back()[2], e[2]);
    else
      unique_edges.push_back(e);
  }

  const auto m = unique_edges.size();
  g->names_.reserve(n);
  for (auto& s : nodes) {
    g->names_.push_back(std::move(s.name));
    g->op_type_.push_back(s.op_type);
    g->flops_.push_back(s.flops);
    g->output_bytes_.push_back(s.output_bytes);
    g->param_bytes_.push_back(s.param_bytes);
    g->shapes_.push_back(std::move(s.shape));
    g->group_.push_back(s.group);
    g->colocation_.push_back(s.colocation);
    g->allowed_kinds_.push_back(s.allowed_kinds);
    g->cost_.insert(g->cost_.end(), s.cost.begin(), s.cost.end());
  }
  std::vector<std::pair<NodeId, NodeId>> pairs;
  std::vector<EdgeProperty> props;
  pairs.reserve(m);
  props.reserve(m);
  for (std::size_t i = 0; i < m; ++i) {
    const auto& [src, dst, bytes] = unique_edges[i];
    g->edge_src_.push_back(src);
    g->edge_dst_.push_back(dst);
    g->edge_bytes_.push_back(bytes);
    pairs.emplace_back(static_cast<NodeId>(src), static_cast<NodeId>(dst));
    props.push_back({static_cast<std::int32_t>(i)});
  }
  g->csr_ = Csr(boost::edges_are_unsorted_multi_pass, pairs.begin(), pairs.end(), props.begin(),
                static_cast<NodeId>(n));
  g->validate_and_index();
  return g;
}

void Graph::validate_and_index() {
  const int n = num_nodes(), m = num_edges();
  out_offsets_.assign(n + 1, 0);
  in_offsets_.assign(n + 1, 0);
  for (int e = 0; e < m; ++e) {
    ++out_offsets_[edge_src_[e] + 1];
    ++in_offsets_[edge_dst_[e] + 1];
  }
  std::partial_sum(out_offsets_.begin(), out_offsets_.end(), out_offsets_.begin());
  std::partial_sum(in_offsets_.begin(), in_offsets_.end(), in_offsets_.begin());
  in_edges_.resize(m);
  std::vector<std::int32_t> fill(in_offsets_.begin(), in_offsets_.end() - 1);
  for (int e = 0; e < m; ++e) in_edges_[fill[edge_dst_[e]]++] = e;

  try {
    std::vector<NodeId> reversed;
    boost::topological_sort(csr_, std::back_inserter(reversed));
    topo_order_.assign(reversed.rbegin(), reversed.rend());
  } catch (const boost::not_a_dag&) {
    std::vector<int> component(n);
    boost::strong_components(
        csr_, boost::make_iterator_property_map(component.begin(), boost::get(boost::vertex_index, csr_)));
    std::vector<int> size(n, 0);
    for (int c : component) ++size[c];
    std::string members;
    int shown = 0;
    for (int v = 0; v < n && shown < 5; ++v)
      if (size[component[v]] > 1) members += (shown++ ? ", " : "") + names_[v];
    GOENV_FAIL(InvalidGraph, "graph '" << name_ << "' has a cycle (a graph must be a DAG); nodes on it: "
                                       << members);
  }
  depth_.assign(n, 0);
  for (NodeId v : topo_order_)
    for (int e = out_offsets_[v]; e < out_offsets_[v + 1]; ++e)
      depth_[edge_dst_[e]] = std::max(depth_[edge_dst_[e]], depth_[v] + 1);
}

std::int64_t Graph::total_param_bytes() const {
  return std::accumulate(param_bytes_.begin(), param_bytes_.end(), std::int64_t{0});
}

double Graph::total_flops() const { return std::accumulate(flops_.begin(), flops_.end(), 0.0); }

NodeSpec Graph::node_spec(NodeId v) const {
  NodeSpec s;
  s.name = names_[v];
  s.op_type = op_type_[v];
  s.flops = flops_[v];
  s.output_bytes = output_bytes_[v];
  s.param_bytes = param_bytes_[v];
  s.shape = shapes_[v];
  s.group = group_[v];
  s.colocation = colocation_[v];
  s.allowed_kinds = allowed_kinds_[v];
  for (int k = 0; k < kNumDeviceKinds; ++k) s.cost[k] = cost_[v * kNumDeviceKinds + k];
  return s;
}

}  // namespace goenv
