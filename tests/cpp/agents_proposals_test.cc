// Policy-guided search's proposals (agents/proposals.h): moves focus on the
// critical path of the best decisions' schedule, in a ruler sequence of sizes; the
// opening smooths and joins the path's runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <set>

#include "agents/config.h"
#include "agents/proposals.h"
#include "core/error.h"
#include "envs/registry.h"
#include "test_util.h"

namespace goenv::agents {
namespace {

TEST(Proposals, MoveSizesFollowARulerSequenceAndSamplesComeEveryEighth) {
  const std::vector<std::int64_t> expected = {0, 1, 2, 1, 4, 1, 2, 0, 1, 8, 1, 2, 1, 4, 1, 0, 2, 1, 16, 1};
  for (std::size_t k = 0; k < expected.size(); ++k) EXPECT_EQ(proposals::units_moved(k), expected[k]) << "k = " << k;
}

// A search's opening (its first min(budget, kOpeningCalls) proposals) moves big segments,
// shrinking to the ruler's sizes; the greedy decision and the samples stay where they were.
TEST(Proposals, TheOpeningOfASearchMovesBigSegmentsThenTheRulerSizes) {
  const std::vector<std::int64_t> sixteen = {0, 15, 14, 13, 12, 11, 10, 0, 8, 8, 6, 5, 4, 4, 2, 0, 2, 1, 16, 1};
  for (std::size_t k = 0; k < sixteen.size(); ++k) EXPECT_EQ(proposals::units_moved(k, 16), sixteen[k]) << "k = " << k;
  for (std::int64_t k = 0; k < 200; ++k) {
    const std::int64_t ruler = proposals::units_moved(k);
    const std::int64_t opened = proposals::units_moved(k, 1024);
    if (k < proposals::kOpeningCalls && ruler != 0) {
      EXPECT_EQ(opened, std::max(ruler, proposals::kMostMoved * (proposals::kOpeningCalls - k) / proposals::kOpeningCalls));
    } else {
      EXPECT_EQ(opened, ruler) << "k = " << k;  // past the opening, and the greedy decision and samples
    }
  }
  EXPECT_EQ(proposals::units_moved(1, 1), 1);  // a one-call budget opens with the greedy decision only
}

struct Case {
  std::unique_ptr<Env> env;
  DynamicObservation observation;
  GraphTensors graph;
  std::int64_t state_dim = 0;
};

Case placement_case() {
  Case c;
  EnvConfig config;
  config.observation_version = kPolicyObservationVersion;
  std::mt19937 rng(7);
  c.env = make_env_on_graph("placement", test::random_dag(rng, 120, 0.04), Cluster::preset("2xgpu-pcie"), config);
  c.observation = c.env->reset(0);
  const StaticObservation& s = c.env->static_observation();
  c.graph = graph_tensors(s.num_nodes, s.node_feature_dim, s.node_features.data(), s.num_edges, s.edge_index.data(),
                          torch::kCPU);
  c.state_dim = static_cast<std::int64_t>(c.observation.node_state.size()) / s.num_nodes;
  return c;
}

TEST(Proposals, MovesTakeCriticalOpsAndChangeExactlyTheirSize) {
  Case c = placement_case();
  const std::int64_t n = c.graph.num_nodes;
  // Every third op on the critical path (from the default start every op is: one device).
  const std::int64_t column = proposals::critical_column(c.state_dim);
  std::set<std::int64_t> critical;
  for (std::int64_t v = 0; v < n; ++v) {
    c.observation.node_state[v * c.state_dim + column] = v % 3 == 0 ? 1.f : 0.f;
    if (v % 3 == 0) critical.insert(v);
  }
  const proposals::Focus focus = proposals::focus_of(c.graph, c.observation, c.state_dim);
  const std::vector<torch::Tensor> logits = {torch::zeros({1, n, 2})};  // a policy without preference
  const std::vector<torch::Tensor> best = {torch::zeros({1, n}, torch::kInt64)};
  torch::Generator generator = at::detail::createCPUGenerator(3);
  int off_path = 0, picks = 0;
  for (int trial = 0; trial < 200; ++trial)
    for (std::int64_t k : {1, 2, 4, 9}) {
      const torch::Tensor moved = proposals::propose(logits, best, focus, k, generator)[0][0].nonzero().view(-1);
      ASSERT_EQ(moved.size(0), proposals::units_moved(k));  // 2 devices: each chosen op goes to the other
      picks += static_cast<int>(moved.size(0));
      for (std::int64_t i = 0; i < moved.size(0); ++i) off_path += critical.count(moved[i].item<std::int64_t>()) == 0;
    }
  // Weight 1e-3 against 1: a few picks in a thousand (two thirds if the focus were ignored).
  EXPECT_LE(off_path * 100, picks);
}

// A move of m >= 2 units is a segment: m consecutive ops of the critical path
// (in topological order) around the drawn one, all to one new choice.
TEST(Proposals, MovesOfSeveralUnitsAreSegmentsOfTheCriticalPathToOneChoice) {
  Case c = placement_case();
  const std::int64_t n = c.graph.num_nodes;
  const std::int64_t column = proposals::critical_column(c.state_dim);
  for (std::int64_t v = 0; v < n; ++v) c.observation.node_state[v * c.state_dim + column] = v % 3 == 0 ? 1.f : 0.f;
  const proposals::Focus focus = proposals::focus_of(c.graph, c.observation, c.state_dim);
  std::vector<std::int64_t> path;  // the critical ops in topological order
  const torch::Tensor order = c.graph.order;
  for (std::int64_t i = 0; i < n; ++i)
    if (order[i].item<std::int64_t>() % 3 == 0) path.push_back(order[i].item<std::int64_t>());
  ASSERT_EQ(focus.path_nodes.size(0), static_cast<std::int64_t>(path.size()));
  const std::vector<torch::Tensor> logits = {torch::zeros({1, n, 4})};  // 4 choices, no preference
  const std::vector<torch::Tensor> best = {torch::zeros({1, n}, torch::kInt64)};
  torch::Generator generator = at::detail::createCPUGenerator(5);
  std::set<std::int64_t> starts;
  for (int trial = 0; trial < 100; ++trial)
    for (std::int64_t k : {2, 4, 9}) {
      const torch::Tensor proposal = proposals::propose(logits, best, focus, k, generator)[0][0];
      const torch::Tensor moved = proposal.nonzero().view(-1);
      const std::int64_t m = proposals::units_moved(k);
      ASSERT_EQ(moved.size(0), m);
      std::set<std::int64_t> at;
      for (std::int64_t i = 0; i < m; ++i) {
        const std::int64_t v = moved[i].item<std::int64_t>();
        EXPECT_EQ(proposal[v].item<std::int64_t>(), proposal[moved[0]].item<std::int64_t>());  // one choice
        const auto where = std::find(path.begin(), path.end(), v);
        ASSERT_NE(where, path.end()) << "op " << v << " is off the critical path";
        at.insert(where - path.begin());
      }
      EXPECT_EQ(*at.rbegin() - *at.begin(), m - 1);  // consecutive on the path
      starts.insert(*at.begin());
    }
  EXPECT_GT(starts.size(), 10u);  // anywhere on the path
}

TEST(Proposals, TheGreedyDecisionOfAStayingPolicyIsTheBestAgain) {
  Case c = placement_case();
  const std::int64_t n = c.graph.num_nodes;
  const proposals::Focus focus = proposals::focus_of(c.graph, c.observation, c.state_dim);
  torch::Tensor logits = torch::zeros({1, n, 2});
  logits.select(2, 0).fill_(5.0);  // every op prefers where it is (device 0)
  const std::vector<torch::Tensor> best = {torch::zeros({1, n}, torch::kInt64)};
  torch::Generator generator = at::detail::createCPUGenerator(3);
  EXPECT_TRUE(proposals::same_as(proposals::propose({logits}, best, focus, 0, generator), best));
  EXPECT_FALSE(proposals::same_as(proposals::propose({logits}, best, focus, 1, generator), best));
  DynamicObservation truncated = c.observation;
  truncated.node_state.pop_back();
  EXPECT_THROW(proposals::focus_of(c.graph, truncated, c.state_dim), InvalidArgument);
}

// The plan: decisions at k = 0 and every 8th; the opening's first four moves smooth runs of
// at most 1, 2, 4, 8 units, its load moves offload and shift, its other even-numbered moves
// join; everything else moves.
TEST(Proposals, TheOpeningSmoothsThenJoinsAndMovesThenTheRulerMoves) {
  using proposals::Kind;
  const std::vector<Kind> sixteen = {Kind::kDecision, Kind::kSmooth, Kind::kSmooth,  Kind::kSmooth,
                                     Kind::kSmooth,   Kind::kMove,   Kind::kJoin,    Kind::kOffload,
                                     Kind::kMove,     Kind::kJoin,   Kind::kMove,    Kind::kOffload,
                                     Kind::kMove,     Kind::kJoin,   Kind::kMove,    Kind::kShift};
  for (std::int64_t k = 0; k < 16; ++k) EXPECT_EQ(proposals::plan(k, 16).kind, sixteen[k]) << "k = " << k;
  for (std::int64_t k = 1; k <= 4; ++k) EXPECT_EQ(proposals::plan(k, 16).size, std::int64_t{1} << (k - 1));
  EXPECT_EQ(proposals::plan(7, 16).size, 16);
  EXPECT_EQ(proposals::plan(11, 16).size, 8);
  EXPECT_EQ(proposals::plan(15, 16).size, 0);  // the best-ranked shift
  EXPECT_EQ(proposals::plan(23, 1024).kind, Kind::kOffload);
  EXPECT_EQ(proposals::plan(31, 1024).size, 1);  // the second-ranked shift
  EXPECT_EQ(proposals::plan(7, 7).kind, Kind::kDecision) << "past a short budget's opening: a sample";
  for (std::int64_t k : {39, 47, 1023}) EXPECT_EQ(proposals::plan(k, 1024).kind, Kind::kDecision) << "k = " << k;
  for (std::int64_t k = 0; k < 200; ++k) {
    const proposals::Plan opened = proposals::plan(k, 1024), plain = proposals::plan(k);
    EXPECT_TRUE(plain.kind == Kind::kDecision || plain.kind == Kind::kMove) << "no opening without a budget";
    if (opened.kind == Kind::kMove || (k >= proposals::kOpeningCalls && opened.kind != Kind::kDecision)) {
      EXPECT_EQ(opened.kind, Kind::kMove) << "k = " << k;
      EXPECT_EQ(opened.size, proposals::units_moved(k, 1024)) << "k = " << k;
    }
  }
}

// A case whose critical path is every third op, and best decisions laid along it as runs.
struct PathCase {
  Case c;
  proposals::Focus focus;
  std::vector<std::int64_t> path;  // the critical ops in topological order
  torch::Tensor best;              // (1, N)
};

PathCase path_case(const std::vector<std::int64_t>& runs_along_path) {
  PathCase pc{placement_case(), {}, {}, {}};
  const std::int64_t n = pc.c.graph.num_nodes, column = proposals::critical_column(pc.c.state_dim);
  for (std::int64_t v = 0; v < n; ++v) pc.c.observation.node_state[v * pc.c.state_dim + column] = v % 3 == 0 ? 1.f : 0.f;
  pc.focus = proposals::focus_of(pc.c.graph, pc.c.observation, pc.c.state_dim);
  for (std::int64_t i = 0; i < n; ++i)
    if (pc.c.graph.order[i].item<std::int64_t>() % 3 == 0) pc.path.push_back(pc.c.graph.order[i].item<std::int64_t>());
  pc.best = torch::zeros({1, n}, torch::kInt64);
  for (std::size_t i = 0; i < pc.path.size(); ++i)
    pc.best[0][pc.path[i]] = runs_along_path[std::min(i, runs_along_path.size() - 1)];
  return pc;
}

std::vector<std::int64_t> along(const PathCase& pc, const torch::Tensor& decisions) {
  std::vector<std::int64_t> out;
  for (std::int64_t v : pc.path) out.push_back(decisions[0][v].item<std::int64_t>());
  return out;
}

TEST(Proposals, SmoothingBringsShortExcursionsOfThePathBackToTheirNeighboursChoice) {
  // Along the path: 0 0 | 1 | 0 0 | 2 2 | 0 | 3 3 3 | 0 | 1 | 2 2 ... (the rest on 2).
  const std::vector<std::int64_t> runs = {0, 0, 1, 0, 0, 2, 2, 0, 3, 3, 3, 0, 1, 2};
  PathCase pc = path_case(runs);
  ASSERT_GT(pc.path.size(), runs.size() + 2);
  const std::vector<torch::Tensor> logits = {torch::zeros({1, pc.c.graph.num_nodes, 4})};
  torch::Generator generator = at::detail::createCPUGenerator(3);
  auto smoothed = [&](std::int64_t k) {  // k = 1..4: runs of at most 1, 2, 4, 8
    const auto proposal = proposals::propose(logits, {pc.best}, pc.focus, k, generator, 16, 0);
    // Off the path nothing moves.
    EXPECT_TRUE(torch::equal(proposal[0].index({0, torch::tensor(std::vector<std::int64_t>{1, 2, 4})}),
                             pc.best.index({0, torch::tensor(std::vector<std::int64_t>{1, 2, 4})})));
    std::vector<std::int64_t> now = along(pc, proposal[0]);
    now.resize(runs.size());  // (the rest stays on 2: a run that smoothing never touches)
    return now;
  };
  // Runs of 1 between two runs of 0: the lone 1 at 2 (the 1 at 12 sits between 0 and 2: stays).
  EXPECT_EQ(smoothed(1), (std::vector<std::int64_t>{0, 0, 0, 0, 0, 2, 2, 0, 3, 3, 3, 0, 1, 2}));
  EXPECT_EQ(smoothed(2), (std::vector<std::int64_t>{0, 0, 0, 0, 0, 0, 0, 0, 3, 3, 3, 0, 1, 2}));
  EXPECT_EQ(smoothed(3), (std::vector<std::int64_t>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2}));
  // Without a placement head, the plan's smoothing is a move of its size instead.
  const auto moved = proposals::propose(logits, {pc.best}, pc.focus, 1, generator, 16, -1);
  EXPECT_EQ((moved[0] != pc.best).sum().item<std::int64_t>(), proposals::units_moved(1, 16));
}

TEST(Proposals, AJoinSendsTheDrawnUnitsRunToItsNeighboursChoice) {
  // Along the path: 0 0 0 | 1 1 | 0 0 0 | 2 2 2 ... (the rest on 2): three runs on the path.
  PathCase pc = path_case({0, 0, 0, 1, 1, 0, 0, 0, 2});
  const std::int64_t length = static_cast<std::int64_t>(pc.path.size());
  const std::vector<torch::Tensor> logits = {torch::zeros({1, pc.c.graph.num_nodes, 3})};
  torch::Generator generator = at::detail::createCPUGenerator(11);
  std::set<std::vector<std::int64_t>> seen;
  for (int trial = 0; trial < 300; ++trial) {
    const auto proposal = proposals::propose(logits, {pc.best}, pc.focus, 6, generator, 16, 0);  // k = 6: a join
    const std::vector<std::int64_t> now = along(pc, proposal[0]);
    if ((proposal[0] != pc.best).sum().item<std::int64_t>() == 1 &&
        std::count(pc.path.begin(), pc.path.end(), (proposal[0] != pc.best)[0].nonzero()[0][0].item<std::int64_t>()) == 0)
      continue;  // drawn off the path (weight 1e-3): a single move
    seen.insert(now);
  }
  const std::vector<std::int64_t> rest(static_cast<std::size_t>(length - 8), 2);
  auto with_rest = [&](std::vector<std::int64_t> head) { head.insert(head.end(), rest.begin(), rest.end()); return head; };
  // The first run joins the second's choice, the 1s join the 0s, the 0s before the 2s go to 1 or
  // 2, the 2s join the 0s; nothing else.
  const std::set<std::vector<std::int64_t>> expected = {
      with_rest({1, 1, 1, 1, 1, 0, 0, 0}), with_rest({0, 0, 0, 0, 0, 0, 0, 0}), with_rest({0, 0, 0, 1, 1, 1, 1, 1}),
      with_rest({0, 0, 0, 1, 1, 2, 2, 2})};
  std::vector<std::int64_t> last_run_joined(static_cast<std::size_t>(length), 0);
  std::copy_n(std::vector<std::int64_t>{0, 0, 0, 1, 1, 0, 0, 0}.begin(), 8, last_run_joined.begin());
  for (const auto& s : seen) EXPECT_TRUE(expected.count(s) || s == last_run_joined) << "an unexpected join";
  EXPECT_EQ(seen.size(), 5u) << "every run joins, sometimes";
}

// Start and finish of every op as the best decisions' schedule would show them: op v runs
// from `start(v)` for one unit of time (the focus reads the node_state columns).
void set_schedule(PathCase& pc, const std::function<double(std::int64_t)>& start) {
  const std::int64_t dim = pc.c.state_dim;
  const std::int64_t s = proposals::state_column(dim, "start"), f = proposals::state_column(dim, "finish");
  for (std::int64_t v = 0; v < pc.c.graph.num_nodes; ++v) {
    pc.c.observation.node_state[v * dim + s] = static_cast<float>(start(v));
    pc.c.observation.node_state[v * dim + f] = static_cast<float>(start(v) + 1);
  }
  pc.focus = proposals::focus_of(pc.c.graph, pc.c.observation, dim);
}

TEST(Proposals, AShiftMovesOneUnitAcrossTheCutOfThePathThatWaitsLongest) {
  // Along the path: 0 0 0 | 1 1 1 1 | 0 ... (the rest on 0): two cuts, at positions 3 and 7.
  PathCase pc = path_case({0, 0, 0, 1, 1, 1, 1, 0});
  std::vector<std::int64_t> position(static_cast<std::size_t>(pc.c.graph.num_nodes), 0);
  for (std::size_t i = 0; i < pc.path.size(); ++i) position[pc.path[i]] = static_cast<std::int64_t>(i);
  // Path op i starts at 2i, and 10 later from position 7 on: the path waits 1 at the first cut, 11 at the second.
  set_schedule(pc, [&](std::int64_t v) { return 2.0 * position[v] + (position[v] >= 7 ? 10.0 : 0.0); });
  const std::vector<torch::Tensor> logits = {torch::zeros({1, pc.c.graph.num_nodes, 2})};
  torch::Generator generator = at::detail::createCPUGenerator(5);
  auto changed = [&](std::int64_t k, std::int64_t budget) {  // (op, its new choice) of the one op that moved
    const auto proposal = proposals::propose(logits, {pc.best}, pc.focus, k, generator, budget, 0);
    const torch::Tensor moved = (proposal[0] != pc.best)[0].nonzero();
    EXPECT_EQ(moved.size(0), 1) << "a shift moves one unit";
    const std::int64_t v = moved[0][0].item<std::int64_t>();
    return std::make_pair(v, proposal[0][0][v].item<std::int64_t>());
  };
  // Ranked first: the op before the longer wait takes the choice after it; second: the op after it the one before.
  EXPECT_EQ(changed(15, 16), std::make_pair(pc.path[6], std::int64_t{0}));
  EXPECT_EQ(changed(31, 32), std::make_pair(pc.path[7], std::int64_t{1}));
  // A path on one choice has no cut: the shift's call samples a whole decision instead.
  PathCase flat = path_case({0});
  set_schedule(flat, [](std::int64_t v) { return static_cast<double>(v); });
  const auto sampled = proposals::propose(logits, {flat.best}, flat.focus, 15, generator, 16, 0);
  EXPECT_GT((sampled[0] != flat.best).sum().item<std::int64_t>(), 1) << "uniform logits: a random decision";
}

// Past the opening, a move draws the units beside the path's waits most often (kWaitWeight)
// and sends them across their wait half the time (kAcrossShare).
TEST(Proposals, PastTheOpeningMovesAimAtThePathsWaitAndCrossIt) {
  // Along the path: 0 0 0 0 0 0 0 | 1 ... (the rest on 1): one cut, at position 7, where the
  // path waits 10; everywhere else the next path op starts as the last one finishes.
  PathCase pc = path_case({0, 0, 0, 0, 0, 0, 0, 1});
  std::vector<std::int64_t> position(static_cast<std::size_t>(pc.c.graph.num_nodes), 0);
  for (std::size_t i = 0; i < pc.path.size(); ++i) position[pc.path[i]] = static_cast<std::int64_t>(i);
  set_schedule(pc, [&](std::int64_t v) { return 1.0 * position[v] + (position[v] >= 7 ? 10.0 : 0.0); });
  ASSERT_GT(pc.path.size(), 30u);
  const std::vector<torch::Tensor> logits = {torch::zeros({1, pc.c.graph.num_nodes, 4})};  // 4 choices, no preference
  torch::Generator generator = at::detail::createCPUGenerator(11);
  const std::int64_t before = pc.path[6], after = pc.path[7];
  auto draws = [&](int& beside, int& crossed) {  // 400 one-unit moves past the opening (k = 33)
    ASSERT_EQ(proposals::plan(33, 1024).kind, proposals::Kind::kMove);
    ASSERT_EQ(proposals::plan(33, 1024).size, 1);
    beside = crossed = 0;
    for (int trial = 0; trial < 400; ++trial) {
      const auto proposal = proposals::propose(logits, {pc.best}, pc.focus, 33, generator, 1024, 0)[0][0];
      const torch::Tensor moved = (proposal != pc.best[0]).nonzero().view(-1);
      ASSERT_EQ(moved.size(0), 1);
      const std::int64_t v = moved[0].item<std::int64_t>(), to = proposal[v].item<std::int64_t>();
      if (v == before || v == after) {
        ++beside;
        crossed += to == pc.best[0][v == before ? after : before].item<std::int64_t>();
      }
    }
  };
  int beside = 0, crossed = 0;
  draws(beside, crossed);
  // Weight 1 + 8 x 10 / 10 = 9 for each of the two against 1 for each of the other path units:
  // about 18 / (18 + path - 2) of the draws (a third here; 2 / path, a twentieth, without).
  EXPECT_GT(beside, 400 / 5);
  // Across half the time, else one of the 3 other choices at random: about 2 / 3 (a third without).
  EXPECT_GT(crossed * 2, beside);
  // The same path without the wait: the two are drawn as often as any other path unit.
  set_schedule(pc, [&](std::int64_t v) { return 1.0 * position[v]; });
  draws(beside, crossed);
  EXPECT_LT(beside, 400 / 8);
}

TEST(Proposals, DataSlackIsHowMuchLaterEachOpCouldFinishWithoutDelayingTheMakespan) {
  PathCase pc = path_case({0});
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> jitter(0.0, 3.0);
  std::vector<double> start(static_cast<std::size_t>(pc.c.graph.num_nodes));
  for (std::int64_t i = 0; i < pc.c.graph.num_nodes; ++i) {  // in topological order, after every producer
    const std::int64_t v = pc.c.graph.order[i].item<std::int64_t>();
    double ready = 0;
    for (std::int64_t e = 0; e < pc.c.graph.num_edges; ++e)
      if (pc.c.graph.destination[e].item<std::int64_t>() == v)
        ready = std::max(ready, start[pc.c.graph.source[e].item<std::int64_t>()] + 1);
    start[v] = ready + std::floor(jitter(rng));
  }
  set_schedule(pc, [&](std::int64_t v) { return start[v]; });
  const auto slack = pc.focus.slack_nodes.accessor<double, 1>();
  const double makespan = *std::max_element(start.begin(), start.end()) + 1;
  double least = makespan;
  for (std::int64_t v = 0; v < pc.c.graph.num_nodes; ++v) {
    EXPECT_GE(slack[v], 0.0);
    EXPECT_LE(start[v] + 1 + slack[v], makespan + 1e-9);
    least = std::min(least, slack[v]);
  }
  EXPECT_EQ(least, 0.0) << "the op that finishes last has none";
  for (std::int64_t e = 0; e < pc.c.graph.num_edges; ++e) {  // a producer's latest finish <= its consumer's latest start
    const std::int64_t u = pc.c.graph.source[e].item<std::int64_t>(), v = pc.c.graph.destination[e].item<std::int64_t>();
    EXPECT_LE(start[u] + 1 + slack[u], start[v] + slack[v] + 1e-9) << u << " -> " << v;
  }
}

TEST(Proposals, AnOffloadSendsTheBusiestChoicesUnitsWithTheMostSlackToTheLeastBusy) {
  PathCase pc = path_case({0});
  set_schedule(pc, [&](std::int64_t v) { return static_cast<double>(pc.c.graph.position[v].item<std::int64_t>()); });
  const std::int64_t n = pc.c.graph.num_nodes;
  for (std::int64_t v = 0; v < n; v += 10) pc.best[0][v] = 1;  // choice 2 none, choice 1 a tenth, choice 0 the rest
  const std::vector<torch::Tensor> logits = {torch::zeros({1, n, 3})};
  torch::Generator generator = at::detail::createCPUGenerator(9);
  const auto proposal = proposals::propose(logits, {pc.best}, pc.focus, 7, generator, 16, 0);  // k = 7: 16 units
  const torch::Tensor moved = (proposal[0] != pc.best)[0].nonzero().view(-1);
  ASSERT_EQ(moved.size(0), 16);
  const auto slack = pc.focus.slack_nodes.accessor<double, 1>();
  double least_moved = std::numeric_limits<double>::infinity(), most_kept = -1;
  for (std::int64_t v = 0; v < n; ++v) {
    const bool was_busiest = pc.best[0][v].item<std::int64_t>() == 0;
    if (proposal[0][0][v].item<std::int64_t>() != pc.best[0][v].item<std::int64_t>()) {
      EXPECT_TRUE(was_busiest) << "only the busiest choice gives units";
      EXPECT_EQ(proposal[0][0][v].item<std::int64_t>(), 2) << "to the least busy choice";
      least_moved = std::min(least_moved, slack[v]);
    } else if (was_busiest) {
      most_kept = std::max(most_kept, slack[v]);
    }
  }
  EXPECT_GE(least_moved, most_kept) << "the units with the most slack go";
}

}  // namespace
}  // namespace goenv::agents
