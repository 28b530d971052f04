// Graph and Cluster files (core/serialization.h): exact binary and JSON round
// trips of every column, atomic file writes, and rejection of truncated,
// corrupted, mislabeled or hand-broken files; cluster presets and validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/serialization.h"
#include "core/simulator.h"
#include "tests/cpp/test_util.h"

namespace goenv {
namespace {

namespace fs = std::filesystem;
using test::error_message;
using test::op;

constexpr std::size_t kHeaderBytes = 8 + 4 + 8 + 8;  // magic, version, payload size, checksum

// Doubles compared bit for bit (NaN == NaN, 0.0 != -0.0).
bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

void expect_same_graph(const Graph& a, const Graph& b) {
  EXPECT_EQ(a.name(), b.name());
  EXPECT_EQ(a.names(), b.names());
  EXPECT_EQ(a.op_type(), b.op_type());
  EXPECT_TRUE(same_bits(a.flops(), b.flops())) << "flops differ";
  EXPECT_EQ(a.output_bytes(), b.output_bytes());
  EXPECT_EQ(a.param_bytes(), b.param_bytes());
  EXPECT_EQ(a.shapes(), b.shapes());
  EXPECT_EQ(a.group(), b.group());
  EXPECT_EQ(a.colocation(), b.colocation());
  EXPECT_EQ(a.allowed_kinds(), b.allowed_kinds());
  EXPECT_TRUE(same_bits(a.cost(), b.cost())) << "measured costs differ";
  EXPECT_EQ(a.edge_src(), b.edge_src());
  EXPECT_EQ(a.edge_dst(), b.edge_dst());
  EXPECT_EQ(a.edge_bytes(), b.edge_bytes());
  EXPECT_EQ(a.num_groups(), b.num_groups());
  EXPECT_EQ(a.num_colocation_groups(), b.num_colocation_groups());
  EXPECT_EQ(a.topological_order(), b.topological_order());
}

// Every kind of value a column can hold, including the awkward ones: NaN and
// extreme doubles, empty and dynamic (-1) shapes, names needing JSON escapes.
GraphPtr showcase_graph() {
  std::vector<NodeSpec> nodes;
  NodeSpec a = op("input \"x\"\\ \n\t é 日本", 0.1, 1, 0);
  a.op_type = op_type_id("Input");
  a.shape = {};
  nodes.push_back(a);
  NodeSpec b = op("", 1.0 / 3.0, std::numeric_limits<std::int64_t>::max() / 4, 123456789012345);
  b.shape = {-1, 3, 224, 224};
  b.group = 12;
  b.colocation = 40;
  b.allowed_kinds = 0b101;
  b.cost = {std::numeric_limits<double>::denorm_min(), kNoCost, 0.0};
  nodes.push_back(b);
  NodeSpec c = op("c", kMaxTotalFlops / 3, 0, 0);  // the largest flops a graph may sum to, inexact in binary
  c.op_type = op_type_id("Softmax");
  c.shape = {std::numeric_limits<std::int64_t>::max(), 0};
  c.group = 3;
  c.colocation = 40;
  c.cost = {kNoCost, 1e-300, 123456.789e-9};
  nodes.push_back(c);
  NodeSpec d = op("d", 5e-324, 17, 3);
  d.cost = {kNoCost, kNoCost, kNoCost};
  nodes.push_back(d);
  return Graph::from_specs("showcase \"graph\"", std::move(nodes), {{0, 1, 0}, {1, 2, 99}, {0, 3, 1}, {2, 3, 5}});
}

std::vector<GraphPtr> sample_graphs() {
  std::vector<GraphPtr> graphs = {showcase_graph(), Graph::from_specs("empty edges", {op("only", 1)}, {})};
  std::mt19937 rng(31);
  for (int i = 0; i < 15; ++i) graphs.push_back(test::random_dag(rng, 1 + 5 * i, 0.15, /*rich=*/true));
  return graphs;
}

// Replaces the body of the JSON array `"key": [ ... ]` (for hand-editing files).
std::string set_json_array(std::string json, const std::string& key, const std::string& body) {
  const std::size_t at = json.find("\"" + key + "\": [");
  EXPECT_NE(at, std::string::npos) << "no array " << key;
  if (at == std::string::npos) return json;
  const std::size_t open = json.find('[', at), close = json.find(']', open);
  return json.replace(open + 1, close - open - 1, body);
}

GraphPtr two_node_graph() {
  return Graph::from_specs("pair", {op("a", 2.0, 7), op("b", 3.0, 7)}, {{0, 1, 7}});
}

// A fresh directory under the system temp dir, removed afterwards.
class GraphFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "goenv_test_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::set<std::string> listing() const {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) names.insert(entry.path().filename().string());
    return names;
  }
  fs::path dir_;
};

