// The fusion pass (core/fusion.cc) against its oracle: the pass as it was before
// its rewrite (fusion_reference.h) composed with contract() and the plain simulator.
// Groups must be the same, merge for merge, and the fused simulation the same bit
// for bit, on random DAGs and on the big registered graphs; the digests of the
// big graphs are also pinned to the numbers of commit 0ed9dc6 (the code before
// the rewrite), so a change to contract() or the simulator shows up here too.
#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <random>

#include "core/fusion.h"
#include "datasets/registry.h"
#include "tests/cpp/fusion_reference.h"
#include "tests/cpp/test_util.h"

namespace goenv {
namespace {

constexpr int kWindow = 4096;  // the pass's window (core/fusion.h)

// simulate_fused as it was: plan, contract into a kernel Graph, simulate it, map back.
SimulationResult reference_simulate_fused(const GraphPtr& graph, const Cluster& cluster, const Decisions& decisions,
                                          const std::int32_t* fusion, int max_fusion_size, int max_window) {
  const Graph& g = *graph;
  const int n = g.num_nodes();
  std::vector<std::int32_t> placement(n, 0);
  if (decisions.placement) std::copy(decisions.placement, decisions.placement + n, placement.begin());
  const std::string invalid_reason = validate_decisions(g, cluster, placement.data(), decisions.priority);
  const FusionPlan plan = test::reference_plan_fusion(g, placement.data(), fusion, max_fusion_size, max_window);
  const GraphPtr kernels = contract(g, plan);
  std::vector<std::int32_t> kernel_placement(plan.num_groups, 0);
  std::vector<double> kernel_priority(plan.num_groups, -std::numeric_limits<double>::infinity());
  std::vector<NodeId> first_member(plan.num_groups, kNone);
  for (NodeId v = 0; v < n; ++v) {
    const auto k = plan.group[v];
    kernel_placement[k] = placement[v];
    kernel_priority[k] = std::max(kernel_priority[k], decisions.priority ? decisions.priority[v] : 0.0);
    if (first_member[k] == kNone) first_member[k] = v;
  }
  const SimulationResult kernel_result = simulate(kernels, cluster, {kernel_placement.data(), kernel_priority.data()});
  SimulationResult r = kernel_result;
  r.invalid = !invalid_reason.empty();
  r.invalid_reason = invalid_reason;
  r.start.resize(n);
  r.finish.resize(n);
  r.device.resize(n);
  r.critical.resize(n);
  r.kernel = plan.group;
  for (NodeId v = 0; v < n; ++v) {
    const auto k = plan.group[v];
    r.start[v] = kernel_result.start[k];
    r.finish[v] = kernel_result.finish[k];
    r.device[v] = kernel_result.device[k];
    r.critical[v] = kernel_result.critical[k];
  }
  for (Transfer& t : r.transfers) t.node = first_member[t.node];
  return r;
}

std::vector<std::int32_t> block_placement(const Graph& g, int num_devices) {
  std::vector<std::int32_t> placement(g.num_nodes());
  const int block = std::max(1, g.num_nodes() / (num_devices * 4));
  for (int i = 0; i < g.num_nodes(); ++i) placement[g.topological_order()[i]] = (i / block) % num_devices;
  return placement;
}

std::vector<std::int32_t> random_levels(std::mt19937& rng, int n, int levels) {
  std::vector<std::int32_t> out(n);
  for (auto& x : out) x = static_cast<std::int32_t>(rng() % levels);
  return out;
}

std::vector<double> random_priorities(std::mt19937& rng, int n) {
  std::vector<double> out(n);
  for (auto& x : out) x = static_cast<double>(rng() % 5);
  return out;
}

// One pinned case of a big graph: its digests must match the code before the rewrite.
struct GoldenCase {
  const char* graph;
  const char* params;  // "key=value,..." builder overrides
  const char* placement;  // "single" | "block"
  const char* fusion;     // "xla" | "random4" | "random16"
  bool priorities;        // seeded random scheduling priorities too
  int max_fusion_size;
  std::uint64_t plan_digest, result_digest;
};

GraphParams parse_params(const std::string& text) {
  GraphParams params;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    const std::size_t eq = item.find('=');
    params[item.substr(0, eq)] = std::stod(item.substr(eq + 1));
    start = end + 1;
  }
  return params;
}

const GraphPtr& cached_graph(const std::string& name, const std::string& params) {
  static std::map<std::string, GraphPtr> cache;
  auto& slot = cache[name + "|" + params];
  if (!slot) slot = build_graph(name, parse_params(params));
  return slot;
}

// Digests of the code at 0ed9dc6 (printed by this test when they differ); the cases with
// random fusion priorities re-pinned when priority 0 started to keep a producer alone too
// (docs/simulator.md; the XLA cases, where only opaque ops have priority 0, kept theirs).
const GoldenCase kGolden[] = {
#include "tests/cpp/fusion_golden.inc"
};

TEST(FusionDifferential, BigGraphsMatchTheDigestsOfThePassBeforeTheRewrite) {
  bool all_same = true;
  for (const GoldenCase& c : kGolden) {
    const GraphPtr& graph = cached_graph(c.graph, c.params);
    const Cluster cluster = Cluster::preset(graph_family(c.graph).default_cluster);
    const int n = graph->num_nodes();
    const std::vector<std::int32_t> placement = std::string(c.placement) == "block"
                                                    ? block_placement(*graph, cluster.num_devices())
                                                    : std::vector<std::int32_t>(n, 0);
    std::mt19937 rng(11);
    const std::string kind = c.fusion;
    const std::vector<std::int32_t> fusion = kind == "xla"       ? xla_fusion_priorities(*graph)
                                             : kind == "random4" ? random_levels(rng, n, 4)
                                                                 : random_levels(rng, n, 16);
    const std::vector<double> priority = random_priorities(rng, n);
    const Decisions decisions{placement.data(), c.priorities ? priority.data() : nullptr};
    FusionPlan plan;
    const SimulationResult r = simulate_fused(graph, cluster, decisions, fusion.data(), c.max_fusion_size, &plan);
    test::Digest plan_digest;
    plan_digest.add_vector(plan.group);
    const std::uint64_t result_digest = test::result_digest(r);
    const bool same = plan_digest.value() == c.plan_digest && result_digest == c.result_digest;
    all_same = all_same && same;
    std::printf("    {\"%s\", \"%s\", \"%s\", \"%s\", %s, %d, 0x%016llxull, 0x%016llxull},%s\n", c.graph, c.params,
                c.placement, c.fusion, c.priorities ? "true" : "false", c.max_fusion_size,
                static_cast<unsigned long long>(plan_digest.value()), static_cast<unsigned long long>(result_digest),
                same ? "" : "  // differs");
    // The oracle composition agrees too (and with it, the digests stay explainable).
    const SimulationResult expected =
        reference_simulate_fused(graph, cluster, decisions, fusion.data(), c.max_fusion_size, kWindow);
    EXPECT_EQ(test::result_digest(expected), result_digest) << c.graph << " " << c.fusion;
  }
  EXPECT_TRUE(all_same) << "fused results differ from the pass before the rewrite (lines marked above)";
}

// Devices that differ in each cost parameter, two identical ones apart (the kernel
// costs of identical devices are shared, the others computed).
Cluster mixed_cluster() {
  Device cpu = test::test_device(DeviceKind::kCpu), faster = test::test_device(), wider = test::test_device();
  faster.peak_flops *= 3;
  wider.memory_bandwidth *= 2;
  wider.launch_overhead = 1e-3;
  return test::test_cluster({test::test_device(), cpu, faster, test::test_device(), wider});
}

// Random DAGs (ids a random permutation of a topological order, every op kind),
// random placements, fusion levels, size limits and windows down to 1 slot, so
// that every refusal (size, window, opaque, reduction, convexity) happens often.
TEST(FusionDifferential, RandomGraphsMakeTheSameGroupsAndTheSameSimulation) {
  std::mt19937 rng(2024);
  int merges = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 120);
    const double edge_prob = std::uniform_real_distribution<double>(0.01, 0.3)(rng);
    const GraphPtr g = test::random_dag(rng, n, edge_prob, /*rich=*/trial % 3 == 0);
    const Cluster cluster = trial % 4 == 3 ? mixed_cluster() : test::test_cluster(1 + static_cast<int>(rng() % 3));
    const int devices = cluster.num_devices();
    std::vector<std::int32_t> placement(n);
    for (auto& p : placement) p = static_cast<std::int32_t>(rng() % devices);
    const std::vector<std::int32_t> fusion = random_levels(rng, n, 2 + static_cast<int>(rng() % 6));
    const std::vector<double> priority = random_priorities(rng, n);
    const int sizes[] = {1, 2, 3, 5, 16, 1 << 20};
    const int windows[] = {1, 2, 4, 9, kWindow};
    const int max_size = sizes[rng() % 6], window = windows[rng() % 5];
    const FusionPlan expected = test::reference_plan_fusion(*g, placement.data(), fusion.data(), max_size, window);
    const FusionPlan actual = plan_fusion(*g, placement.data(), fusion.data(), max_size, window);
    ASSERT_EQ(actual.group, expected.group) << "trial " << trial << " size " << max_size << " window " << window;
    ASSERT_EQ(actual.num_groups, expected.num_groups);
    ASSERT_EQ(actual.num_fused_nodes, expected.num_fused_nodes);
    merges += n - actual.num_groups;
    const Decisions decisions{placement.data(), trial % 2 ? priority.data() : nullptr};
    const SimulationResult want =
        reference_simulate_fused(g, cluster, decisions, fusion.data(), max_size, kWindow);
    FusedSimulator fused(g, cluster);
    for (int again = 0; again < 2; ++again)  // a reused simulator gives the same result
      ASSERT_EQ(test::result_digest(fused.run(decisions, fusion.data(), max_size)), test::result_digest(want))
          << "trial " << trial;
  }
  EXPECT_GT(merges, 500);  // the trials do fuse (984 merges with this seed)
}

