// Regression tests for hardening: every hostile file, state or
// option ends in a clean goenv exception or a correct, finite result.
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/fusion.h"
#include "core/json_scan.h"
#include "core/serialization.h"
#include "envs/registry.h"
#include "tests/cpp/test_util.h"

namespace goenv {
namespace {

using test::error_message;
using test::op;

GraphPtr chain(int n, std::int64_t bytes = 1000) {
  std::vector<NodeSpec> nodes;
  std::vector<std::array<std::int64_t, 3>> edges;
  for (int i = 0; i < n; ++i) {
    NodeSpec s = op("n" + std::to_string(i), 1e9, bytes, 100);
    if (i % 2) s.op_type = op_type_id("Add");  // elementwise: fusible
    nodes.push_back(s);
    if (i) edges.push_back({i - 1, i, bytes});
  }
  return Graph::from_specs("chain", std::move(nodes), std::move(edges));
}

// Replaces the 8 bytes at `offset` of a graph file's payload and re-seals the
// envelope (a checksum that matches: only the content checks can catch it).
std::string with_u64_at(std::string file, std::size_t payload_offset, std::uint64_t value) {
  constexpr std::size_t header = 28;
  std::memcpy(file.data() + header + payload_offset, &value, 8);
  const std::uint64_t sum = checksum64(std::string_view(file).substr(header));
  std::memcpy(file.data() + 20, &sum, 8);
  return file;
}

long max_rss_kb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

bool all_finite(const std::vector<float>& values) {
  return std::all_of(values.begin(), values.end(), [](float x) { return std::isfinite(x); });
}

// Defect 1: recursion in the JSON parser overflowed the stack.
TEST(Hardening, DeeplyNestedJsonIsRefusedNotACrash) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_json(deep); }), "nested deeper");
  const std::string deep_object = "{\"graph\":" + std::string(100000, '[') + "}";
  EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_json(deep_object); }), "nested deeper");
  // Brackets inside strings do not count; a normal file still loads.
  EXPECT_EQ(graph_from_json(graph_to_json(*chain(3)))->num_nodes(), 3);
}

TEST(Hardening, JsonScanCountsValuesAndStopsAtTheFirstTooDeepBracket) {
  const JsonScan flat = scan_json(R"({"a": [1, 2, 3], "b": "x,y:[{\"z"})", 2);
  EXPECT_FALSE(flat.too_deep);
  EXPECT_EQ(flat.values, 5u);  // two ':' and three ',' outside strings; those in the string do not count
  const JsonScan deep = scan_json("[[[[1]]]]", 3);
  EXPECT_TRUE(deep.too_deep);
  EXPECT_EQ(deep.at, 3u);
  EXPECT_FALSE(scan_json("[[[1]]]", 3).too_deep);
}

TEST(Hardening, JsonArrayLengthsCountTheMembersOfAnObjectAtADepth) {
  const auto lengths =
      json_array_lengths(R"({"graph": {"names": ["a,b", "", "]"], "flops": [], "shape": [[1, 2], [3]], "x": 1}})", 2);
  EXPECT_EQ(lengths.at("names"), 3u);  // commas and brackets inside strings do not count
  EXPECT_EQ(lengths.at("flops"), 0u);
  EXPECT_EQ(lengths.at("shape"), 2u);  // nested arrays are one element each
  EXPECT_EQ(lengths.count("x"), 0u);
  EXPECT_TRUE(json_array_lengths("[1, 2]", 2).empty());
}

TEST(Hardening, GraphJsonWhoseColumnsDisagreeIsRefusedBeforeItIsParsed) {
  std::string json = graph_to_json(*chain(3));
  const std::size_t names = json.find("\"names\": [");
  ASSERT_NE(names, std::string::npos);
  json.insert(names + 10, "\"\", ");  // a fourth name for three nodes
  EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_json(json); }), "inconsistent lengths");
  EXPECT_EQ(graph_from_json(graph_to_json(*chain(3)))->num_nodes(), 3);
}

TEST(Hardening, ClusterParseErrorsAreInvalidArgumentNotInvalidGraph) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  for (const std::string& text : {deep, std::string("{"), std::string("[1, 2]")}) {
    try {
      cluster_from_json(text);
      ADD_FAILURE() << "accepted " << text.substr(0, 20);
    } catch (const InvalidGraph& e) {
      ADD_FAILURE() << "a cluster error raised InvalidGraph: " << e.what();
    } catch (const InvalidArgument&) {
    }
  }
  const Cluster c = Cluster::preset("4xgpu-nvlink");
  EXPECT_EQ(cluster_from_json(cluster_to_json(c)).num_devices(), 4);
  EXPECT_EQ(cluster_from_bytes(cluster_to_bytes(c)).num_devices(), 4);
}

