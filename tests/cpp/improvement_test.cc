// Schedule slack (core/slack.h), per-device observation arrays and episode
// starts (envs/env.h, envs/start.h): docs/environments.md, observation version 2.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/error.h"
#include "core/slack.h"
#include "envs/registry.h"
#include "envs/start.h"
#include "tests/cpp/test_util.h"

namespace goenv {
namespace {

using test::kGflop;
using test::op;

// a -> {b (5 s), c (2 s)} -> d, every op 1 s otherwise; 1000-byte tensors (1 s over a link).
GraphPtr diamond() {
  GraphBuilder g("diamond");
  g.add_node(op("a", 1 * kGflop, 1000));
  g.add_node(op("b", 5 * kGflop, 1000));
  g.add_node(op("c", 2 * kGflop, 1000));
  g.add_node(op("d", 1 * kGflop, 1000));
  g.add_edge(0, 1);
  g.add_edge(0, 2);
  g.add_edge(1, 3);
  g.add_edge(2, 3);
  return std::move(g).build();
}

TEST(ScheduleSlack, ShortBranchOnAnotherDeviceWaitsForTheLongOne) {
  const auto g = diamond();
  const Cluster cluster = test::test_cluster(2);
  Simulator sim(g, cluster);
  const std::vector<std::int32_t> placement = {0, 0, 1, 0};
  const SimulationResult& r = sim.run({placement.data(), nullptr});
  // a 0-1; b 1-6 on device 0; c: transfer 1-2, runs 2-4 on device 1, back 4-5; d 6-7.
  ASSERT_DOUBLE_EQ(r.runtime, 7.0);
  const std::vector<double> slack = schedule_slack(*g, cluster, r);
  EXPECT_DOUBLE_EQ(slack[0], 0.0);
  EXPECT_DOUBLE_EQ(slack[1], 0.0);
  EXPECT_DOUBLE_EQ(slack[2], 1.0);  // c may finish at 5 (d starts at 6 after a 1 s transfer)
  EXPECT_DOUBLE_EQ(slack[3], 0.0);
  for (NodeId v = 0; v < 4; ++v) EXPECT_EQ(r.critical[v] == 1, slack[v] == 0.0) << v;
}

TEST(ScheduleSlack, DeviceOrderCountsOnOneDevice) {
  const auto g = diamond();
  const Cluster cluster = test::test_cluster(1);
  Simulator sim(g, cluster);
  const SimulationResult& r = sim.run({});
  ASSERT_DOUBLE_EQ(r.runtime, 9.0);  // everything in sequence
  for (double s : schedule_slack(*g, cluster, r)) EXPECT_DOUBLE_EQ(s, 0.0);
}

TEST(DeviceObservation, StateRowsDescribeTheDecisionsInForce) {
  auto env = make_env_on_graph("placement", diamond(), test::test_cluster(2), EnvConfig{});
  ASSERT_EQ(env->observation_version(), kObservationVersion);
  const DynamicObservation reset = env->reset(0);
  const int sd = env->device_state_dim();
  ASSERT_EQ(sd, static_cast<int>(device_state_names().size()));
  ASSERT_EQ(reset.device_state.size(), 2u * sd);
  EXPECT_FLOAT_EQ(reset.device_state[0], 1.f);       // device 0 busy all the time
  EXPECT_FLOAT_EQ(reset.device_state[sd + 0], 0.f);  // device 1 unused
  EXPECT_FLOAT_EQ(reset.device_state[sd + 1], 1.f);  // ... and idle
  const std::vector<std::int64_t> split = {0, 0, 1, 0};
  const StepResult step = env->step({split.data()});
  EXPECT_FLOAT_EQ(step.observation.device_state[0], 7.f / 7.f);       // a, b, d: 7 s of 7
  EXPECT_FLOAT_EQ(step.observation.device_state[sd + 0], 2.f / 7.f);  // c: 2 s
  EXPECT_FLOAT_EQ(step.observation.device_state[sd + 5], 0.25f);      // one node of four
  const int s = env->node_state_dim();
  EXPECT_FLOAT_EQ(step.observation.node_state[2 * s + s - 1], 1.f / 7.f);  // c's slack, of the runtime
  EXPECT_EQ(env->device_features().size(), 2u * device_feature_names().size());
}

TEST(DeviceObservation, VersionOneHasNoDeviceArraysAndAPrefixNodeState) {
  EnvConfig v1;
  v1.observation_version = 1;
  auto a = make_env_on_graph("placement", diamond(), test::test_cluster(2), v1);
  auto b = make_env_on_graph("placement", diamond(), test::test_cluster(2), EnvConfig{});
  const DynamicObservation oa = a->reset(0), ob = b->reset(0);
  EXPECT_TRUE(oa.device_state.empty());
  EXPECT_TRUE(a->device_features().empty());
  const int sa = a->node_state_dim(), sb = b->node_state_dim();
  ASSERT_EQ(sb, sa + 1);
  for (int v = 0; v < 4; ++v)
    for (int k = 0; k < sa; ++k) EXPECT_EQ(oa.node_state[v * sa + k], ob.node_state[v * sb + k]);
  v1.observation_version = 0;
  EXPECT_THROW(make_env_on_graph("placement", diamond(), test::test_cluster(2), v1), InvalidArgument);
}

TEST(EpisodeStart, ResetStartsFromTheStartAndKeepsTheBest) {
  auto env = make_env_on_graph("placement", diamond(), test::test_cluster(2), [] {
    EnvConfig c;
    c.horizon = 3;
    return c;
  }());
  Solution split;
  split.placement = {0, 0, 1, 0};
  env->set_start(split);
  StepInfo info;
  env->reset(0, &info);
  EXPECT_DOUBLE_EQ(info.runtime, 7.0);
  EXPECT_DOUBLE_EQ(info.initial_runtime, 9.0);  // the defaults': speedup's reference whatever the start
  EXPECT_DOUBLE_EQ(info.best_runtime, 7.0);
  const std::vector<std::int64_t> one = {0, 0, 0, 0};
  const StepResult worse = env->step({one.data()});
  EXPECT_DOUBLE_EQ(worse.info.runtime, 9.0);
  EXPECT_DOUBLE_EQ(worse.reward, (7.0 - 9.0) / 9.0);
  EXPECT_DOUBLE_EQ(worse.info.best_runtime, 7.0);
  EXPECT_EQ(env->best().placement, split.placement);
  // A one-episode start leaves the env's own start in place.
  Solution other;
  other.placement = {1, 1, 1, 1};
  env->reset(0, &info, &other);
  EXPECT_DOUBLE_EQ(info.runtime, 9.0);
  env->reset(0, &info);
  EXPECT_DOUBLE_EQ(info.runtime, 7.0);
}

TEST(EpisodeStart, BadStartsThrowAndChangeNothing) {
  Device small = test::test_device();
  small.memory_bytes = 2500;  // two live 1000-byte tensors fit, not everything
  auto env = make_env_on_graph("placement", diamond(), test::test_cluster(2, small), EnvConfig{});
  StepInfo info;
  env->reset(0, &info);
  const double before = info.runtime;
  Solution wrong;
  wrong.placement = {0, 0, 2, 0};
  EXPECT_THROW(env->set_start(wrong), InvalidArgument);
  wrong.placement = {0, 0};
  EXPECT_THROW(env->set_start(wrong), InvalidArgument);
  EXPECT_FALSE(env->has_start());
  EXPECT_THROW(start_decisions(*env, "no-such-method"), NotFound);
  env->reset(0, &info);
  EXPECT_DOUBLE_EQ(info.runtime, before);
}

TEST(EpisodeStart, ConfiguredStartIsABaselinesDecisions) {
  EnvConfig config;
  config.start = "heft";
  auto env = make_env("placement-inception", config);
  ASSERT_TRUE(env->has_start());
  StepInfo info;
  env->reset(0, &info);
  EnvConfig plain;
  auto reference = make_env("placement-inception", plain);
  const Solution heft = start_decisions(*reference, "heft");
  EXPECT_EQ(env->placement(), heft.placement);
  EXPECT_DOUBLE_EQ(info.runtime, reference->evaluate(heft.placement, heft.priority, heft.fusion).runtime);
  EXPECT_EQ(start_decisions(*env, "default").placement, reference->initial_decisions().placement);
}

// advance() is step() without its observation: the same transition, and observation()
// (or any later observe) shows the schedule in force, its slack included.
TEST(Advance, IsAStepObservedOnlyWhenAsked) {
  EnvConfig config;
  config.horizon = 16;
  auto stepped = make_env("placement-inception", config);
  auto advanced = make_env("placement-inception", config);
  stepped->reset(0);
  advanced->reset(0);
  const int n = stepped->graph().num_nodes();
  std::mt19937 rng(7);
  auto same = [&](const DynamicObservation& a, const DynamicObservation& b) {
    EXPECT_EQ(a.node_state, b.node_state);
    EXPECT_EQ(a.action_mask, b.action_mask);
    EXPECT_EQ(a.globals, b.globals);
    EXPECT_EQ(a.device_state, b.device_state);
  };
  ASSERT_EQ(node_state_names(kObservationVersion).back(), "slack");
  const int slack_column = stepped->node_state_dim() - 1;
  bool slack_seen = false;
  for (int step = 0; step < 6; ++step) {
    std::vector<std::int64_t> placement(n);
    for (auto& d : placement) d = static_cast<std::int64_t>(rng() % 2);
    const StepResult r = stepped->step({placement.data()});
    const Env::StepOutcome o = advanced->advance({placement.data()});
    EXPECT_EQ(o.reward, r.reward);
    EXPECT_EQ(o.terminated, r.terminated);
    EXPECT_EQ(advanced->last_info().runtime, r.info.runtime);
    EXPECT_EQ(advanced->placement(), stepped->placement());
    EXPECT_EQ(advanced->steps(), stepped->steps());
    if (step % 2 == 0) {  // every other step unobserved: the next one's schedule replaces it
      const DynamicObservation observed = advanced->observation();
      same(observed, r.observation);
      for (int v = 0; v < n; ++v) slack_seen |= observed.node_state[v * stepped->node_state_dim() + slack_column] > 0;
    } else {  // the caller-buffer observation derives the slack itself
      std::vector<float> node_state(r.observation.node_state.size()), globals(r.observation.globals.size()),
          device_state(r.observation.device_state.size());
      std::vector<std::int8_t> mask(r.observation.action_mask.size());
      advanced->observe_into(node_state.data(), mask.data(), globals.data(), device_state.data());
      EXPECT_EQ(node_state, r.observation.node_state);
      EXPECT_EQ(device_state, r.observation.device_state);
    }
  }
  EXPECT_TRUE(slack_seen);  // the comparison covered a schedule with slack
  EXPECT_EQ(advanced->get_state(), stepped->get_state());
}

}  // namespace
}  // namespace goenv