// ---------------------------------------------------------------- round trips

TEST(GraphSerialization, BinaryRoundTripIsExact) {
  for (const auto& g : sample_graphs()) {
    const std::string bytes = graph_to_bytes(*g);
    EXPECT_EQ(bytes.compare(0, 8, "GOENVGRF"), 0);
    const auto back = graph_from_bytes(bytes);
    expect_same_graph(*g, *back);
    EXPECT_EQ(graph_to_bytes(*back), bytes) << "re-encoding changed the bytes";
  }
}

TEST(GraphSerialization, JsonRoundTripIsExact) {
  for (const auto& g : sample_graphs()) {
    const std::string json = graph_to_json(*g);
    const auto back = graph_from_json(json);
    expect_same_graph(*g, *back);
    EXPECT_EQ(graph_to_json(*back), json) << "re-encoding changed the text";
  }
}

TEST(GraphSerialization, JsonRoundTripsArbitraryDoublesExactly) {
  std::mt19937_64 rng(5);
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 500; ++i) {
    double x;
    do {  // random bit patterns: every mantissa, every exponent the graph limits allow
      const std::uint64_t bits = rng() & ~(std::uint64_t{1} << 63);
      std::memcpy(&x, &bits, sizeof x);
    } while (!std::isfinite(x) || x > kMaxTotalFlops / 1000);
    nodes.push_back(op("n" + std::to_string(i), x));
  }
  const auto g = Graph::from_specs("doubles", std::move(nodes), {});
  EXPECT_TRUE(same_bits(graph_from_json(graph_to_json(*g))->flops(), g->flops()));
}

TEST_F(GraphFiles, SaveAndLoadBothFormatsLeavingNoTemporaryFiles) {
  const auto g = showcase_graph();
  save_graph(*g, path("g.goenv"));
  save_graph(*g, path("g.json"));
  EXPECT_EQ(listing(), (std::set<std::string>{"g.goenv", "g.json"}));
  EXPECT_EQ(read_file(path("g.goenv")), graph_to_bytes(*g));
  EXPECT_EQ(read_file(path("g.json")), graph_to_json(*g));
  expect_same_graph(*g, *load_graph(path("g.goenv")));
  expect_same_graph(*g, *load_graph(path("g.json")));

  // Overwriting replaces the file whole.
  const auto other = two_node_graph();
  save_graph(*other, path("g.goenv"));
  EXPECT_EQ(listing(), (std::set<std::string>{"g.goenv", "g.json"}));
  expect_same_graph(*other, *load_graph(path("g.goenv")));
}

TEST_F(GraphFiles, WriteToMissingDirectoryFailsCleanly) {
  EXPECT_THROW(save_graph(*two_node_graph(), path("no/such/dir/g.goenv")), Error);
  EXPECT_TRUE(listing().empty());
  EXPECT_HAS(error_message<InvalidArgument>([&] { load_graph(path("missing.goenv")); }), "cannot open");
}

// ---------------------------------------------------------------- corrupt files

