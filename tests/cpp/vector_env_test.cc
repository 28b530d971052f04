// VectorEnv (envs/vector_env.h): results independent of the thread count,
// NEXT_STEP autoreset and same-step reset_finished, the three layouts' offsets and padding, checks before any
// env steps, per-env exceptions rethrown on the caller, and snapshots.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "envs/registry.h"
#include "envs/vector_env.h"
#include "tests/cpp/test_util.h"

namespace goenv {
namespace {

using test::error_message;

// Owned copies of one call's outputs, comparable with ==.
struct Batch {
  std::vector<float> node_state, globals;
  std::vector<std::int8_t> action_mask;
  std::vector<double> reward, runtime, initial_runtime, speedup, lower_bound, peak_memory;
  std::vector<std::uint8_t> terminated, truncated, oom, invalid;
  BatchBuffers buffers;

  explicit Batch(const VectorEnv& v) {
    const std::size_t b = v.num_envs(), rows = v.node_rows();
    node_state.assign(rows * v.node_state_dim(), -7.f);  // garbage: every element must be written
    action_mask.assign(rows * v.action_mask_width(), 7);
    globals.assign(b * v.global_dim(), -7.f);
    for (auto* x : {&reward, &runtime, &initial_runtime, &speedup, &lower_bound}) x->assign(b, -7);
    peak_memory.assign(b * v.num_devices(), -7);
    for (auto* x : {&terminated, &truncated, &oom, &invalid}) x->assign(b, 7);
    buffers = {node_state.data(), action_mask.data(), globals.data(), reward.data(), terminated.data(),
               truncated.data(), runtime.data(), initial_runtime.data(), speedup.data(), lower_bound.data(),
               peak_memory.data(), oom.data(), invalid.data()};
  }
  Batch(const Batch&) = delete;
  bool operator==(const Batch& o) const {
    return node_state == o.node_state && action_mask == o.action_mask && globals == o.globals &&
           reward == o.reward && terminated == o.terminated && truncated == o.truncated && runtime == o.runtime &&
           initial_runtime == o.initial_runtime && speedup == o.speedup && lower_bound == o.lower_bound &&
           peak_memory == o.peak_memory && oom == o.oom && invalid == o.invalid;
  }
};

EnvConfig config_with_horizon(int horizon) {
  EnvConfig c;
  c.horizon = horizon;
  return c;
}

// Envs on random DAGs of different sizes (graph g for env i is graphs[i % k]).
std::vector<std::unique_ptr<Env>> mixed_envs(int num_envs, int num_graphs, int horizon, std::uint32_t seed = 7) {
  std::mt19937 rng(seed);
  std::vector<GraphPtr> graphs;
  for (int k = 0; k < num_graphs; ++k) graphs.push_back(test::random_dag(rng, 8 + 9 * k, 0.25));
  std::vector<std::unique_ptr<Env>> envs;
  for (int i = 0; i < num_envs; ++i)
    envs.push_back(make_env_on_graph("placement", graphs[i % num_graphs], Cluster::preset("4xgpu-nvlink"),
                                     config_with_horizon(horizon)));
  return envs;
}

std::unique_ptr<VectorEnv> mixed_vector(int num_envs, int num_graphs, int horizon, BatchLayout layout, int threads,
                                        int pad_nodes = 0, int pad_edges = 0) {
  return std::make_unique<VectorEnv>(mixed_envs(num_envs, num_graphs, horizon), layout, threads, pad_nodes,
                                     pad_edges);
}

// Random in-range actions for every env, laid out as the vector env's rows (B, max_nodes).
std::vector<std::int64_t> random_actions(const VectorEnv& v, std::mt19937& rng) {
  std::uniform_int_distribution<int> device(0, v.num_devices() - 1);
  std::vector<std::int64_t> a(static_cast<std::size_t>(v.num_envs()) * v.max_nodes());
  for (auto& x : a) x = device(rng);
  return a;
}

// Runs `steps` random steps and returns every output, concatenated.
std::vector<double> rollout(VectorEnv& v, int steps, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> trace;
  Batch out(v);
  std::vector<std::uint64_t> seeds(v.num_envs());
  for (int i = 0; i < v.num_envs(); ++i) seeds[i] = 100 + i;
  v.reset(seeds.data(), nullptr, out.buffers);
  for (int s = 0; s < steps; ++s) {
    const auto actions = random_actions(v, rng);
    const std::int64_t* heads[] = {actions.data()};
    v.step(heads, {false, v.max_nodes()}, out.buffers);
    trace.insert(trace.end(), out.node_state.begin(), out.node_state.end());
    trace.insert(trace.end(), out.action_mask.begin(), out.action_mask.end());
    trace.insert(trace.end(), out.globals.begin(), out.globals.end());
    trace.insert(trace.end(), out.reward.begin(), out.reward.end());
    trace.insert(trace.end(), out.terminated.begin(), out.terminated.end());
    trace.insert(trace.end(), out.runtime.begin(), out.runtime.end());
    trace.insert(trace.end(), out.peak_memory.begin(), out.peak_memory.end());
  }
  return trace;
}

TEST(VectorEnv, SameResultsForEveryThreadCount) {
  for (BatchLayout layout : {BatchLayout::kConcatenated, BatchLayout::kPadded}) {
    std::vector<std::vector<double>> traces;
    for (int threads : {1, 2, 4}) {
      auto v = mixed_vector(7, 3, 3, layout, threads, 40, 400);
      traces.push_back(rollout(*v, 10, 3));
    }
    EXPECT_EQ(traces[0], traces[1]) << batch_layout_name(layout);
    EXPECT_EQ(traces[0], traces[2]) << batch_layout_name(layout);
  }
}

// One graph (stacked: contiguous blocks per thread), long enough that step()
// measures both modes, picks one and re-measures them (kFirstInterval = 128):
// whatever it runs, the results are those of one thread.
TEST(VectorEnv, StackedSameResultsThroughTheThreadChoice) {
  std::vector<std::vector<double>> traces;
  for (int threads : {1, 2, 3}) {
    auto v = mixed_vector(5, 1, 4, BatchLayout::kStacked, threads);
    traces.push_back(rollout(*v, 150, 9));
  }
  EXPECT_EQ(traces[0], traces[1]);
  EXPECT_EQ(traces[0], traces[2]);
}

TEST(VectorEnv, MatchesSingleEnvsStepByStep) {
  auto v = mixed_vector(4, 2, 2, BatchLayout::kConcatenated, 2);
  auto singles = mixed_envs(4, 2, 2);
  Batch out(*v);
  std::vector<std::uint64_t> seeds = {1, 2, 3, 4};
  v->reset(seeds.data(), nullptr, out.buffers);
  for (auto& e : singles) e->reset(0);
  std::mt19937 rng(5);
  for (int s = 0; s < 5; ++s) {
    const auto actions = random_actions(*v, rng);
    const std::int64_t* heads[] = {actions.data()};
    v->step(heads, {false, v->max_nodes()}, out.buffers);
    for (int i = 0; i < 4; ++i) {
      Env& e = *singles[i];
      const bool autoreset = s == 2;  // horizon 2: steps 0-1 are an episode, step 2 resets
      DynamicObservation obs;
      double reward = 0;
      if (autoreset) {
        obs = e.reset(0);
      } else {
        const StepResult r = e.step({actions.data() + static_cast<std::size_t>(i) * v->max_nodes()});
        obs = r.observation;
        reward = r.reward;
        EXPECT_EQ(out.terminated[i], r.terminated);
      }
      const auto n = static_cast<std::size_t>(e.graph().num_nodes());
      const float* ns = out.node_state.data() + v->node_offset(i) * v->node_state_dim();
      EXPECT_EQ(std::vector<float>(ns, ns + n * v->node_state_dim()), obs.node_state) << "env " << i << " step " << s;
      const std::int8_t* mask = out.action_mask.data() + v->node_offset(i) * v->action_mask_width();
      EXPECT_EQ(std::vector<std::int8_t>(mask, mask + n * v->action_mask_width()), obs.action_mask);
      EXPECT_EQ(std::vector<float>(out.globals.begin() + i * v->global_dim(),
                                   out.globals.begin() + (i + 1) * v->global_dim()),
                obs.globals);
      EXPECT_EQ(out.reward[i], reward);
      EXPECT_EQ(out.runtime[i], e.last_info().runtime);
    }
  }
}

TEST(VectorEnv, NextStepAutoresetIgnoresTheAction) {
  auto v = mixed_vector(2, 2, 1, BatchLayout::kPadded, 2, 40, 400);
  Batch out(*v), reset_out(*v);
  std::vector<std::uint64_t> seeds = {0, 1};
  v->reset(seeds.data(), nullptr, reset_out.buffers);
  std::mt19937 rng(1);
  auto actions = random_actions(*v, rng);
  const std::int64_t* heads[] = {actions.data()};
  v->step(heads, {false, v->max_nodes()}, out.buffers);
  EXPECT_EQ(out.terminated, (std::vector<std::uint8_t>{1, 1}));  // horizon 1
  // The next step resets: even an out-of-range action is ignored.
  std::fill(actions.begin(), actions.end(), 99);
  v->step(heads, {false, v->max_nodes()}, out.buffers);
  EXPECT_EQ(out.terminated, (std::vector<std::uint8_t>{0, 0}));
  EXPECT_EQ(out.truncated, (std::vector<std::uint8_t>{0, 0}));
  EXPECT_EQ(out.reward, (std::vector<double>{0, 0}));
  EXPECT_EQ(out.node_state, reset_out.node_state);
  EXPECT_EQ(out.action_mask, reset_out.action_mask);
  EXPECT_EQ(out.globals, reset_out.globals);
  // Now the action counts again.
  EXPECT_THROW(v->step(heads, {false, v->max_nodes()}, out.buffers), InvalidAction);
}

// reset_finished (what the agents' sampler uses) resets exactly the envs whose
// episode ended, as the next step's autoreset would, and leaves the step's info.
TEST(VectorEnv, ResetFinishedIsSameStepAutoreset) {
  auto v = mixed_vector(3, 3, 2, BatchLayout::kPadded, 2, 40, 400);
  auto twin = mixed_vector(3, 3, 2, BatchLayout::kPadded, 2, 40, 400);
  Batch out(*v), twin_out(*twin);
  std::vector<std::uint64_t> seeds = {5, 6, 7};
  v->reset(seeds.data(), nullptr, out.buffers);
  twin->reset(seeds.data(), nullptr, twin_out.buffers);
  std::mt19937 rng(3);
  auto actions = random_actions(*v, rng);
  const std::int64_t* heads[] = {actions.data()};
  v->step(heads, {false, v->max_nodes()}, out.buffers);
  EXPECT_EQ(v->reset_finished(out.buffers), 0);  // horizon 2: nothing ended yet
  v->step(heads, {false, v->max_nodes()}, out.buffers);
  twin->step(heads, {false, twin->max_nodes()}, twin_out.buffers);
  twin->step(heads, {false, twin->max_nodes()}, twin_out.buffers);
  EXPECT_EQ(out.terminated, (std::vector<std::uint8_t>{1, 1, 1}));
  const std::vector<double> runtime = out.runtime, reward = out.reward;
  EXPECT_EQ(v->reset_finished(out.buffers), 3);
  EXPECT_EQ(out.runtime, runtime);  // the step's outcomes stay
  EXPECT_EQ(out.reward, reward);
  twin->step(heads, {false, twin->max_nodes()}, twin_out.buffers);  // next-step autoreset: the same observation
  EXPECT_EQ(out.node_state, twin_out.node_state);
  EXPECT_EQ(out.action_mask, twin_out.action_mask);
  EXPECT_EQ(out.globals, twin_out.globals);
  // Both go on alike: the reset envs take actions again.
  v->step(heads, {false, v->max_nodes()}, out.buffers);
  twin->step(heads, {false, twin->max_nodes()}, twin_out.buffers);
  EXPECT_EQ(out.runtime, twin_out.runtime);
  EXPECT_EQ(out.node_state, twin_out.node_state);
  EXPECT_EQ(v->get_state(), twin->get_state());
}

TEST(VectorEnv, MaxEpisodeStepsTruncates) {
  auto envs = mixed_envs(2, 1, 100);
  VectorEnv v(std::move(envs), BatchLayout::kStacked, 1, 0, 0, /*max_episode_steps=*/2);
  Batch out(v);
  std::vector<std::uint64_t> seeds = {0, 1};
  v.reset(seeds.data(), nullptr, out.buffers);
  std::mt19937 rng(1);
  const auto actions = random_actions(v, rng);
  const std::int64_t* heads[] = {actions.data()};
  v.step(heads, {false, v.max_nodes()}, out.buffers);
  EXPECT_EQ(out.truncated, (std::vector<std::uint8_t>{0, 0}));
  v.step(heads, {false, v.max_nodes()}, out.buffers);
  EXPECT_EQ(out.truncated, (std::vector<std::uint8_t>{1, 1}));
  EXPECT_EQ(out.terminated, (std::vector<std::uint8_t>{0, 0}));
  v.step(heads, {false, v.max_nodes()}, out.buffers);  // autoreset
  EXPECT_EQ(out.truncated, (std::vector<std::uint8_t>{0, 0}));
  EXPECT_EQ(out.reward, (std::vector<double>{0, 0}));
}

TEST(VectorEnv, ConcatenatedOffsetsAndStaticParts) {
  auto v = mixed_vector(3, 3, 1, BatchLayout::kConcatenated, 1);
  const BatchedStatic& s = v->static_observation();
  std::int64_t node_offset = 0, edge_offset = 0;
  ASSERT_EQ(s.edge_index.size(), 2 * static_cast<std::size_t>(v->total_edges()));
  for (int i = 0; i < 3; ++i) {
    const Graph& g = v->env(i).graph();
    EXPECT_EQ(v->node_offset(i), node_offset);
    EXPECT_EQ(s.num_nodes[i], g.num_nodes());
    EXPECT_EQ(s.num_edges[i], g.num_edges());
    for (int e = 0; e < g.num_edges(); ++e) {
      EXPECT_EQ(s.edge_index[edge_offset + e], g.edge_src()[e] + node_offset);
      EXPECT_EQ(s.edge_index[v->total_edges() + edge_offset + e], g.edge_dst()[e] + node_offset);
    }
    for (int u = 0; u < g.num_nodes(); ++u) EXPECT_EQ(s.batch[node_offset + u], i);
    const auto& f = v->env(i).static_observation().node_features;
    EXPECT_TRUE(std::equal(f.begin(), f.end(), s.node_features.begin() + node_offset * (f.size() / g.num_nodes())));
    node_offset += g.num_nodes();
    edge_offset += g.num_edges();
  }
  EXPECT_EQ(node_offset, v->total_nodes());
  EXPECT_EQ(v->node_rows(), v->total_nodes());
  EXPECT_EQ(v->max_nodes(), v->env(2).graph().num_nodes());

  // Concatenated actions give the same result as padded rows.
  auto w = mixed_vector(3, 3, 1, BatchLayout::kConcatenated, 1);
  Batch a(*v), b(*w);
  std::vector<std::uint64_t> seeds = {0, 1, 2};
  v->reset(seeds.data(), nullptr, a.buffers);
  w->reset(seeds.data(), nullptr, b.buffers);
  std::mt19937 rng(3);
  const auto rows = random_actions(*v, rng);
  std::vector<std::int64_t> flat;
  for (int i = 0; i < 3; ++i)
    flat.insert(flat.end(), rows.begin() + i * v->max_nodes(),
                rows.begin() + i * v->max_nodes() + v->env(i).graph().num_nodes());
  const std::int64_t* row_heads[] = {rows.data()};
  const std::int64_t* flat_heads[] = {flat.data()};
  v->step(row_heads, {false, v->max_nodes()}, a.buffers);
  w->step(flat_heads, {true, 0}, b.buffers);
  EXPECT_TRUE(a == b);
}

TEST(VectorEnv, PaddedRowsAreZeroAndPadToIsChecked) {
  auto v = mixed_vector(3, 3, 1, BatchLayout::kPadded, 2, 50, 300);
  EXPECT_EQ(v->node_rows(), 3 * 50);
  Batch out(*v);
  std::vector<std::uint64_t> seeds = {0, 1, 2};
  v->reset(seeds.data(), nullptr, out.buffers);
  const BatchedStatic& s = v->static_observation();
  EXPECT_FALSE(s.broadcast);
  for (int i = 0; i < 3; ++i) {
    const Graph& g = v->env(i).graph();
    for (int row = g.num_nodes(); row < 50; ++row) {
      for (int k = 0; k < v->node_state_dim(); ++k)
        EXPECT_EQ(out.node_state[(i * 50 + row) * v->node_state_dim() + k], 0.f);
      for (int k = 0; k < v->action_mask_width(); ++k)
        EXPECT_EQ(out.action_mask[(i * 50 + row) * v->action_mask_width() + k], 0);
    }
    const std::int64_t* rows = &s.edge_index[i * 2 * 300];
    for (int e = 0; e < 300; ++e) {
      EXPECT_EQ(rows[e], e < g.num_edges() ? g.edge_src()[e] : -1);
      EXPECT_EQ(rows[300 + e], e < g.num_edges() ? g.edge_dst()[e] : -1);
    }
  }
  const std::string message = error_message<InvalidArgument>(
      [] { mixed_vector(3, 3, 1, BatchLayout::kPadded, 1, 10, 300); });
  EXPECT_HAS(message, "pad_to=(10, 300) is too small for env");
}

TEST(VectorEnv, SameGraphSharesTheStaticObservation) {
  auto env = make_env("placement-inception");
  std::vector<const Env*> templates(4, env.get());
  auto v = VectorEnv::from_templates(templates, BatchLayout::kStacked, 2);
  EXPECT_TRUE(v->same_graph());
  EXPECT_TRUE(v->static_observation().broadcast);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(v->env(i).graph_ptr(), env->graph_ptr());
    EXPECT_EQ(v->env(i).static_observation_ptr(), v->static_observation().shared);
  }
  // Different graphs cannot stack.
  EXPECT_THROW(mixed_vector(2, 2, 1, BatchLayout::kStacked, 1), InvalidArgument);
}

TEST(VectorEnv, BadActionNamesTheEnvAndStepsNothing) {
  auto v = mixed_vector(3, 3, 5, BatchLayout::kPadded, 2, 40, 400);
  Batch out(*v);
  std::vector<std::uint64_t> seeds = {0, 1, 2};
  v->reset(seeds.data(), nullptr, out.buffers);
  const std::string before = v->get_state();
  std::mt19937 rng(2);
  auto actions = random_actions(*v, rng);
  actions[2 * v->max_nodes() + 3] = 4;  // 4 devices: out of range for env 2
  actions[1 * v->max_nodes() + 39] = 99;  // env 1's padding: ignored
  const std::int64_t* heads[] = {actions.data()};
  const std::string message = error_message<InvalidAction>([&] { v->step(heads, {false, v->max_nodes()}, out.buffers); });
  EXPECT_HAS(message, "env 2 of the batch");
  EXPECT_HAS(message, "outside [0, 4)");
  EXPECT_EQ(v->get_state(), before);
}

TEST(VectorEnv, StepBeforeResetThrows) {
  auto v = mixed_vector(2, 1, 1, BatchLayout::kStacked, 2);
  Batch out(*v);
  std::mt19937 rng(2);
  const auto actions = random_actions(*v, rng);
  const std::int64_t* heads[] = {actions.data()};
  EXPECT_THROW(v->step(heads, {false, v->max_nodes()}, out.buffers), ResetNeeded);
}

TEST(VectorEnv, ExceptionInsideTheParallelLoopReachesTheCaller) {
  // set_state runs every env's restore in the OpenMP loop; states of other graphs throw there.
  auto v = mixed_vector(4, 4, 1, BatchLayout::kConcatenated, 4);
  auto w = std::make_unique<VectorEnv>(mixed_envs(4, 4, 1, /*seed=*/99), BatchLayout::kConcatenated, 4);
  Batch out(*w);
  std::vector<std::uint64_t> seeds = {0, 1, 2, 3};
  w->reset(seeds.data(), nullptr, out.buffers);
  const std::string message = error_message<InvalidArgument>([&] { v->set_state(w->get_state()); });
  EXPECT_HAS(message, "another task, graph or cluster");
}

TEST(VectorEnv, SnapshotReproducesTheFuture) {
  auto v = mixed_vector(5, 3, 3, BatchLayout::kConcatenated, 2);
  Batch out(*v);
  std::vector<std::uint64_t> seeds = {0, 1, 2, 3, 4};
  v->reset(seeds.data(), nullptr, out.buffers);
  std::mt19937 rng(11);
  for (int s = 0; s < 4; ++s) {  // mid-episode, one step before an autoreset
    const auto actions = random_actions(*v, rng);
    const std::int64_t* heads[] = {actions.data()};
    v->step(heads, {false, v->max_nodes()}, out.buffers);
  }
  const std::string snapshot = v->get_state();
  auto future = [&](VectorEnv& env) {
    std::mt19937 r(5);
    std::vector<double> trace;
    Batch o(env);
    for (int s = 0; s < 6; ++s) {
      const auto actions = random_actions(env, r);
      const std::int64_t* heads[] = {actions.data()};
      env.step(heads, {false, env.max_nodes()}, o.buffers);
      trace.insert(trace.end(), o.node_state.begin(), o.node_state.end());
      trace.insert(trace.end(), o.reward.begin(), o.reward.end());
      trace.insert(trace.end(), o.terminated.begin(), o.terminated.end());
      trace.insert(trace.end(), o.globals.begin(), o.globals.end());
    }
    return trace;
  };
  const auto expected = future(*v);
  v->set_state(snapshot);
  EXPECT_EQ(future(*v), expected);
  auto fresh = mixed_vector(5, 3, 3, BatchLayout::kConcatenated, 1);  // another engine, same envs
  fresh->set_state(snapshot);
  EXPECT_EQ(future(*fresh), expected);
}

TEST(VectorEnv, PartialResetObservesTheOthers) {
  auto v = mixed_vector(3, 3, 4, BatchLayout::kConcatenated, 2);
  Batch out(*v), again(*v);
  std::vector<std::uint64_t> seeds = {0, 1, 2};
  std::vector<std::uint8_t> mask = {0, 1, 0};
  EXPECT_THROW(v->reset(seeds.data(), mask.data(), out.buffers), ResetNeeded);  // never reset
  v->reset(seeds.data(), nullptr, out.buffers);
  std::mt19937 rng(2);
  const auto actions = random_actions(*v, rng);
  const std::int64_t* heads[] = {actions.data()};
  v->step(heads, {false, v->max_nodes()}, out.buffers);
  v->reset(seeds.data(), mask.data(), again.buffers);
  // Env 0 and 2 keep their stepped observation; env 1 is back at the start.
  const std::int64_t s = v->node_state_dim();
  for (int i : {0, 2}) {
    const auto begin = v->node_offset(i) * s, end = begin + v->env(i).graph().num_nodes() * s;
    EXPECT_TRUE(std::equal(out.node_state.begin() + begin, out.node_state.begin() + end,
                           again.node_state.begin() + begin));
  }
  EXPECT_EQ(again.globals[1 * v->global_dim() + 2], 0.f);  // progress of env 1
}

TEST(VectorEnv, EnvsMustAgreeOnTaskAndDevices) {
  std::vector<std::unique_ptr<Env>> envs;
  std::mt19937 rng(1);
  auto g = test::random_dag(rng, 10, 0.3);
  envs.push_back(make_env_on_graph("placement", g, Cluster::preset("4xgpu-nvlink")));
  envs.push_back(make_env_on_graph("placement", g, Cluster::preset("2xgpu-pcie")));
  const std::string message = error_message<InvalidArgument>(
      [&] { VectorEnv(std::move(envs), BatchLayout::kStacked, 1); });
  EXPECT_HAS(message, "placement choices");
  std::vector<std::unique_ptr<Env>> tasks;
  tasks.push_back(make_env_on_graph("placement", g, Cluster::preset("4xgpu-nvlink")));
  tasks.push_back(make_env_on_graph("scheduling", g, Cluster::preset("4xgpu-nvlink")));
  EXPECT_THROW(VectorEnv(std::move(tasks), BatchLayout::kStacked, 1), InvalidArgument);
  EXPECT_THROW(VectorEnv({}, BatchLayout::kStacked, 1), InvalidArgument);
}

TEST(VectorEnv, MakeBuildsOneGraphPerId) {
  auto v = VectorEnv::make({"placement-inception", "placement-resnet50"}, 4, EnvConfig{}, 2);
  EXPECT_EQ(v->layout(), BatchLayout::kConcatenated);
  EXPECT_EQ(v->env(0).graph_ptr(), v->env(2).graph_ptr());
  EXPECT_EQ(v->env(1).graph_ptr(), v->env(3).graph_ptr());
  EXPECT_NE(v->env(0).graph_ptr(), v->env(1).graph_ptr());
  EXPECT_EQ(VectorEnv::make({"placement-inception"}, 3, EnvConfig{}, 1)->layout(), BatchLayout::kStacked);
}

TEST(Env, IntoVariantsMatchTheAllocatingOnes) {
  // The joint task in node mode exercises every head and the colocation mask.
  std::mt19937 rng(4);
  auto g = test::random_dag(rng, 25, 0.2, /*rich=*/true);
  EnvConfig config;
  config.decision_mode = "node";
  config.horizon = 2;
  for (const std::string task : {"placement", "joint"}) {
    auto a = make_env_on_graph(task, g, Cluster::preset("cpu+2xgpu"), config);
    Env b(*a);
    const int n = g->num_nodes(), s = node_state_dim(a->cluster().num_devices()), w = a->action_mask_width();
    std::vector<float> node_state(static_cast<std::size_t>(n) * s), globals(global_names().size());
    std::vector<std::int8_t> mask(static_cast<std::size_t>(n) * w);
    const DynamicObservation first = a->reset(0);
    b.reset_into(0, node_state.data(), mask.data(), globals.data());
    EXPECT_EQ(first.node_state, node_state);
    EXPECT_EQ(first.action_mask, mask);
    EXPECT_EQ(first.globals, globals);
    for (int step = 0; step < n + 3; ++step) {
      std::vector<std::int64_t> values;
      for (Head h : a->heads()) values.push_back(std::uniform_int_distribution<int>(0, a->choices(h) - 1)(rng));
      std::vector<const std::int64_t*> pointers;
      for (const auto& x : values) pointers.push_back(&x);
      const StepResult r = a->step(pointers);
      const Env::StepOutcome o = b.step_into(pointers.data(), node_state.data(), mask.data(), globals.data());
      EXPECT_EQ(r.reward, o.reward);
      EXPECT_EQ(r.terminated, o.terminated);
      EXPECT_EQ(r.observation.node_state, node_state) << task << " step " << step;
      EXPECT_EQ(r.observation.action_mask, mask) << task << " step " << step;
      EXPECT_EQ(r.observation.globals, globals);
    }
  }
}

}  // namespace
}  // namespace goenv
