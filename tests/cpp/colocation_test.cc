// Colocation "follow" (envs/colocation.h) and how the env applies it (docs/environments.md).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "envs/colocation.h"
#include "envs/registry.h"
#include "tests/cpp/test_util.h"

namespace goenv {
namespace {

using test::op;

// A chain 0 -> 1 -> ... -> 5; group 0 = {0, 2, 4}, group 1 = {1, 5}, node 3 alone.
GraphPtr grouped_chain(std::uint8_t kinds_of_node_4 = 0) {
  GraphBuilder b("grouped");
  const std::int32_t groups[] = {0, 1, 0, kNone, 0, 1};
  for (int v = 0; v < 6; ++v) {
    NodeSpec s = op("n" + std::to_string(v), 1e9, 1000);
    s.colocation = groups[v];
    if (v == 4) s.allowed_kinds = kinds_of_node_4;
    b.add_node(s);
    if (v > 0) b.add_edge(v - 1, v);
  }
  return std::move(b).build();
}

TEST(ColocationRule, GroupGoesToTheMajorityDevice) {
  auto g = grouped_chain();
  ColocationRule rule(*g, test::test_cluster(3));
  std::vector<std::int32_t> placement = {2, 0, 2, 1, 1, 0};  // group 0 votes 2, 2, 1 -> 2
  EXPECT_EQ(rule.follow(placement.data()), 1);
  EXPECT_EQ(placement, (std::vector<std::int32_t>{2, 0, 2, 1, 2, 0}));
}

TEST(ColocationRule, TiesGoToTheLowestDevice) {
  auto g = grouped_chain();
  ColocationRule rule(*g, test::test_cluster(3));
  std::vector<std::int32_t> placement = {0, 2, 0, 1, 0, 1};  // group 1 votes 2, 1: a tie -> 1
  EXPECT_EQ(rule.follow(placement.data()), 1);
  EXPECT_EQ(placement[1], 1);
  EXPECT_EQ(placement[5], 1);
  EXPECT_EQ(placement[3], 1);  // a node without a group never moves
}

TEST(ColocationRule, OnlyDevicesEveryMemberAllows) {
  // Node 4 may only run on CPUs: group 0 must go to the CPU even though it is outvoted.
  auto g = grouped_chain(std::uint8_t{1} << static_cast<int>(DeviceKind::kCpu));
  Cluster cluster = test::test_cluster({test::test_device(DeviceKind::kGpu), test::test_device(DeviceKind::kGpu),
                                        test::test_device(DeviceKind::kCpu)});
  ColocationRule rule(*g, cluster);
  std::vector<std::int32_t> placement = {0, 0, 0, 0, 0, 0};
  EXPECT_EQ(rule.follow(placement.data()), 3);
  EXPECT_EQ(placement[0], 2);
  EXPECT_EQ(placement[2], 2);
  EXPECT_EQ(placement[4], 2);
  EXPECT_EQ(validate_decisions(*g, cluster, placement.data(), nullptr), "");
}

TEST(ColocationRule, NodeModeFollowsTheDecidedMembers) {
  auto g = grouped_chain();
  ColocationRule rule(*g, test::test_cluster(2));
  std::vector<std::int32_t> topo_position = {0, 1, 2, 3, 4, 5};
  std::vector<std::int32_t> placement = {0, 0, 0, 0, 0, 0};
  placement[0] = 1;  // the first member of group 0 decides: the whole group follows it
  EXPECT_EQ(rule.follow_node(placement.data(), 0, 0, topo_position.data(), 0), 2);
  EXPECT_EQ(placement, (std::vector<std::int32_t>{1, 0, 1, 0, 1, 0}));
}

TEST(ColocationEnv, FollowMakesEveryRandomPlacementValidAndStrictPenalizesSplits) {
  auto g = grouped_chain();
  std::mt19937 rng(3);
  for (const char* mode : {"follow", "strict"}) {
    EnvConfig config;
    config.colocation = mode;
    config.horizon = 50;
    Env env("placement-grouped", task_spec("placement"), g, Cluster::preset("2xgpu-nvlink"), config);
    env.reset(0);
    int invalid = 0;
    for (int step = 0; step < 50; ++step) {
      std::vector<std::int64_t> action(6);
      for (auto& a : action) a = rng() % 2;
      const StepResult r = env.step({action.data()});
      invalid += r.info.invalid;
      if (r.info.invalid) {
        EXPECT_NE(r.info.invalid_reason.find("colocation"), std::string::npos);
        EXPECT_FALSE(std::isnan(r.info.rejected_runtime));
        EXPECT_EQ(r.info.runtime, env.last_result().runtime);  // the decisions in force
      } else {
        EXPECT_TRUE(std::isnan(r.info.rejected_runtime));
      }
    }
    if (std::string(mode) == "follow") EXPECT_EQ(invalid, 0);
    else EXPECT_GT(invalid, 10);
  }
}

TEST(ColocationEnv, UnknownModeIsRefused) {
  EnvConfig config;
  config.colocation = "loose";
  auto make = [&] { Env env("placement-grouped", task_spec("placement"), grouped_chain(),
                            Cluster::preset("2xgpu-nvlink"), config); };
  EXPECT_THROW(make(), ::goenv::InvalidArgument);
}

}  // namespace
}  // namespace goenv