TEST(GraphSerialization, TruncatedBytesRejected) {
  const std::string bytes = graph_to_bytes(*showcase_graph());
  ASSERT_GT(bytes.size(), kHeaderBytes + 10);
  for (std::size_t cut : {std::size_t{1}, std::size_t{10}, (bytes.size() - kHeaderBytes) / 2}) {
    const std::string msg = error_message<InvalidGraph>([&] { graph_from_bytes(bytes.substr(0, bytes.size() - cut)); });
    EXPECT_HAS(msg, "truncated");
  }
  // Every prefix, down to nothing, is rejected as InvalidGraph (never a crash).
  for (std::size_t size = 0; size < bytes.size(); ++size)
    EXPECT_THROW(graph_from_bytes(bytes.substr(0, size)), InvalidGraph) << "prefix of " << size << " bytes";
  EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_bytes(bytes + "x"); }), "padded");
}

TEST_F(GraphFiles, TruncatedFileRejectedNamingThePath) {
  const std::string bytes = graph_to_bytes(*showcase_graph());
  write_file_atomic(path("cut.goenv"), bytes.substr(0, bytes.size() - 3));
  const std::string msg = error_message<InvalidGraph>([&] { load_graph(path("cut.goenv")); });
  EXPECT_HAS(msg, "truncated");
  EXPECT_HAS(msg, "cut.goenv");
}

TEST(GraphSerialization, FlippedPayloadByteFailsTheChecksum) {
  const std::string bytes = graph_to_bytes(*showcase_graph());
  for (std::size_t at : {kHeaderBytes, kHeaderBytes + 5, bytes.size() / 2, bytes.size() - 1}) {
    std::string bad = bytes;
    bad[at] = static_cast<char>(bad[at] ^ 0x20);
    EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_bytes(bad); }), "checksum");
  }
}

TEST(GraphSerialization, EverySingleByteCorruptionIsRejected) {
  const std::string bytes = graph_to_bytes(*two_node_graph());
  for (std::size_t at = 0; at < bytes.size(); ++at) {
    std::string bad = bytes;
    bad[at] = static_cast<char>(~bad[at]);
    EXPECT_THROW(graph_from_bytes(bad), InvalidGraph) << "byte " << at;
  }
}

TEST(GraphSerialization, BadMagicOrWrongKindOfFileRejected) {
  std::string bytes = graph_to_bytes(*two_node_graph());
  bytes[0] = 'X';
  EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_bytes(bytes); }), "bad magic");
  EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_bytes(""); }), "not a goenv graph file");
  const std::string cluster = cluster_to_bytes(Cluster::preset("2xgpu-pcie"));
  EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_bytes(cluster); }), "bad magic");
  EXPECT_THROW(cluster_from_bytes(graph_to_bytes(*two_node_graph())), InvalidArgument);
  EXPECT_THROW(graph_from_bytes(graph_to_json(*two_node_graph())), InvalidGraph);
}

TEST(GraphSerialization, OtherFormatVersionRejected) {
  std::string bytes = graph_to_bytes(*two_node_graph());
  const std::uint32_t future = kGraphFormatVersion + 1;
  std::memcpy(bytes.data() + 8, &future, sizeof future);
  EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_bytes(bytes); }), "version");
}

TEST(GraphSerialization, CorruptedJsonRejected) {
  const std::string json = graph_to_json(*two_node_graph());
  for (const std::string& bad : {json.substr(0, json.size() / 2), std::string("not json at all"), std::string(""),
                                 std::string("{}"), std::string("[1, 2, 3]"), std::string("{\"graph\": 5}")}) {
    EXPECT_THROW(graph_from_json(bad), InvalidGraph) << bad;
  }
  EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_json(set_json_array(json, "names", "1, 2")); }),
             "JSON");
}

// Says what is wrong in plain words, never in cereal's or rapidjson's terms.
template <class E, class F>
void expect_plain_error(F&& load, const std::string& phrase) {
  const std::string message = error_message<E>(load);
  EXPECT_HAS(message, "cannot parse JSON: ");
  EXPECT_HAS(message, phrase);
  EXPECT_EQ(message.find("rapidjson"), std::string::npos) << message;
  EXPECT_EQ(message.find("NVP"), std::string::npos) << message;
}