// Defect 2: a count read from the file was allocated before it was checked.
TEST(Hardening, HugeCountsFailBeforeAllocating) {
  const GraphPtr g = chain(4);
  const std::string file = graph_to_bytes(*g);
  // Payload: endianness u8, version u32, name (u64 size + bytes), names (u64 count ...).
  const std::size_t names_count = 1 + 4 + 8 + g->name().size();
  const long before = max_rss_kb();
  for (std::uint64_t count : {std::uint64_t{1} << 28, std::uint64_t{1} << 40, ~std::uint64_t{0}}) {
    const std::string corrupt = with_u64_at(file, names_count, count);
    EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_bytes(corrupt); }), "corrupt size");
    EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_bytes(with_u64_at(file, 5, count)); }), "corrupt size");
  }
  EXPECT_LT(max_rss_kb() - before, 64 * 1024) << "a failed load grew the process by more than 64 MB";
  // Trailing bytes after the record are corruption too.
  std::string padded = file + std::string(8, '\0');
  const std::uint64_t size = padded.size() - 28, sum = checksum64(std::string_view(padded).substr(28));
  std::memcpy(padded.data() + 12, &size, 8);
  std::memcpy(padded.data() + 20, &sum, 8);
  EXPECT_HAS(error_message<InvalidGraph>([&] { graph_from_bytes(padded); }), "unexpected bytes");
}

TEST(Hardening, OnlyRegularFilesAreRead) {
  EXPECT_HAS(error_message<InvalidArgument>([] { load_graph("/dev/zero"); }), "not a regular file");
  EXPECT_HAS(error_message<InvalidArgument>([] { load_graph("/tmp"); }), "not a regular file");
  EXPECT_HAS(error_message<InvalidArgument>([] { load_graph("/no/such/file.goenv"); }), "cannot open");
}