// Wide fan-outs with no size limit: each root's group grows by a consumer at a
// time and its run of out-edges is rewritten every merge, so the pass compacts
// its edge pool again and again (compact_edges) while several merged groups are
// alive; some consumers also feed later ones, which makes convexity refusals.
// Same groups and simulation as the oracle.
TEST(FusionDifferential, GroupsThatKeepGrowingOnFanOuts) {
  constexpr int kRoots = 8, kConsumers = 3000;
  std::mt19937 rng(11);
  GraphBuilder b("fan-outs");
  std::vector<NodeId> roots, consumers;
  for (int i = 0; i < kRoots; ++i) {
    NodeSpec root = test::op("root" + std::to_string(i), 1e9, 1 << 20);
    root.op_type = op_type_id("Add");
    roots.push_back(b.add_node(std::move(root)));
  }
  for (int i = 0; i < kConsumers; ++i) {
    NodeSpec c = test::op("c" + std::to_string(i), 1e8, 1 << 10);
    c.op_type = op_type_id(i % 7 == 0 ? "Sum" : "Relu");  // a few reductions, only ever sinks of a group
    consumers.push_back(b.add_node(std::move(c)));
    b.add_edge(roots[i % kRoots], consumers.back());
    if (i > 0 && rng() % 5 == 0) b.add_edge(consumers[rng() % i], consumers.back());
  }
  const GraphPtr g = std::move(b).build();
  const Cluster cluster = test::test_cluster(1);
  const std::vector<std::int32_t> placement(g->num_nodes(), 0), fusion(g->num_nodes(), 1);
  const int no_limit = 1 << 20;
  const FusionPlan expected = test::reference_plan_fusion(*g, placement.data(), fusion.data(), no_limit, kWindow);
  const FusionPlan actual = plan_fusion(*g, placement.data(), fusion.data(), no_limit, kWindow);
  ASSERT_EQ(actual.group, expected.group);
  EXPECT_GT(g->num_nodes() - actual.num_groups, kConsumers / 2);  // the roots' groups did grow
  const Decisions decisions{placement.data(), nullptr};
  FusedSimulator fused(g, cluster);
  for (int again = 0; again < 2; ++again)
    ASSERT_EQ(test::result_digest(fused.run(decisions, fusion.data(), no_limit)),
              test::result_digest(reference_simulate_fused(g, cluster, decisions, fusion.data(), no_limit, kWindow)));
}

// Several graphs through one FusedSimulator each, interleaved, with decisions
// that change every call: no state leaks from one run into the next.
TEST(FusionDifferential, ReusedSimulatorMatchesFreshOnes) {
  std::mt19937 rng(5);
  const GraphPtr g = test::random_dag(rng, 300, 0.02);
  const Cluster cluster = test::test_cluster(3);
  FusedSimulator reused(g, cluster);
  for (int call = 0; call < 20; ++call) {
    std::vector<std::int32_t> placement(300);
    for (auto& p : placement) p = static_cast<std::int32_t>(rng() % 3);
    const auto fusion = random_levels(rng, 300, 4);
    const int max_size = 1 + static_cast<int>(rng() % 20);
    const SimulationResult fresh = simulate_fused(g, cluster, {placement.data(), nullptr}, fusion.data(), max_size);
    ASSERT_EQ(test::result_digest(reused.run({placement.data(), nullptr}, fusion.data(), max_size)),
              test::result_digest(fresh));
  }
}

}  // namespace
}  // namespace goenv
