// Agents: forward shapes on graphs of several sizes, masking, log-probabilities,
// checkpoints and seeded determinism. Built as its own ctest executable
// (goenv_agents_tests) because it links LibTorch; tests/cpp never does.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>

#include "agents/agent.h"
#include "agents/model.h"
#include "agents/policy.h"
#include "agents/search.h"
#include "core/error.h"
#include "envs/registry.h"

namespace goenv::agents {
namespace {

// A layered random DAG: `width` nodes per layer, each fed by 1-2 nodes of the previous layer.
GraphPtr layered_graph(int num_nodes, int width, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  GraphBuilder builder("layered" + std::to_string(num_nodes));
  std::uniform_real_distribution<double> exponent(6, 10);
  for (int v = 0; v < num_nodes; ++v) {
    NodeSpec spec;
    spec.name = "n" + std::to_string(v);
    spec.op_type = static_cast<int>(rng() % num_op_types());
    spec.flops = std::pow(10.0, exponent(rng));
    spec.output_bytes = static_cast<std::int64_t>(std::pow(10.0, exponent(rng) - 4));
    builder.add_node(spec);
  }
  for (int v = width; v < num_nodes; ++v) {
    const int layer_start = (v / width - 1) * width;
    const int a = layer_start + static_cast<int>(rng() % width);
    builder.add_edge(a, v);
    const int b = layer_start + static_cast<int>(rng() % width);
    if (b != a && rng() % 2) builder.add_edge(b, v);
  }
  return std::move(builder).build();
}

// At the observation version the policies read (a later one is copied at it by the agents).
std::unique_ptr<Env> env_on(const std::string& task, int num_nodes, int width = 4) {
  EnvConfig config;
  config.observation_version = kPolicyObservationVersion;
  return make_env_on_graph(task, layered_graph(num_nodes, width, num_nodes), Cluster::preset("2xgpu-pcie"), config);
}

struct Stacked {
  torch::Tensor node_state, mask, globals;
};

Stacked stacked(const DynamicObservation& o, const PolicySpec& spec, int n, int batch) {
  auto state = torch::from_blob(const_cast<float*>(o.node_state.data()), {1, n, spec.node_state_dim}).clone();
  auto mask = torch::from_blob(const_cast<std::int8_t*>(o.action_mask.data()), {1, n, spec.action_mask_width()},
                               torch::kInt8).clone();
  auto globals = torch::from_blob(const_cast<float*>(o.globals.data()), {1, spec.global_dim}).clone();
  return {state.expand({batch, n, spec.node_state_dim}), mask.expand({batch, n, spec.action_mask_width()}),
          globals.expand({batch, spec.global_dim})};
}

GraphTensors tensors_of(const Env& env) {
  const StaticObservation& s = env.static_observation();
  return graph_tensors(s.num_nodes, s.node_feature_dim, s.node_features.data(), s.num_edges, s.edge_index.data(),
                       torch::kCPU);
}

class ForwardShapes : public ::testing::TestWithParam<std::tuple<int, std::string, std::string>> {};

TEST_P(ForwardShapes, LogitsPerHeadAndOneValuePerObservation) {
  const auto& [n, algorithm, task] = GetParam();
  auto env = env_on(task, n, n >= 300 ? 16 : 3);
  AgentConfig config;
  config.algorithm = algorithm;
  config.hidden = 32;
  config.segment_length = 128;  // 3000 nodes: 24 segments, the last one padded
  const PolicySpec spec = PolicySpec::of(*env, config);
  Policy policy = make_policy(config, spec);
  const DynamicObservation obs = env->reset(0);
  const Stacked in = stacked(obs, spec, n, 2);
  torch::NoGradGuard no_grad;
  const PolicyOutput out = policy->forward(tensors_of(*env), in.node_state, in.globals);
  ASSERT_EQ(out.logits.size(), spec.heads.size());
  for (std::size_t h = 0; h < spec.heads.size(); ++h) {
    EXPECT_EQ(out.logits[h].sizes(), (std::vector<std::int64_t>{2, n, spec.choices[h]}));
    EXPECT_TRUE(torch::isfinite(out.logits[h]).all().item<bool>());
  }
  EXPECT_EQ(out.value.sizes(), (std::vector<std::int64_t>{2}));
  EXPECT_TRUE(torch::isfinite(out.value).all().item<bool>());
  // Both batch items are the same observation.
  EXPECT_TRUE(torch::allclose(out.logits[0][0], out.logits[0][1], 1e-5, 1e-6));
}

INSTANTIATE_TEST_SUITE_P(Sizes, ForwardShapes,
                         ::testing::Combine(::testing::Values(10, 300, 3000), ::testing::Values("ppo", "go"),
                                            ::testing::Values("placement", "joint")),
                         [](const auto& info) {
                           return std::get<1>(info.param) + "_" + std::get<2>(info.param) + "_" +
                                  std::to_string(std::get<0>(info.param)) + "_nodes";
                         });

// policy_parameters is what a checkpoint is checked against before its policy is built: it
// must equal the built policy's count for every algorithm, task, head kind and width.
TEST(PolicyParameters, EqualTheBuiltPolicysCountWithoutBuildingIt) {
  auto env = env_on("joint", 12, 3);
  auto placement = env_on("placement", 12, 3);
  for (const std::string algorithm : {"go", "ppo"})
    for (const std::string device_head : {"absolute", "pairs"})
      for (const auto& [hidden, sage, attention] : {std::tuple{8, 0, 0}, std::tuple{16, 2, 1}, std::tuple{12, 3, 2}}) {
        if (algorithm == "ppo" && device_head == "pairs") continue;
        AgentConfig config;
        config.algorithm = algorithm;
        config.device_head = device_head;
        config.hidden = hidden;
        config.attention_heads = 2;
        config.sage_layers = sage;
        config.attention_layers = attention;
        for (const Env* e : {env.get(), placement.get()}) {
          const PolicySpec spec = PolicySpec::of(*e, config);
          std::uint64_t built = 0;
          for (const auto& p : make_policy(config, spec)->parameters()) built += static_cast<std::uint64_t>(p.numel());
          EXPECT_EQ(policy_parameters(config, spec), built)
              << algorithm << " " << device_head << " hidden=" << hidden << " " << spec.describe();
        }
      }
}

TEST(ThreadScope, ACheckpointsThreadCountIsCappedByTheMachineAndRestored) {
  const int before = torch::get_num_threads();
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  {
    const ThreadScope scope(1024);
    EXPECT_LE(torch::get_num_threads(), machine);
  }
  EXPECT_EQ(torch::get_num_threads(), before);
}

TEST(GoPolicy, GradientsReachEveryLayerThroughSegments) {
  auto env = env_on("placement", 700, 8);
  AgentConfig config;
  config.algorithm = "go";
  config.hidden = 16;
  config.segment_length = 100;
  const PolicySpec spec = PolicySpec::of(*env, config);
  Policy policy = make_policy(config, spec);
  const Stacked in = stacked(env->reset(0), spec, 700, 1);
  const PolicyOutput out = policy->forward(tensors_of(*env), in.node_state, in.globals);
  (out.logits[0].pow(2).sum() + out.value.sum()).backward();
  for (const auto& item : policy->named_parameters()) {
    if (item.key().rfind("film", 0) == 0) continue;  // zero-initialized modulation: gradient may be exactly 0 at the bias
    ASSERT_TRUE(item.value().grad().defined()) << item.key();
    EXPECT_TRUE(torch::isfinite(item.value().grad()).all().item<bool>()) << item.key();
  }
}

// Segment attention leaves out the keys it never attends to (the first segment's
// memory, the last segment's padding): the real nodes' outputs are those of full
// attention over [memory, segment] with those keys masked, computed here from the
// module's own weights; and what is left out cannot change them.
TEST(GoPolicy, SegmentAttentionEqualsMaskedFullAttention) {
  namespace F = torch::nn::functional;
  const std::int64_t b = 2, length = 8, hidden = 16, heads = 4, head_dim = hidden / heads;
  torch::manual_seed(3);
  SegmentAttention attention(static_cast<int>(hidden), static_cast<int>(heads));
  auto p = attention->named_parameters();
  auto linear = [&](const std::string& name, const torch::Tensor& x) {
    return F::linear(x, p[name + ".weight"], p[name + ".bias"]);
  };
  auto norm = [&](const std::string& name, const torch::Tensor& x) {
    return F::layer_norm(x, F::LayerNormFuncOptions({hidden}).weight(p[name + ".weight"]).bias(p[name + ".bias"]));
  };
  for (const std::int64_t segments : {1, 2, 3, 5}) {
    const std::int64_t last_real = segments == 1 ? length : 5, m = b * segments;
    const torch::Tensor x = torch::randn({m, length, hidden});
    const torch::Tensor memory = torch::randn({m, length, hidden});  // the first segment's must not matter
    // The reference: every segment over all 2L keys, the masked ones excluded by the mask.
    const torch::Tensor real = torch::arange(segments * length).lt(segments * length - (length - last_real))
                                   .view({segments, length});
    const torch::Tensor memory_real = torch::cat({torch::zeros({1, length}, torch::kBool), real.narrow(0, 0, segments - 1)});
    const torch::Tensor mask = torch::cat({memory_real, real}, 1).repeat({b, 1}).view({m, 1, 1, 2 * length});
    const torch::Tensor q = linear("query", x).view({m, length, heads, head_dim}).transpose(1, 2);
    const torch::Tensor kv = linear("key_value", torch::cat({memory, x}, 1)).view({m, 2 * length, 2, heads, head_dim});
    const torch::Tensor attended = at::scaled_dot_product_attention(q, kv.select(2, 0).transpose(1, 2),
                                                                    kv.select(2, 1).transpose(1, 2), mask)
                                       .transpose(1, 2).reshape({m, length, hidden});
    const torch::Tensor z = norm("norm1", x + linear("output", attended));
    const torch::Tensor want =
        norm("norm2", z + linear("feed_forward2", torch::relu(linear("feed_forward1", z)))).view({b, segments, length, hidden});
    torch::Tensor got = attention(x, memory, segments, last_real).view({b, segments, length, hidden});
    EXPECT_TRUE(torch::allclose(got.narrow(2, 0, last_real), want.narrow(2, 0, last_real), 1e-5, 1e-6)) << segments;
    if (segments > 1) EXPECT_TRUE(torch::allclose(got.narrow(1, 0, segments - 1), want.narrow(1, 0, segments - 1), 1e-5, 1e-6));
    // Changing what is left out (the first segment's memory, the last segment's padding
    // nodes as keys) changes no real node's output.
    torch::Tensor other_memory = memory.clone(), other_x = x.clone();
    other_memory.view({b, segments, length, hidden}).select(1, 0).normal_();
    if (last_real < length)
      other_x.view({b, segments, length, hidden}).select(1, segments - 1).narrow(1, last_real, length - last_real).normal_();
    const torch::Tensor again = attention(other_x, other_memory, segments, last_real).view({b, segments, length, hidden});
    EXPECT_TRUE(torch::equal(again.narrow(2, 0, last_real).narrow(1, segments - 1, 1),
                             got.narrow(2, 0, last_real).narrow(1, segments - 1, 1))) << segments;
    EXPECT_TRUE(torch::equal(again.narrow(1, 0, segments - 1), got.narrow(1, 0, segments - 1))) << segments;
  }
}

// device_head "pairs": one set of weights for any cluster; relabelling the
// devices permutes the placement logits and leaves the value unchanged.
TEST(PairsPolicy, RelabellingDevicesPermutesTheLogitsAndAnyDeviceCountFits) {
  AgentConfig config;
  config.algorithm = "go";
  config.device_head = "pairs";
  config.hidden = 16;
  config.segment_length = 64;
  const int n = 300;
  Policy policy;
  for (const char* preset : {"cpu+2xgpu", "4xgpu-nvlink", "8xgpu-pcie"}) {
    const Cluster cluster = Cluster::preset(preset);
    EnvConfig env_config;
    env_config.observation_version = kPolicyObservationVersion;
    auto env = make_env_on_graph("placement", layered_graph(n, 6, n), cluster, env_config);
    const PolicySpec spec = PolicySpec::of(*env, config);
    ASSERT_TRUE(spec.any_devices());
    if (!policy) policy = make_policy(config, spec);  // built once, on the first cluster
    const int d = cluster.num_devices(), s = env->node_state_dim();
    ASSERT_EQ(s, spec.node_state_dim + d);
    env->reset(0);
    std::mt19937 rng(3);
    std::vector<std::int64_t> placement(n);
    for (auto& p : placement) p = static_cast<std::int64_t>(rng() % d);
    const StepResult step = env->step({placement.data()});
    const torch::Tensor state =
        torch::from_blob(const_cast<float*>(step.observation.node_state.data()), {1, n, s}).clone();
    const torch::Tensor globals =
        torch::from_blob(const_cast<float*>(step.observation.globals.data()), {1, spec.global_dim}).clone();
    GraphTensors a = tensors_of(*env);
    const std::vector<float> features = device_features(cluster);
    set_devices(a, d, features.data(), static_cast<int>(device_feature_names().size()), torch::kCPU);
    std::vector<std::int64_t> perm(d);  // new device i is old device perm[i]
    for (int i = 0; i < d; ++i) perm[i] = (i + 1) % d;
    const torch::Tensor index = torch::tensor(perm);
    GraphTensors b = a;
    b.device_features = a.device_features.index_select(0, index);
    const torch::Tensor relabelled = torch::cat({state.narrow(-1, 0, d).index_select(-1, index), state.narrow(-1, d, s - d)}, -1);
    torch::NoGradGuard no_grad;
    const PolicyOutput out_a = policy->forward(a, state, globals), out_b = policy->forward(b, relabelled, globals);
    ASSERT_EQ(out_a.logits[0].sizes(), (std::vector<std::int64_t>{1, n, d})) << preset;
    EXPECT_TRUE(torch::allclose(out_a.logits[0].index_select(-1, index), out_b.logits[0], 1e-5, 1e-6)) << preset;
    EXPECT_TRUE(torch::allclose(out_a.value, out_b.value, 1e-5, 1e-6)) << preset;
  }
}

TEST(PairsPolicy, NeedsTheClustersDeviceFeatures) {
  AgentConfig config;
  config.algorithm = "go";
  config.device_head = "pairs";
  config.hidden = 16;
  EnvConfig env_config;
  env_config.observation_version = kPolicyObservationVersion;
  auto env = make_env_on_graph("placement", layered_graph(40, 4, 40), Cluster::preset("2xgpu-pcie"), env_config);
  Policy policy = make_policy(config, PolicySpec::of(*env, config));
  const DynamicObservation obs = env->reset(0);
  const torch::Tensor state = torch::from_blob(const_cast<float*>(obs.node_state.data()), {1, 40, env->node_state_dim()});
  const torch::Tensor globals = torch::zeros({1, static_cast<std::int64_t>(global_names().size())});
  EXPECT_THROW(policy->forward(tensors_of(*env), state, globals), InvalidArgument);  // no device features set
  config.algorithm = "ppo";
  EXPECT_THROW(make_policy(config, PolicySpec::of(*env, config)), InvalidArgument);
}

TEST(Distribution, MaskedChoicesAreNeverSampled) {
  torch::manual_seed(1);
  const torch::Tensor logits = torch::randn({3, 50, 5}) * 4;
  torch::Tensor mask = torch::rand({3, 50, 5}) < 0.4;
  mask.select(2, 2).fill_(false);
  mask.index_put_({torch::indexing::Slice(), torch::indexing::Slice(), 4},
                  mask.select(2, 4).logical_or(mask.any(-1).logical_not()));  // at least one allowed per node
  const torch::Tensor masked = mask_logits(logits, mask);
  torch::Generator generator = at::detail::createCPUGenerator(7);
  for (int trial = 0; trial < 200; ++trial) {
    const torch::Tensor a = sample_actions(masked, false, generator);
    EXPECT_TRUE(mask.gather(-1, a.unsqueeze(-1)).all().item<bool>());
  }
  const torch::Tensor greedy = sample_actions(masked, true, generator);
  EXPECT_TRUE(mask.gather(-1, greedy.unsqueeze(-1)).all().item<bool>());
  // Only allowed choices carry probability; a node with one choice has zero entropy.
  EXPECT_EQ(torch::softmax(masked, -1).masked_select(mask.logical_not()).sum().item<float>(), 0.f);
  torch::Tensor one = torch::zeros({1, 1, 5}, torch::kBool);
  one[0][0][3] = true;
  EXPECT_NEAR(entropy({mask_logits(torch::randn({1, 1, 5}), one)}).item<double>(), 0.0, 1e-12);
}

TEST(Distribution, LogProbIsTheSumOverNodesAndHeads) {
  torch::manual_seed(2);
  const std::vector<torch::Tensor> logits = {torch::randn({2, 7, 3}), torch::randn({2, 7, 16})};
  const std::vector<torch::Tensor> actions = {torch::randint(3, {2, 7}), torch::randint(16, {2, 7})};
  const torch::Tensor total = log_prob(logits, actions);
  ASSERT_EQ(total.sizes(), (std::vector<std::int64_t>{2}));
  for (int b = 0; b < 2; ++b) {
    double expected = 0;
    for (std::size_t h = 0; h < logits.size(); ++h)
      for (int v = 0; v < 7; ++v) {
        const torch::Tensor p = torch::softmax(logits[h][b][v].to(torch::kFloat64), 0);
        expected += std::log(p[actions[h][b][v].item<std::int64_t>()].item<double>());
      }
    EXPECT_NEAR(total[b].item<double>(), expected, 1e-5);
  }
  const torch::Tensor uniform = entropy({torch::zeros({1, 4, 8})});
  EXPECT_NEAR(uniform.item<double>(), 4 * std::log(8.0), 1e-5);
}

TEST(Graph, TopologicalOrderRejectsCyclesAndBadEdges) {
  const std::vector<std::int64_t> chain = {0, 1, 1, 2};  // (2, E): 0->1, 1->2
  EXPECT_EQ(topological_order(3, 2, chain.data()), (std::vector<std::int64_t>{0, 1, 2}));
  const std::vector<std::int64_t> cycle = {0, 1, 1, 0};
  EXPECT_THROW(topological_order(2, 2, cycle.data()), InvalidArgument);
  const std::vector<std::int64_t> outside = {0, 5};
  EXPECT_THROW(topological_order(2, 1, outside.data()), InvalidArgument);
}

AgentConfig small_config(const std::string& algorithm) {
  AgentConfig c;
  c.algorithm = algorithm;
  c.hidden = 16;
  c.segment_length = 8;
  c.envs_per_graph = 4;
  c.num_threads = 1;
  c.seed = 3;
  return c;
}

ObservationBatch view(const Env& env, const DynamicObservation& o) {
  const StaticObservation& s = env.static_observation();
  ObservationBatch b;
  b.num_nodes = s.num_nodes;
  b.num_edges = s.num_edges;
  b.node_features = s.node_features.data();
  b.node_feature_dim = s.node_feature_dim;
  b.edge_index = s.edge_index.data();
  b.node_state = o.node_state.data();
  b.node_state_dim = static_cast<int>(o.node_state.size()) / s.num_nodes;
  b.action_mask = o.action_mask.data();
  b.action_mask_width = env.action_mask_width();
  b.globals = o.globals.data();
  b.global_dim = static_cast<int>(o.globals.size());
  return b;
}

TEST(Agent, TrainingIsSeededAndCheckpointsRoundTrip) {
  auto env = env_on("placement", 24, 4);
  auto run = [&](const std::string& algorithm) {
    Agent agent(small_config(algorithm));
    std::vector<double> losses;
    agent.train({env.get()}, 32, [&](const UpdateMetrics& m) {
      losses.push_back(m.policy_loss + m.value_loss);
      return true;
    });
    return std::make_pair(std::move(agent), losses);
  };
  for (const std::string algorithm : {"ppo", "go"}) {
    auto [first, first_losses] = run(algorithm);
    auto [second, second_losses] = run(algorithm);
    EXPECT_EQ(first_losses.size(), 8u);
    EXPECT_EQ(first_losses, second_losses) << algorithm;
    EXPECT_EQ(first.steps_trained(), 32);

    const std::string bytes = first.to_bytes();
    Agent loaded;
    loaded.from_bytes(bytes);
    EXPECT_EQ(loaded.config().algorithm, algorithm);
    EXPECT_EQ(loaded.steps_trained(), 32);
    EXPECT_EQ(checkpoint_algorithm(bytes), algorithm);
    const DynamicObservation obs = env->reset(0);
    EXPECT_EQ(first.act(view(*env, obs), true), loaded.act(view(*env, obs), true));
    EvaluationResult r = loaded.evaluate(*env, 2);
    EXPECT_EQ(r.episodes, 2);
    EXPECT_GT(r.runtime, 0);

    std::string corrupt = bytes;
    corrupt[corrupt.size() / 2] ^= 0x5a;
    EXPECT_THROW(loaded.from_bytes(corrupt), InvalidArgument);
    EXPECT_THROW(loaded.from_bytes(bytes.substr(0, bytes.size() - 10)), InvalidArgument);
    EXPECT_THROW(loaded.from_bytes("not a checkpoint"), InvalidArgument);
    EXPECT_EQ(first.act(view(*env, obs), true), loaded.act(view(*env, obs), true));  // unchanged by the failures
  }
}

// Imitation (agent.h): the greedy decision becomes the teacher's; the kept
// teacher and the optimizer state travel in the checkpoint, so a loaded agent
// trains on exactly as the saved one does.
TEST(Imitation, GreedyEqualsTeacherAndCheckpointsResumeExactly) {
  auto env = env_on("placement", 24, 4);
  AgentConfig config = small_config("go");
  config.learning_rate = 3e-3;
  Agent agent(config);
  const ImitationMetrics m = agent.imitate({env.get()}, 150);
  EXPECT_EQ(m.accuracy, 1.0);
  const Teacher* teacher = agent.teacher(*env);
  ASSERT_NE(teacher, nullptr);
  EXPECT_EQ(teacher->method, "best-heuristic");
  const DynamicObservation obs = env->reset(0);
  EXPECT_EQ(agent.act(view(*env, obs), true).at(0), teacher->actions.at(0));

  const std::string bytes = agent.to_bytes();
  Agent loaded;
  loaded.from_bytes(bytes);
  ASSERT_NE(loaded.teacher(*env), nullptr);
  EXPECT_EQ(loaded.teacher(*env)->actions, teacher->actions);
  EXPECT_EQ(loaded.teacher(*env)->runtime, teacher->runtime);
  std::vector<double> expected, got;
  agent.train({env.get()}, 16, [&](const UpdateMetrics& u) { return expected.push_back(u.policy_loss + u.teacher_loss), true; });
  loaded.train({env.get()}, 16, [&](const UpdateMetrics& u) { return got.push_back(u.policy_loss + u.teacher_loss), true; });
  EXPECT_EQ(expected, got);

  EXPECT_THROW(agent.imitate({env.get()}, 1, "fastest"), InvalidArgument);
  EXPECT_THROW(agent.imitate({env.get()}, 0), InvalidArgument);
  const OptimizeResult best = agent.optimize(*env, 4, "", 16);
  EXPECT_LE(best.runtime, best.greedy_runtime);
  EXPECT_LE(best.runtime, agent.teacher(*env)->runtime);
  // Exactly the budget, never worse than the start, every call reported.
  for (const char* start : {"default", "best-heuristic"}) {
    const OptimizeResult r = agent.optimize(*env, 12, start);
    EXPECT_EQ(r.curve.size(), 12u);
    EXPECT_EQ(r.simulator_calls, 12 + r.start_calls);
    EXPECT_LE(r.runtime, r.start_runtime);
    EXPECT_EQ(r.curve.back(), r.runtime);
    for (std::size_t k = 1; k < r.curve.size(); ++k) EXPECT_LE(r.curve[k], r.curve[k - 1]);
  }
  EXPECT_THROW(agent.optimize(*env, 0), InvalidArgument);
  EXPECT_THROW(agent.optimize(*env, 4, "no-such-start"), NotFound);
}

// search::optimize re-reads the policy after a new best (the observation of the
// best schedule changed), but at most once per 1/16 of the budget: a forward
// costs hundreds of simulations on a CPU.
TEST(Search, ThePolicyIsReadAfterEveryNewBestOnShortSearchesAndAtMostFourTimesMoreOnLongerOnes) {
  auto env = env_on("placement", 120, 8);
  Agent agent(small_config("go"));
  agent.train({env.get()}, 8);  // ready, and no teacher kept: every new best is a proposal's
  auto improvements = [](const OptimizeResult& r, std::size_t calls) {
    std::int64_t count = 0;
    for (std::size_t k = 0; k < calls; ++k) count += r.curve[k] < (k == 0 ? r.start_runtime : r.curve[k - 1]);
    return count;
  };
  EXPECT_EQ(search::policy_read_gap(search::kShortSearch), 1);
  EXPECT_EQ(search::policy_read_gap(search::kShortSearch + 1), (search::kShortSearch + 1) / 4);
  EXPECT_EQ(search::policy_read_gap(1024), 256);
  const OptimizeResult short_run = agent.optimize(*env, 16, "default", 0, 3);
  ASSERT_EQ(short_run.curve.size(), 16u);
  EXPECT_EQ(short_run.policy_reads, 1 + improvements(short_run, 15));  // after every new best but the last call's
  for (const std::int64_t budget : {99, 320}) {
    const OptimizeResult run = agent.optimize(*env, budget, "default", 0, 3);
    ASSERT_EQ(run.curve.size(), static_cast<std::size_t>(budget));
    EXPECT_GT(improvements(run, static_cast<std::size_t>(budget)), 5);  // so the cap is what binds
    EXPECT_GE(run.policy_reads, 2);
    EXPECT_LE(run.policy_reads, 1 + (budget - 1) / search::policy_read_gap(budget));  // 5 for 99, 4 for 320
  }
}

// The proposals ablation (docs/agents.md): "untrained" is the search of the same network as
// training started it, "uniform" reads no network; both spend exactly the learned search's
// calls.
TEST(Search, TheProposalsAblationsSpendTheSameCallsAndUntrainedIsTheFreshNetwork) {
  auto env = env_on("placement", 120, 8);
  Agent trained(small_config("go"));
  trained.train({env.get()}, 8);
  Agent fresh(small_config("go"));
  const OptimizeResult learned = trained.optimize(*env, 24, "default", 0, 3);
  const OptimizeResult untrained = trained.optimize(*env, 24, "default", 0, 3, kStartBudget, Proposals::kUntrained);
  const OptimizeResult uniform = trained.optimize(*env, 24, "default", 0, 3, kStartBudget, Proposals::kUniform);
  const OptimizeResult reference = fresh.optimize(*env, 24, "default", 0, 3);
  for (const OptimizeResult* r : {&learned, &untrained, &uniform}) {
    EXPECT_EQ(r->curve.size(), 24u);
    EXPECT_EQ(r->simulator_calls, 24 + r->start_calls);
  }
  EXPECT_EQ(untrained.proposals, "untrained");
  EXPECT_EQ(uniform.proposals, "uniform");
  EXPECT_EQ(uniform.policy_reads, 0);
  EXPECT_EQ(untrained.curve, reference.curve);
  EXPECT_EQ(untrained.actions, reference.actions);
  EXPECT_EQ(trained.optimize(*env, 24, "default", 0, 3).curve, learned.curve);  // the ablations left it as it was
  for (const char* name : {"learned", "untrained", "uniform"}) EXPECT_STREQ(name_of(proposals_named(name)), name);
  EXPECT_THROW(proposals_named("random"), InvalidArgument);
}

// docs/distributed.md: train() is collect() then update(); a sampler and a learner that
// exchange the flat weight buffer reproduce it bit for bit (GO, with a horizon of 2).
TEST(Agent, TrainEqualsCollectOnOneAgentAndUpdateOnAnother) {
  auto env = env_on("placement", 24, 4);
  AgentConfig config = small_config("go");
  config.rollout_length = 2;
  Agent reference(config);
  std::vector<double> losses;
  reference.train({env.get()}, 3 * 2 * config.envs_per_graph, [&](const UpdateMetrics& m) {
    losses.push_back(m.policy_loss);
    return true;
  });
  Agent learner(config), sampler(config);
  learner.set_envs({env.get()}, {});
  sampler.set_envs({env.get()}, {0});
  EXPECT_THROW(learner.collect(), InvalidArgument);  // samples nothing
  for (std::size_t u = 0; u < losses.size(); ++u) {
    sampler.set_weights(learner.weights().get(), learner.num_parameters(), learner.weights_version());
    const std::vector<Rollout> rollouts = sampler.collect();
    ASSERT_EQ(rollouts.size(), 1u);
    EXPECT_EQ(rollouts[0].policy_version, static_cast<std::int64_t>(u));
    EXPECT_EQ(rollouts[0].steps, 2);
    EXPECT_EQ(learner.update(rollouts).policy_loss, losses[u]);
  }
  EXPECT_EQ(learner.weights_version(), 3);
  const auto learned = learner.weights(), referenced = reference.weights();
  const std::vector<float> a(learned.get(), learned.get() + learner.num_parameters());
  const std::vector<float> b(referenced.get(), referenced.get() + reference.num_parameters());
  EXPECT_EQ(a, b);
  EXPECT_THROW(sampler.set_weights(a.data(), 5, 0), InvalidArgument);
  std::vector<Rollout> bad = sampler.collect();
  bad[0].reward.pop_back();
  EXPECT_THROW(learner.update(bad), InvalidArgument);
}

TEST(Agent, LongerHorizonsUseGaeAndSeveralGraphsTakeTurns) {
  EnvConfig three_steps;
  three_steps.horizon = 3;
  auto a = make_env_on_graph("placement", layered_graph(20, 4, 1), Cluster::preset("2xgpu-pcie"), three_steps);
  auto b = make_env_on_graph("placement", layered_graph(30, 5, 2), Cluster::preset("2xgpu-pcie"), three_steps);
  for (int rollout_length : {0, 2}) {  // 0: whole episodes; 2: cut mid-episode, bootstrapped
    AgentConfig config = small_config("go");
    config.rollout_length = rollout_length;
    config.graphs_per_update = 1;
    Agent agent(config);
    std::vector<UpdateMetrics> seen;
    agent.train({a.get(), b.get()}, 4 * 4 * 3, [&](const UpdateMetrics& m) {
      seen.push_back(m);
      return true;
    });
    const int per_update = 4 * (rollout_length ? rollout_length : 3);
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.front().step, per_update);
    for (const auto& m : seen) {
      EXPECT_TRUE(std::isfinite(m.policy_loss) && std::isfinite(m.value_loss)) << m.update;
      EXPECT_GT(m.entropy, 0);
    }
    // Round-robin: the graphs alternate, so consecutive updates report different best runtimes.
    ASSERT_GE(seen.size(), 2u);
    EXPECT_NE(seen[0].best_runtime, seen[1].best_runtime);
  }
}

TEST(Agent, RefusesEnvsOfAnotherSpec) {
  auto two = env_on("placement", 12);
  auto joint = env_on("joint", 12);
  Agent agent(small_config("ppo"));
  agent.setup(PolicySpec::of(*two, agent.config()));
  EXPECT_THROW(agent.train({joint.get()}, 4), InvalidArgument);
  EXPECT_THROW(Agent(AgentConfig{.algorithm = "sac"}), InvalidArgument);
  AgentConfig config;
  EXPECT_THROW(set_config(config, "learning_rat", 1.0), InvalidArgument);
  EXPECT_THROW(set_config(config, "epochs", 1.5), InvalidArgument);
}

// A layered graph whose nodes 0, 5, 10, ... form colocation group 0 and 1, 6, 11, ... group 1.
std::unique_ptr<Env> colocated_env(int num_nodes) {
  const GraphPtr plain = layered_graph(num_nodes, 4, 7);
  std::vector<NodeSpec> specs;
  for (NodeId v = 0; v < plain->num_nodes(); ++v) {
    specs.push_back(plain->node_spec(v));
    specs.back().colocation = v % 5 < 2 ? v % 5 : kNone;
  }
  std::vector<std::pair<NodeId, NodeId>> edges;
  for (int e = 0; e < plain->num_edges(); ++e) edges.emplace_back(plain->edge_src()[e], plain->edge_dst()[e]);
  GraphBuilder builder("colocated");
  for (auto& spec : specs) builder.add_node(spec);
  for (auto [a, b] : edges) builder.add_edge(a, b);
  return make_env_on_graph("placement", std::move(builder).build(), Cluster::preset("4xgpu-pcie"));
}

TEST(DecisionUnits, ColocationGroupsAreOneUnit) {
  auto env = colocated_env(40);
  const Graph& g = env->graph();
  const StaticObservation& s = env->static_observation();
  const GraphTensors t = graph_tensors(s.num_nodes, s.node_feature_dim, s.node_features.data(), s.num_edges,
                                       s.edge_index.data(), torch::kCPU, g.colocation().data());
  EXPECT_EQ(t.num_units, 40 - 16 + 2);  // 8 + 8 grouped nodes become 2 units
  ASSERT_TRUE(t.unit.defined());
  for (NodeId v = 0; v < 40; ++v)
    if (v % 5 < 2) EXPECT_EQ(t.unit[v].item<std::int64_t>(), t.unit[v % 5].item<std::int64_t>()) << v;
  // Without groups, one unit per node and nothing to pool.
  const GraphTensors plain = tensors_of(*env);
  EXPECT_EQ(plain.num_units, 40);
  EXPECT_FALSE(plain.unit.defined());

  // Pooled logits: the members' mean; a choice any member forbids is masked for the unit.
  const torch::Tensor logits = torch::randn({2, 40, 4});
  torch::Tensor mask = torch::ones({2, 40, 4}, torch::kBool);
  mask.index_put_({0, 5, 3}, false);  // node 5 (group 0) forbids device 3 in batch item 0
  const torch::Tensor pooled = unit_logits(t, logits, mask);
  ASSERT_EQ(pooled.sizes(), (std::vector<std::int64_t>{2, 26, 4}));
  const std::int64_t u0 = t.unit[0].item<std::int64_t>();
  const torch::Tensor members = torch::arange(0, 40, 5);
  EXPECT_TRUE(torch::allclose(pooled[1][u0], logits[1].index_select(0, members).mean(0)));
  EXPECT_EQ(pooled[0][u0][3].item<float>(), kMaskedLogit);
  EXPECT_NE(pooled[1][u0][3].item<float>(), kMaskedLogit);
  const std::int64_t u2 = t.unit[2].item<std::int64_t>();  // an ungrouped node is its own unit
  EXPECT_TRUE(torch::equal(pooled[0][u2], logits[0][2]));
  // Actions per unit expand to every member.
  const torch::Tensor nodes = node_actions(t, pooled.argmax(-1));
  for (NodeId v = 0; v < 40; ++v) EXPECT_EQ(nodes[1][v].item<std::int64_t>(), nodes[1][v % 5 < 2 ? v % 5 : v].item<std::int64_t>());
}

TEST(DecisionUnits, UntrainedAgentsNeverSplitAGroup) {
  // Uniform per-node sampling would split a 8-node group over 4 devices almost always.
  auto env = colocated_env(60);
  for (const char* algorithm : {"ppo", "go"}) {
    Agent agent(small_config(algorithm));
    const EvaluationResult sampled = agent.evaluate(*env, 20, /*deterministic=*/false);
    EXPECT_EQ(sampled.invalid_fraction, 0.0) << algorithm;
    bool trained_ok = true;
    agent.train({env.get()}, 16, [&](const UpdateMetrics& m) {
      trained_ok &= m.invalid_fraction == 0.0;
      return true;
    });
    EXPECT_TRUE(trained_ok) << algorithm;
  }
}

}  // namespace
}  // namespace goenv::agents
