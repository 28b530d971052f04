#include "agents/move_gains.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>

#include "agents/imitation.h"
#include "agents/sampler.h"
#include "core/error.h"
#include "core/hash.h"
#include "envs/observation.h"
#include "envs/registry.h"

namespace goenv::agents::move_gains {

namespace {

// One graph's labelled decisions: their observations as one batch, and per decision the
// soft targets (S, U, C) of the placement head.
struct Labelled {
  GraphTensors graph;
  Batch states;
  torch::Tensor targets;
};

// The nodes of each decision unit (a colocation group moves as one).
std::vector<std::vector<std::int64_t>> unit_members(const GraphTensors& graph) {
  const std::int64_t n = graph.num_nodes;
  if (!graph.unit.defined()) {
    std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(n));
    for (std::int64_t v = 0; v < n; ++v) out[static_cast<std::size_t>(v)] = {v};
    return out;
  }
  const torch::Tensor unit = graph.unit.to(torch::kCPU).contiguous();
  const std::int64_t* unit_of = unit.data_ptr<std::int64_t>();
  std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(graph.num_units));
  for (std::int64_t v = 0; v < n; ++v) out[static_cast<std::size_t>(unit_of[v])].push_back(v);
  return out;
}

// Per unit, the softmax over its choices of (gain - temperature) / temperature, where a move's
// gain is the share of the runtime it saves and staying put scores 0: a move is as likely as
// staying only where it saves `temperature` of the runtime. Without that margin a unit whose
// moves change nothing (off the critical path) would look as worth moving as one whose move
// pays. A move that is infeasible or not allowed weighs 0.
torch::Tensor soft_targets(const std::vector<double>& gains, std::int64_t units, std::int64_t choices,
                           double temperature, const std::vector<std::int64_t>& current) {
  torch::Tensor scores = (torch::tensor(gains, torch::kFloat64).view({units, choices}) - temperature) / temperature;
  scores.scatter_(1, torch::tensor(current, torch::kInt64).view({units, 1}), 0.0);
  return torch::softmax(scores, -1).to(torch::kFloat32);
}

// Labels the best heuristic's decisions on `prototype` and `states` - 1 perturbations of them:
// one simulation per (unit, other allowed device) of each feasible decision.
Labelled label(Model& model, const Env& prototype, std::size_t index, std::int64_t placement_head,
               std::int64_t states, double temperature, std::uint64_t stream, std::int64_t& calls) {
  const std::uint64_t seed = static_cast<std::uint64_t>(model.config.seed);
  Teacher best = solve_teacher(prototype, "best", seed);
  calls += best.simulator_calls;
  Labelled out;
  EnvConfig config = prototype.config();
  config.observation_version = kPolicyObservationVersion;
  config.horizon = std::numeric_limits<int>::max();  // every move is one step of one episode
  config.start.clear();
  std::unique_ptr<Env> env = make_env_on_graph(prototype.task(), prototype.graph_ptr(), prototype.cluster(), config);
  out.graph = model.tensors_of(*env);
  const std::int64_t n = out.graph.num_nodes, choices = env->choices(Head::kPlacement);
  const std::vector<std::vector<std::int64_t>> members = unit_members(out.graph);
  const std::int64_t units = static_cast<std::int64_t>(members.size());
  const ObservationDims dims = model.dims_of(out.graph);
  std::mt19937_64 random(splitmix64(seed ^ splitmix64(stream) ^ (static_cast<std::uint64_t>(index) << 20)));
  std::vector<DynamicObservation> observed;
  std::vector<torch::Tensor> targets;
  for (std::int64_t s = 0; s < states; ++s) {
    std::vector<std::vector<std::int64_t>> actions = best.actions;
    std::vector<std::int64_t>& placement = actions[static_cast<std::size_t>(placement_head)];
    const DynamicObservation reset = env->reset(reset_seed(model.config, stream, index, static_cast<std::uint64_t>(s)));
    const Batch batch = stack({view_of(reset, dims, static_cast<int>(n))}, dims, static_cast<int>(n), model.device);
    const torch::Tensor allowed =
        model.uniform_logits(out.graph, batch)[static_cast<std::size_t>(placement_head)][0].to(torch::kCPU) >
        kMaskedLogit / 2;
    const auto may = allowed.accessor<bool, 2>();
    // Perturbed: 2% of the units per state index move to another allowed device.
    const std::int64_t moved = s == 0 ? 0 : std::max<std::int64_t>(1, units * 2 * s / 100);
    for (std::int64_t m = 0; m < moved; ++m) {
      const std::int64_t u = static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(units));
      const std::int64_t c = static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(choices));
      if (!may[u][c]) continue;
      for (const std::int64_t v : members[static_cast<std::size_t>(u)]) placement[static_cast<std::size_t>(v)] = c;
    }
    const StepResult start = step_actions(*env, actions);
    ++calls;
    if (start.info.oom || start.info.invalid) continue;
    const double runtime = start.info.runtime;
    std::vector<const std::int64_t*> parts;
    for (const auto& a : actions) parts.push_back(a.data());
    std::vector<double> gains(static_cast<std::size_t>(units * choices), -std::numeric_limits<double>::infinity());
    std::vector<std::int64_t> currents(static_cast<std::size_t>(units));
    for (std::int64_t u = 0; u < units; ++u) {
      const std::vector<std::int64_t>& nodes = members[static_cast<std::size_t>(u)];
      const std::int64_t current = currents[static_cast<std::size_t>(u)] = placement[static_cast<std::size_t>(nodes.front())];
      for (std::int64_t c = 0; c < choices; ++c) {
        if (c == current || !may[u][c]) continue;
        for (const std::int64_t v : nodes) placement[static_cast<std::size_t>(v)] = c;
        env->advance(parts);
        ++calls;
        const StepInfo& info = env->last_info();
        if (!(info.oom || info.invalid)) gains[static_cast<std::size_t>(u * choices + c)] = (runtime - info.runtime) / runtime;
      }
      for (const std::int64_t v : nodes) placement[static_cast<std::size_t>(v)] = current;
    }
    observed.push_back(start.observation);
    targets.push_back(soft_targets(gains, units, choices, temperature, currents));
  }
  std::vector<ObservationView> views;
  for (const auto& o : observed) views.push_back(view_of(o, dims, static_cast<int>(n)));
  out.states = stack(views, dims, static_cast<int>(n), model.device);
  out.targets = torch::stack(targets).to(model.device);
  return out;
}

}  // namespace