TEST(GraphSerialization, MalformedJsonIsNamedInPlainWords) {
  const std::string json = graph_to_json(*two_node_graph());
  const auto load = [](std::string text) { return [text] { graph_from_json(text); }; };
  expect_plain_error<InvalidGraph>(load("{\"nodes\": ["), "not valid JSON at offset 11: ");
  expect_plain_error<InvalidGraph>(load(json.substr(0, json.size() / 2)), "not valid JSON at offset");
  expect_plain_error<InvalidGraph>(load("[1, 2, 3]"), "not a goenv graph JSON (expected an object with a 'graph' field)");
  expect_plain_error<InvalidGraph>(load("{}"), "not a goenv graph JSON");
  expect_plain_error<InvalidGraph>(load("{\"graph\": 5}"), "field 'graph' has the wrong type (expected an object)");
  std::string no_names = json;
  no_names.erase(no_names.find("\"names\""), no_names.find("\"op_type\"") - no_names.find("\"names\""));
  expect_plain_error<InvalidGraph>(load(no_names), "missing field 'names'");
  expect_plain_error<InvalidGraph>(load(set_json_array(json, "op_type", "\"MatMul\", 0")),
                                   "field 'op_type' has the wrong type (expected an integer at index 0)");
  expect_plain_error<InvalidGraph>(load(set_json_array(json, "names", "1, 2")),
                                   "field 'names' has the wrong type (expected a string at index 0)");
  expect_plain_error<InvalidGraph>(load(set_json_array(json, "flops", "1.0, \"x\"")),
                                   "field 'flops' has the wrong type (expected a number at index 1)");
  std::string names_not_array = json;
  names_not_array.replace(names_not_array.find("\"names\": ["), 10, "\"names\": 5, \"x\": [");
  expect_plain_error<InvalidGraph>(load(names_not_array), "field 'names' has the wrong type (expected an array)");
}

TEST(GraphSerialization, HandEditedJsonIsRevalidated) {
  const std::string json = graph_to_json(*two_node_graph());
  // A second edge b -> a closes a cycle.
  std::string cycle = set_json_array(json, "edge_src", "0, 1");
  cycle = set_json_array(cycle, "edge_dst", "1, 0");
  cycle = set_json_array(cycle, "edge_bytes", "7, 7");
  EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_json(cycle); }), "cycle");
  EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_json(set_json_array(json, "flops", "-2.0, 3.0")); }),
             "flops");
  EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_json(set_json_array(json, "edge_dst", "5")); }),
             "dangling");
  EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_json(set_json_array(json, "flops", "2.0")); }),
             "inconsistent");
  EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_json(set_json_array(json, "shape_offsets", "0, 5, 1")); }),
             "shape");
  EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_json(set_json_array(json, "cost", "NaN, NaN, NaN, NaN, -1.0, NaN")); }),
             "measured cost");
}

// ---------------------------------------------------------------- clusters

void expect_same_cluster(const Cluster& a, const Cluster& b) {
  EXPECT_EQ(a.name(), b.name());
  ASSERT_EQ(a.num_devices(), b.num_devices());
  for (int d = 0; d < a.num_devices(); ++d) {
    const Device &x = a.device(d), &y = b.device(d);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.peak_flops, y.peak_flops);
    EXPECT_EQ(x.memory_bandwidth, y.memory_bandwidth);
    EXPECT_EQ(x.memory_bytes, y.memory_bytes);
    EXPECT_EQ(x.launch_overhead, y.launch_overhead);
    EXPECT_EQ(x.op_gap, y.op_gap);
  }
  ASSERT_EQ(a.links().size(), b.links().size());
  for (std::size_t i = 0; i < a.links().size(); ++i) {
    const Link &x = a.links()[i], &y = b.links()[i];
    EXPECT_EQ(x.src, y.src);
    EXPECT_EQ(x.dst, y.dst);
    EXPECT_EQ(x.bandwidth, y.bandwidth);
    EXPECT_EQ(x.latency, y.latency);
    EXPECT_EQ(x.channel, y.channel);
  }
  EXPECT_EQ(a.num_channels(), b.num_channels());
}