// Issue 23: a save replaced a FIFO or device node (as root, /dev/zero) with a regular file.
TEST(Hardening, OnlyRegularFilesAreReplaced) {
  const GraphPtr g = chain(3);
  char folder[] = "/tmp/goenv-save-XXXXXX";
  ASSERT_NE(::mkdtemp(folder), nullptr);
  const std::string dir = folder, fifo = dir + "/fifo", file = dir + "/g.goenv", link = dir + "/link";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_HAS(error_message<InvalidArgument>([&] { save_graph(*g, fifo); }), "a FIFO, not a regular file");
  // A device node of our own (/dev/null's numbers; root only): a regression replaces it, not /dev/null.
  const std::string device = dir + "/device";
  if (::mknod(device.c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0)
    EXPECT_HAS(error_message<InvalidArgument>([&] { save_graph(*g, device); }), "a character device");
  EXPECT_HAS(error_message<InvalidArgument>([&] { save_graph(*g, dir); }), "a directory");
  EXPECT_HAS(error_message<InvalidArgument>([&] { load_graph(fifo); }), "not a regular file (a FIFO)");
  struct stat info {};
  ASSERT_EQ(::lstat(fifo.c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
  save_graph(*g, file);  // a new path, then over a regular file through a link (the link stays)
  ASSERT_EQ(::symlink(file.c_str(), link.c_str()), 0);
  save_graph(*g, link);
  ASSERT_EQ(::lstat(link.c_str(), &info), 0);
  EXPECT_TRUE(S_ISLNK(info.st_mode));
  EXPECT_EQ(load_graph(file)->num_nodes(), 3);
  for (const std::string& p : {fifo, file, link, device}) std::remove(p.c_str());
  ::rmdir(folder);
}

// Defect 3: names that are not UTF-8 broke every Python accessor.
TEST(Hardening, NamesMustBeUtf8) {
  EXPECT_TRUE(is_valid_utf8("plain/ascii:0"));
  EXPECT_TRUE(is_valid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  for (const char* bad : {"\xff", "\xc3", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "a\x80"})
    EXPECT_FALSE(is_valid_utf8(bad)) << bad;
  std::vector<NodeSpec> nodes = {op("ok", 1), op("bad\xff", 1)};
  EXPECT_HAS(error_message<InvalidGraph>([&] { Graph::from_specs("g", nodes, {}); }), "node 1: the name is not UTF-8");
  EXPECT_HAS(error_message<InvalidGraph>([&] { Graph::from_specs("g\xfe", {op("a", 1)}, {}); }), "graph name");
  std::vector<Device> devices = {test::test_device()};
  devices[0].name = "\xff";
  EXPECT_HAS(error_message<InvalidArgument>([&] { Cluster("c", devices, {}); }), "not UTF-8");
}

// Defect 4: a graph of zero-cost ops had initial runtime 0: reward -inf/NaN.
TEST(Hardening, ZeroTimeGraphGivesFiniteRewardsAndObservations) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 4; ++i) {
    NodeSpec s = op("z" + std::to_string(i), 0, 1000);
    s.cost = {0, 0, 0};  // measured: takes no time at all
    nodes.push_back(s);
  }
  const GraphPtr g = Graph::from_specs("zero", nodes, {{0, 1, 1000}, {1, 2, 1000}, {2, 3, 1000}});
  Cluster cluster = test::test_cluster(2, test::test_device(), 1e3, 1e-3);
  for (const std::string& task : task_names()) {
    auto env = make_env_on_graph(task, g, cluster);
    DynamicObservation obs = env->reset(0);
    EXPECT_EQ(env->initial_runtime(), 0.0);
    EXPECT_TRUE(all_finite(obs.globals) && all_finite(obs.node_state)) << task;
    std::vector<std::vector<std::int64_t>> parts;
    for (std::size_t h = 0; h < env->heads().size(); ++h) parts.push_back({0, 1, 0, 1});
    std::vector<const std::int64_t*> action;
    for (auto& p : parts) action.push_back(p.data());
    StepResult r = env->step(action);
    EXPECT_TRUE(std::isfinite(r.reward)) << task << ": reward " << r.reward;
    EXPECT_TRUE(std::isfinite(r.info.speedup)) << task;
    EXPECT_TRUE(all_finite(r.observation.globals) && all_finite(r.observation.node_state)) << task;
  }
}

// Defect 5: fused kernels summed int64 bytes without a bound (signed overflow).
TEST(Hardening, ByteTotalsAreBoundedSoFusionCannotOverflow) {
  const std::int64_t half = std::numeric_limits<std::int64_t>::max() / 2 + 1;
  std::vector<NodeSpec> nodes = {op("a", 1, half), op("b", 1, half)};
  EXPECT_HAS(error_message<InvalidGraph>([&] { Graph::from_specs("g", nodes, {{0, 1, 1}}); }), "output_bytes summed");
  nodes = {op("a", 1, 1, std::numeric_limits<std::int64_t>::max()), op("b", 1, 1, 1)};
  EXPECT_HAS(error_message<InvalidGraph>([&] { Graph::from_specs("g", nodes, {}); }), "param_bytes summed");
  nodes = {op("a", 1), op("b", 1)};
  EXPECT_HAS(error_message<InvalidGraph>([&] {
    Graph::from_specs("g", nodes, {{0, 1, std::numeric_limits<std::int64_t>::max()}, {0, 1, 2}});
  }), "edge bytes summed");
  nodes = {op("a", 1e300), op("b", 1e300)};
  EXPECT_HAS(error_message<InvalidGraph>([&] { Graph::from_specs("g", nodes, {}); }), "flops summed");
  // At the limit every kernel sum still fits: fuse everything into one kernel.
  std::vector<NodeSpec> big;
  for (int i = 0; i < 4; ++i) {
    NodeSpec s = op("e" + std::to_string(i), 1, kMaxTotalBytes / 4, kMaxTotalBytes / 4);
    s.op_type = op_type_id("Add");
    big.push_back(s);
  }
  const GraphPtr g = Graph::from_specs("big", big, {{0, 1, 1}, {1, 2, 1}, {2, 3, 1}});
  const std::vector<std::int32_t> placement(4, 0), priority(4, 1);
  const FusionPlan plan = plan_fusion(*g, placement.data(), priority.data(), 16);
  EXPECT_EQ(plan.num_groups, 1);
  const GraphPtr kernels = contract(*g, plan);
  EXPECT_EQ(kernels->param_bytes()[0], kMaxTotalBytes);
}

TEST(Hardening, ClusterRatesAndCountsAreBounded) {
  auto with = [](auto change) {
    std::vector<Device> devices = {test::test_device(), test::test_device()};
    std::vector<Link> links = {{0, 1, 1e3, 0, 0}, {1, 0, 1e3, 0, 1}};
    change(devices, links);
    Cluster("c", devices, links);
  };
  EXPECT_THROW(with([](auto& d, auto&) { d[0].peak_flops = 1e-300; }), InvalidArgument);
  EXPECT_THROW(with([](auto& d, auto&) { d[0].launch_overhead = 1e300; }), InvalidArgument);
  EXPECT_THROW(with([](auto&, auto& l) { l[0].bandwidth = 1e-300; }), InvalidArgument);
  EXPECT_THROW(with([](auto&, auto& l) { l[0].channel = std::numeric_limits<int>::max(); }), InvalidArgument);
  EXPECT_THROW(with([](auto&, auto& l) { l.push_back(l[0]); l.push_back(l[0]); l.push_back(l[0]); }),
               InvalidArgument);
  EXPECT_NO_THROW(with([](auto&, auto&) {}));
  EXPECT_HAS(error_message<InvalidArgument>([] {
    Cluster("c", std::vector<Device>(kMaxDevices + 1, test::test_device()), {});
  }), "devices");
}

// Defect 8: unbounded levels overflowed the mask width and allocated gigabytes.
TEST(Hardening, EnvOptionsAreBounded) {
  const GraphPtr g = chain(6);
  const Cluster cluster = test::test_cluster(2);
  EnvConfig c;
  c.priority_levels = std::numeric_limits<int>::max();
  EXPECT_HAS(error_message<InvalidArgument>([&] { make_env_on_graph("joint", g, cluster, c); }), "priority_levels");
  c = {};
  c.fusion_levels = 1 << 20;
  EXPECT_HAS(error_message<InvalidArgument>([&] { make_env_on_graph("fusion", g, cluster, c); }), "fusion_levels");
  c = {};
  c.invalid_penalty = -1e300;
  EXPECT_HAS(error_message<InvalidArgument>([&] { make_env_on_graph("placement", g, cluster, c); }), "invalid_penalty");
  c = {};
  c.initial_priority.assign(6, 1e300);
  EXPECT_HAS(error_message<InvalidArgument>([&] { make_env_on_graph("placement", g, cluster, c); }), "priorit");
  c = {};
  c.priority_levels = kMaxLevels;
  c.fusion_levels = kMaxLevels;
  EXPECT_EQ(make_env_on_graph("joint", g, cluster, c)->action_mask_width(), 2 + 2 * kMaxLevels);
}

TEST(Hardening, NodeModeStepCounterDoesNotOverflow) {
  EnvConfig c;
  c.decision_mode = "node";
  c.horizon = std::numeric_limits<int>::max();
  auto env = make_env_on_graph("placement", chain(6), test::test_cluster(2), c);
  EXPECT_EQ(env->total_steps(), std::int64_t{std::numeric_limits<int>::max()} * 6);
  env->reset(0);
  std::int64_t device = 1;
  StepResult r = env->step({&device});
  EXPECT_FALSE(r.terminated);
  EXPECT_TRUE(all_finite(r.observation.globals));
}

std::unique_ptr<Env> stepped_env(const std::string& task, int steps, EnvConfig c = {}) {
  c.horizon = 8;
  auto env = make_env_on_graph(task, chain(6), test::test_cluster(2), c);
  env->reset(0);
  for (int s = 0; s < steps; ++s) {
    std::vector<std::vector<std::int64_t>> parts;
    for (std::size_t h = 0; h < env->heads().size(); ++h) {
      std::vector<std::int64_t> values(env->node_mode() ? 1 : 6);
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = (s + i) % 2;
      parts.push_back(values);
    }
    std::vector<const std::int64_t*> action;
    for (auto& p : parts) action.push_back(p.data());
    env->step(action);
  }
  return env;
}

// Defect 7: a never-reset env's snapshot could not be restored (pickling failed).
TEST(Hardening, NeverResetStateRoundTrips) {
  auto env = make_env_on_graph("joint", chain(6), test::test_cluster(2));
  const std::string fresh = env->get_state();
  auto other = stepped_env("joint", 2);
  other->set_state(fresh);
  EXPECT_FALSE(other->started());
  EXPECT_EQ(other->get_state(), fresh);
  EXPECT_THROW(other->step({nullptr, nullptr, nullptr}), ResetNeeded);
}

// A snapshot closes with a checksum: every single bit flip is refused, nothing restored.
TEST(Hardening, EveryBitFlipOfAStateIsRefusedByItsChecksum) {
  auto env = stepped_env("joint", 3);
  const std::string good = env->get_state();
  auto target = stepped_env("joint", 0);
  const std::string before = target->get_state();
  for (std::size_t bit = 0; bit < good.size() * 8; ++bit) {
    std::string flipped = good;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    try {
      target->set_state(flipped);
      ADD_FAILURE() << "bit " << bit << " accepted";
    } catch (const InvalidAction& e) {
      ADD_FAILURE() << "bit " << bit << ": InvalidAction for a state: " << e.what();
    } catch (const InvalidArgument&) {
    }
  }
  EXPECT_EQ(target->get_state(), before);
}

// A version-3 state (no checksum) is still read; the same bytes as version 4 without the checksum.
std::string as_version_3(std::string state) {
  state.resize(state.size() - 8);
  const std::uint32_t three = 3;
  std::memcpy(state.data() + 1, &three, 4);  // after the endianness byte
  return state;
}

// Behind the checksum, every field is checked: a flip in a state that carries no checksum (or a
// hostile edit that reseals it) is refused or yields a valid state, never InvalidAction.
TEST(Hardening, EveryBitFlipOfAStateWithoutChecksumIsRefusedOrValid) {
  for (const std::string& task : {std::string("joint"), std::string("scheduling")}) {
    for (const std::string mode : {"graph", "node"}) {
      EnvConfig c;
      c.decision_mode = mode;
      auto env = stepped_env(task, 3, c);
      const std::string good = env->get_state();
      const std::string old = as_version_3(good);
      auto target = stepped_env(task, 0, c);
      target->set_state(old);
      EXPECT_EQ(target->get_state(), good);  // read as version 3, written as version 4
      int accepted = 0;
      for (std::size_t bit = 0; bit < old.size() * 8; ++bit) {
        std::string flipped = old;
        flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
        try {
          target->set_state(flipped);
        } catch (const InvalidAction& e) {
          ADD_FAILURE() << "bit " << bit << ": InvalidAction for a state: " << e.what();
          continue;
        } catch (const InvalidArgument&) {
          continue;
        }
        ++accepted;
        // Accepted: the state is valid: observations finite, it round-trips, it steps.
        DynamicObservation obs;
        obs.node_state.resize(6 * node_state_dim(2));
        obs.action_mask.resize(6 * target->action_mask_width());
        obs.globals.resize(global_names().size());
        target->observe_into(obs.node_state.data(), obs.action_mask.data(), obs.globals.data());
        EXPECT_TRUE(all_finite(obs.globals) && all_finite(obs.node_state)) << "bit " << bit;
        std::string written = flipped;
        const std::uint32_t four = 4;
        std::memcpy(written.data() + 1, &four, 4);
        EXPECT_EQ(target->get_state(), append_checksum(written)) << "bit " << bit;
      }
      // Flips of the last reward's low mantissa bits, say, are harmless and stay accepted.
      EXPECT_LT(accepted, static_cast<int>(old.size() * 8) / 4) << task << " " << mode;
      target->set_state(good);
      EXPECT_EQ(target->get_state(), good);
    }
  }
}

TEST(Hardening, StateErrorsNameTheFieldAndAreInvalidArgument) {
  auto env = stepped_env("scheduling", 2);
  const std::string good = env->get_state();
  auto target = stepped_env("scheduling", 0);
  // Truncations of every length are refused cleanly.
  for (std::size_t n = 0; n < good.size(); ++n) EXPECT_THROW(target->set_state(good.substr(0, n)), InvalidArgument);
  const std::string body = good.substr(0, good.size() - 8);
  EXPECT_HAS(error_message<InvalidArgument>([&] { target->set_state(good + "x"); }), "checksum mismatch");
  EXPECT_HAS(error_message<InvalidArgument>([&] { target->set_state(append_checksum(body + "x")); }),
             "unexpected bytes");
  // A huge vector count is refused before allocating.
  std::string huge = good;
  const std::size_t placement_count = 1 + 4 + 8 + std::string("scheduling").size() + 3 * 8 + 8;
  const std::uint64_t count = std::uint64_t{1} << 60;
  std::memcpy(huge.data() + placement_count, &count, 8);
  EXPECT_HAS(error_message<InvalidArgument>([&] { target->set_state(huge); }), "checksum mismatch");
  huge.resize(huge.size() - 8);
  EXPECT_HAS(error_message<InvalidArgument>([&] { target->set_state(append_checksum(huge)); }), "corrupt size");
}

TEST(Hardening, LargeLegalGraphStillLoads) {
  // A graph file with an honest large names column still loads (the limits are not too tight).
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 20000; ++i) nodes.push_back(op(std::string(40, 'x') + std::to_string(i), 1));
  const GraphPtr g = Graph::from_specs("wide", std::move(nodes), {});
  EXPECT_EQ(graph_from_bytes(graph_to_bytes(*g))->num_nodes(), 20000);
  EXPECT_EQ(graph_from_json(graph_to_json(*g))->num_nodes(), 20000);
}

}  // namespace
}  // namespace goenv