ImitationMetrics learn(Model& model, const std::vector<const Env*>& prototypes, std::int64_t steps,
                       std::int64_t states, double temperature, std::uint64_t stream,
                       const std::function<bool(const ImitationMetrics&)>& callback) {
  GOENV_CHECK(!prototypes.empty(), InvalidArgument, "learn_moves needs at least one env");
  GOENV_CHECK(steps >= 1, InvalidArgument, "learn_moves steps must be >= 1, got " << steps);
  GOENV_CHECK(states >= 1 && states <= 50, InvalidArgument, "states must be in [1, 50], got " << states);
  GOENV_CHECK(std::isfinite(temperature) && temperature > 0, InvalidArgument,
              "temperature must be a finite number > 0 (a share of the runtime), got " << temperature);
  imitation::check_envs(model, prototypes);
  const auto head = std::find(model.spec.heads.begin(), model.spec.heads.end(), Head::kPlacement);
  GOENV_CHECK(head != model.spec.heads.end(), InvalidArgument,
              "learn_moves labels moves of units between devices: the agent's envs have no placement head ("
                  << model.spec.describe() << ")");
  const std::int64_t placement_head = head - model.spec.heads.begin();
  const ThreadScope threads(model.config.num_threads);
  const auto start = std::chrono::steady_clock::now();
  ImitationMetrics metrics;
  std::vector<Labelled> labelled;  // every target first: a failure leaves the weights as they were
  {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < prototypes.size(); ++i)
      labelled.push_back(
          label(model, *prototypes[i], i, placement_head, states, temperature, stream, metrics.simulator_calls));
  }
  const std::size_t per_step = imitation::graphs_per_step(model, labelled.size());
  std::size_t next = 0;
  for (std::int64_t step = 1; step <= steps; ++step) {
    model.optimizer->zero_grad();
    double loss_sum = 0, accuracy_sum = 0;
    for (std::size_t j = 0; j < per_step; ++j) {
      const Labelled& item = labelled[(next + j) % labelled.size()];
      const torch::Tensor logits = model.run(item.graph, item.states).first[static_cast<std::size_t>(placement_head)];
      const torch::Tensor log_p = torch::log_softmax(logits.to(torch::kFloat32), -1);
      const torch::Tensor loss = -(item.targets * log_p).sum(-1).mean();
      (loss / static_cast<double>(per_step)).backward();
      torch::NoGradGuard no_grad;
      loss_sum += loss.item<double>();
      accuracy_sum += logits.argmax(-1).eq(item.targets.argmax(-1)).to(torch::kFloat64).mean().item<double>();
    }
    next = (next + per_step) % labelled.size();
    imitation::finish_step(model, step, loss_sum, accuracy_sum, per_step, start, metrics);
    if (callback && !callback(metrics)) break;
  }
  return metrics;
}

}  // namespace goenv::agents::move_gains