Cluster odd_cluster() {
  Device cpu = test::test_device(DeviceKind::kCpu, "host \"cpu\"");
  cpu.op_gap = 5.7e-6;
  cpu.launch_overhead = 1.0 / 3.0;
  Device tpu = test::test_device(DeviceKind::kTpu, "tpu");
  tpu.memory_bytes = 3.0e10 + 0.5;
  return test::test_cluster({cpu, tpu, test::test_device()}, 7.6e9, 25e-6, [](int s, int d) { return (s + d) % 2; });
}

TEST(ClusterSerialization, EveryPresetAndACustomClusterRoundTrip) {
  std::vector<Cluster> clusters = {odd_cluster()};
  for (const std::string& name : Cluster::preset_names()) clusters.push_back(Cluster::preset(name));
  for (const Cluster& c : clusters) {
    SCOPED_TRACE(c.name());
    const std::string bytes = cluster_to_bytes(c);
    EXPECT_EQ(bytes.compare(0, 8, "GOENVCLU"), 0);
    expect_same_cluster(c, cluster_from_bytes(bytes));
    expect_same_cluster(c, cluster_from_json(cluster_to_json(c)));
  }
}

TEST(ClusterSerialization, CorruptClusterFilesRejected) {
  const std::string bytes = cluster_to_bytes(odd_cluster());
  std::string flipped = bytes;
  flipped[bytes.size() - 2] ^= 1;
  EXPECT_HAS(error_message<InvalidArgument>([&] { cluster_from_bytes(flipped); }), "checksum");
  EXPECT_THROW(cluster_from_bytes(bytes.substr(0, bytes.size() - 1)), InvalidArgument);
  const std::string json = cluster_to_json(odd_cluster());
  EXPECT_THROW(cluster_from_json(json.substr(0, json.size() / 3)), InvalidArgument);
  // A hand-edited link bandwidth of zero is caught by the cluster's validation.
  EXPECT_HAS(error_message<InvalidArgument>(
                 [&] { cluster_from_json(set_json_array(json, "link_bandwidth", "1.0, 1.0, 0.0, 1.0, 1.0, 1.0")); }),
             "bandwidth");
}

TEST(ClusterSerialization, MalformedJsonIsNamedInPlainWords) {
  const std::string json = cluster_to_json(odd_cluster());
  const auto load = [](std::string text) { return [text] { cluster_from_json(text); }; };
  expect_plain_error<InvalidArgument>(load("{"), "not valid JSON at offset 1: ");
  expect_plain_error<InvalidArgument>(load("[]"), "not a goenv cluster JSON (expected an object with a 'cluster' field)");
  expect_plain_error<InvalidArgument>(load("{\"graph\": {}}"), "not a goenv cluster JSON");
  expect_plain_error<InvalidArgument>(load("{\"cluster\": {\"version\": 2}}"), "missing field 'name'");
  expect_plain_error<InvalidArgument>(load(set_json_array(json, "device_names", "1, 2, 3")),
                                      "field 'device_names' has the wrong type (expected a string at index 0)");
  expect_plain_error<InvalidArgument>(load(set_json_array(json, "link_src", "-1.5")),
                                      "field 'link_src' has the wrong type (expected an integer at index 0)");
}

TEST(ClusterPresets, UnknownPresetThrowsNotFoundListingTheKnownOnes) {
  const std::string msg = error_message<NotFound>([] { Cluster::preset("3xgpu-carrier-pigeon"); });
  EXPECT_HAS(msg, "3xgpu-carrier-pigeon");
  EXPECT_HAS(msg, "2xgpu-pcie");
}

TEST(ClusterPresets, DocumentedPresetsExist) {
  const auto names = Cluster::preset_names();
  for (const char* name : {"2xgpu-pcie", "4xgpu-nvlink", "8xgpu-nvlink", "cpu+2xgpu", "placeto-k80"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  for (const std::string& name : names) {
    const Cluster c = Cluster::preset(name);
    EXPECT_EQ(c.name(), name);
    for (int s = 0; s < c.num_devices(); ++s)
      for (int d = 0; d < c.num_devices(); ++d)
        if (s != d) {  // every ordered pair has its own link
          EXPECT_EQ(c.link(s, d).src, s);
          EXPECT_EQ(c.link(s, d).dst, d);
        }
  }
  const Cluster mixed = Cluster::preset("cpu+2xgpu");
  ASSERT_EQ(mixed.num_devices(), 3);
  EXPECT_EQ(mixed.device(0).kind, DeviceKind::kCpu);
  EXPECT_EQ(mixed.device(1).kind, DeviceKind::kGpu);
}

TEST(ClusterPresets, PlacetoK80ReproducesThePublishedConstants) {
  // docs/simulator.md: 5.7 us gap after every op with nonzero cost, 7,600 bytes/us plus
  // 25 us per transfer, one outgoing bus per source device.
  const Cluster c = Cluster::preset("placeto-k80");
  ASSERT_GE(c.num_devices(), 2);
  for (const Device& d : c.devices()) EXPECT_DOUBLE_EQ(d.op_gap, 5.7e-6);
  for (const Link& l : c.links()) {
    EXPECT_DOUBLE_EQ(l.bandwidth, 7600e6);
    EXPECT_DOUBLE_EQ(l.latency, 25e-6);
    EXPECT_EQ(l.channel, c.link(l.src, (l.src + 1) % c.num_devices()).channel);  // shared by all of src's links
  }
  EXPECT_NE(c.link(0, 1).channel, c.link(1, 0).channel);
  EXPECT_DOUBLE_EQ(c.transfer_time(0, 1, 7600), 26e-6);
}

TEST(ClusterValidation, BadClustersThrowInvalidArgument) {
  const Device ok = test::test_device();
  const auto cluster_error = [](std::vector<Device> devices, std::vector<Link> links) {
    return error_message<InvalidArgument>([&] { Cluster("bad", devices, links); });
  };
  EXPECT_HAS(cluster_error({ok, ok}, {{0, 1, 1e3, 0, 0}}), "no link 1 -> 0");
  EXPECT_HAS(cluster_error({ok, ok}, {{0, 1, 0, 0, 0}, {1, 0, 1e3, 0, 1}}), "bandwidth");
  EXPECT_HAS(cluster_error({ok, ok}, {{0, 1, 1e3, -1, 0}, {1, 0, 1e3, 0, 1}}), "latency");
  EXPECT_HAS(cluster_error({ok, ok}, {{0, 1, 1e3, 0, -1}, {1, 0, 1e3, 0, 1}}), "channel");
  EXPECT_HAS(cluster_error({ok, ok}, {{0, 1, 1e3, 0, 0}, {1, 0, 1e3, 0, 1}, {0, 1, 1e3, 0, 0}}), "two links");
  EXPECT_HAS(cluster_error({ok, ok}, {{0, 0, 1e3, 0, 0}}), "not between two devices");
  EXPECT_HAS(cluster_error({ok, ok}, {{0, 2, 1e3, 0, 0}}), "not between two devices");
  EXPECT_HAS(cluster_error({}, {}), "no devices");
  for (auto breaker : std::vector<void (*)(Device&)>{
           [](Device& d) { d.peak_flops = 0; }, [](Device& d) { d.memory_bandwidth = -1; },
           [](Device& d) { d.memory_bytes = std::numeric_limits<double>::quiet_NaN(); },
           [](Device& d) { d.peak_flops = std::numeric_limits<double>::infinity(); },
           [](Device& d) { d.launch_overhead = -1e-6; }, [](Device& d) { d.op_gap = -1; }}) {
    Device bad = ok;
    breaker(bad);
    EXPECT_THROW(Cluster("bad", {bad}, {}), InvalidArgument);
  }
  EXPECT_NO_THROW(Cluster("one", {ok}, {}));  // a single device needs no links
}

TEST(Fnv1a, KnownVectors) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

}  // namespace
}  // namespace goenv
