#include "agents/imitation.h"

#include <algorithm>

#include <chrono>

#include "core/error.h"
#include "core/suggest.h"
#include "envs/observation.h"
#include "envs/registry.h"

namespace goenv::agents {

std::vector<std::string> teacher_names(const Env& env) {
  std::vector<std::string> out = {"best"};
  for (const auto& name : baseline_names(env.task())) out.push_back(name);
  return out;
}

std::string teacher_method(const std::string& name) { return name == "best" ? "best-heuristic" : name; }

std::vector<std::vector<std::int64_t>> solution_actions(const Env& env, const Solution& solution) {
  std::vector<std::vector<std::int64_t>> out;
  for (Head head : env.heads()) {
    if (head == Head::kPriority) {
      out.push_back(quantize_priorities(solution.priority, env.choices(head)));
    } else {
      const auto& values = head == Head::kPlacement ? solution.placement : solution.fusion;
      out.emplace_back(values.begin(), values.end());
    }
  }
  return out;
}

Teacher solve_teacher(const Env& prototype, const std::string& method, std::uint64_t seed) {
  const std::vector<std::string> choices = teacher_names(prototype);
  bool known = false;
  for (const auto& c : choices) known = known || c == method;
  const std::vector<std::string> all = baseline_names();
  const bool elsewhere = std::find(all.begin(), all.end(), method) != all.end();  // a baseline of another task
  GOENV_CHECK(known, InvalidArgument,
              (elsewhere ? "teacher '" : "unknown teacher '")
                  << method << (elsewhere ? "' decides none of the heads of " : "' for ") << prototype.id()
                  << " (a " << prototype.task() << " env); the choices are " << joined_names(choices));
  Teacher t;
  t.method = teacher_method(method);
  auto env = copy_env(prototype);
  env->reset(seed);
  const BaselineResult solved = solve_baseline(*env, t.method, Budget{1000, seed});
  t.actions = solution_actions(*env, solved.decisions);
  const StepResult r = step_actions(*env, t.actions);
  t.simulator_calls = solved.simulator_calls + 1;
  const bool bad = r.info.oom || r.info.invalid;
  std::vector<std::string> others;
  for (const auto& c : choices)
    if (c != method) others.push_back(c);
  GOENV_CHECK(!bad, InvalidArgument,
              "teacher '" << method << "' is infeasible on " << prototype.id() << " ("
                          << (r.info.invalid_reason.empty() ? "out of memory" : r.info.invalid_reason)
                          << "); choose another teacher: " << joined_names(others));
  t.runtime = r.info.runtime;
  t.reward = r.reward;
  return t;
}

namespace imitation {

namespace {

// Share of decision units whose most likely choice is the teacher's.
double accuracy(const std::vector<torch::Tensor>& logits, const std::vector<torch::Tensor>& targets) {
  double sum = 0;
  for (std::size_t h = 0; h < logits.size(); ++h)
    sum += logits[h].argmax(-1).eq(targets[h]).to(torch::kFloat64).mean().item<double>();
  return sum / static_cast<double>(logits.size());
}

// AgentConfig::canonical_teacher: the teacher's interchangeable devices (equal static features)
// renumbered in order of first use along the topological order, then simulated again. Which of
// two identical GPUs a teacher calls 0 is arbitrary, and a policy that scores (unit, device)
// pairs from features cannot tell them apart; renumbered, the label says which part of the graph
// stays on the device the default uses and which parts leave it.
void renumber_devices(const Env& prototype, Teacher& t, std::uint64_t seed) {
  const std::vector<Head>& heads = prototype.heads();
  const auto placement_head = std::find(heads.begin(), heads.end(), Head::kPlacement);
  if (placement_head == heads.end()) return;
  std::vector<std::vector<std::int64_t>> actions = t.actions;
  std::vector<std::int64_t>& placement = actions[static_cast<std::size_t>(placement_head - heads.begin())];
  const std::vector<float> features = device_features(prototype.cluster());
  const std::size_t d = static_cast<std::size_t>(prototype.cluster().num_devices()), width = features.size() / d;
  std::vector<std::vector<std::int64_t>> members(d);  // per class (its first device), its devices in order
  std::vector<std::size_t> class_of(d);
  for (std::size_t i = 0; i < d; ++i) {
    class_of[i] = i;
    for (std::size_t j = 0; j < i; ++j)
      if (std::equal(features.begin() + i * width, features.begin() + (i + 1) * width, features.begin() + j * width)) {
        class_of[i] = class_of[j];
        break;
      }
    members[class_of[i]].push_back(static_cast<std::int64_t>(i));
  }
  std::vector<std::int64_t> to(d, -1);
  std::vector<std::size_t> used(d, 0);
  auto number = [&](std::size_t device) {
    if (to[device] < 0) to[device] = members[class_of[device]][used[class_of[device]]++];
  };
  for (const NodeId v : prototype.graph().topological_order()) number(static_cast<std::size_t>(placement[v]));
  for (std::size_t device = 0; device < d; ++device) number(device);
  for (std::int64_t& device : placement) device = to[static_cast<std::size_t>(device)];
  auto env = copy_env(prototype);
  env->reset(seed);  // as solve_teacher measured the teacher
  const StepResult r = step_actions(*env, actions);
  ++t.simulator_calls;
  if (r.info.oom || r.info.invalid) return;  // not interchangeable after all: the teacher as it was
  t.actions = std::move(actions);
  t.runtime = r.info.runtime;
  t.reward = r.reward;
}

// Makes sure the graph `key` of `env` has a teacher `method` with targets: the
// kept one, or one solved into `fresh` (the simulations it ran added to `calls`).
void prepare_teacher(Model& model, const Env& env, std::uint64_t key, const GraphTensors& graph,
                     const std::string& method, std::map<std::uint64_t, TeacherEntry>& fresh, std::int64_t& calls) {
  const std::string resolved = teacher_method(method);
  verify_teacher(model, env, key);
  auto it = model.teachers.find(key);
  if (it == model.teachers.end() || it->second.teacher.method != resolved) {
    it = fresh.find(key);
    if (it == fresh.end()) {
      Teacher t = solve_teacher(env, method, static_cast<std::uint64_t>(model.config.seed));
      if (model.config.canonical_teacher) renumber_devices(env, t, static_cast<std::uint64_t>(model.config.seed));
      calls += t.simulator_calls;
      it = fresh.emplace(key, TeacherEntry{std::move(t), {}}).first;
    }
  }
  if (it->second.targets.empty()) it->second.targets = targets(graph, model.spec, it->second.teacher, model.device);
}

// DAgger: the states one sampled episode of the current policy visits (all
// but the terminal one), to be labelled with the teacher's decisions.
std::int64_t dagger_states(Model& model, Env* env, const GraphTensors& graph, std::uint64_t stream, Batch& states) {
  torch::NoGradGuard no_grad;
  std::vector<DynamicObservation> visited;
  std::vector<std::vector<std::int64_t>> decided;
  std::int64_t calls = 0;
  const std::uint64_t seed = episode_seed(reset_seed(model.config, stream, kDagger, 0), model.weights.version);
  run_episode(model, *env, graph, seed, false, decided, calls, &visited);
  const int n = static_cast<int>(graph.num_nodes);
  std::vector<ObservationView> views;
  const ObservationDims dims = model.dims_of(graph);
  for (const auto& o : visited) views.push_back(view_of(o, dims, n));
  states = stack(views, dims, n, model.device);
  return calls;
}

}  // namespace

void check_envs(Model& model, const std::vector<const Env*>& prototypes) {
  for (std::size_t i = 0; i < prototypes.size(); ++i) {
    GOENV_CHECK(prototypes[i] != nullptr, InvalidArgument, "env " << i << " is null");
    model.check_env(*prototypes[i]);
  }
}

std::size_t graphs_per_step(const Model& model, std::size_t count) {
  return model.config.graphs_per_update > 0 ? std::min<std::size_t>(model.config.graphs_per_update, count) : count;
}

void finish_step(Model& model, std::int64_t step, double loss_sum, double accuracy_sum, std::size_t graphs,
                 std::chrono::steady_clock::time_point start, ImitationMetrics& metrics) {
  if (model.config.max_grad_norm > 0)
    torch::nn::utils::clip_grad_norm_(model.policy->parameters(), model.config.max_grad_norm);
  // A diverged loss (from extreme weights) would write NaN into every weight: the step is not taken.
  std::vector<torch::Tensor> finite;
  for (const auto& p : model.policy->parameters())
    if (p.grad().defined()) finite.push_back(p.grad().isfinite().all());
  GOENV_CHECK(finite.empty() || torch::stack(finite).all().item<bool>(), InvalidArgument,
              "training diverged at step " << step << ": a gradient is not finite, so the step was not taken "
                                           << "(the weights are those before it). Lower the learning rate, or start "
                                           << "from moderate weights");
  model.optimizer->step();
  ++model.weights.version;
  metrics.step = step;
  metrics.loss = loss_sum / static_cast<double>(graphs);
  metrics.accuracy = accuracy_sum / static_cast<double>(graphs);
  metrics.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<torch::Tensor> targets(const GraphTensors& graph, const PolicySpec& spec, const Teacher& t,
                                   const torch::Device& device) {
  std::vector<torch::Tensor> out;
  for (std::size_t h = 0; h < spec.heads.size(); ++h) {
    torch::Tensor values = torch::tensor(t.actions[h], torch::kInt64);
    if (spec.heads[h] == Head::kPlacement && graph.unit.defined())  // a group's members agree (repaired)
      values = torch::zeros({graph.num_units}, torch::kInt64).scatter_(0, graph.unit.to(torch::kCPU), values);
    out.push_back(values.unsqueeze(0).to(device));
  }
  return out;
}

torch::Tensor cross_entropy(const std::vector<torch::Tensor>& logits, const std::vector<torch::Tensor>& targets,
                            double smoothing) {
  torch::Tensor total;
  for (std::size_t h = 0; h < logits.size(); ++h) {
    const torch::Tensor log_p = torch::log_softmax(logits[h].to(torch::kFloat32), -1);
    const torch::Tensor target = targets[h].expand({logits[h].size(0), logits[h].size(1)}).unsqueeze(-1);
    torch::Tensor ce = -log_p.gather(-1, target).squeeze(-1);  // (B, D)
    if (smoothing > 0) {
      const torch::Tensor others =
          (logits[h] > kMaskedLogit / 2).logical_and(torch::ones_like(log_p, torch::kBool).scatter(-1, target, false));
      const torch::Tensor count = others.sum(-1);
      const torch::Tensor spread = -(log_p * others).sum(-1) / count.clamp_min(1);
      const torch::Tensor weight = torch::where(count > 0, torch::full_like(ce, smoothing), torch::zeros_like(ce));
      ce = (1 - weight) * ce + weight * spread;
    }
    total = total.defined() ? total + ce.mean() : ce.mean();
  }
  return total / static_cast<double>(logits.size());
}

double smoothing_for(const std::vector<torch::Tensor>& targets, double flips) {
  std::int64_t units = 0;
  for (const auto& t : targets) units += t.size(1);
  return units == 0 ? 0.0 : std::min(0.5, flips / static_cast<double>(units));
}

void verify_teacher(Model& model, const Env& env, std::uint64_t key) {
  const auto it = model.teachers.find(key);
  if (it == model.teachers.end() || it->second.verified) return;
  Teacher& t = it->second.teacher;
  const std::vector<Head>& heads = env.heads();
  bool fits = t.actions.size() == heads.size();
  for (std::size_t h = 0; fits && h < heads.size(); ++h) {
    fits = t.actions[h].size() == static_cast<std::size_t>(env.graph().num_nodes());
    for (const std::int64_t v : t.actions[h]) fits = fits && v >= 0 && v < env.choices(heads[h]);
  }
  GOENV_CHECK(fits, InvalidArgument,
              "agent checkpoint: the kept teacher of " << env.id() << " does not fit its graph ("
                                                       << env.graph().num_nodes() << " nodes, heads "
                                                       << PolicySpec::of(env, model.config).describe() << ")");
  auto copy = copy_env(env);
  copy->reset(reset_seed(model.config, 0, kEvaluation, 0));
  const StepResult r = step_actions(*copy, t.actions);
  if (r.info.oom || r.info.invalid) {
    model.teachers.erase(it);
    return;
  }
  t.runtime = r.info.runtime;
  t.reward = r.reward;
  it->second.verified = true;
}

void restore_teachers(Model& model, const std::vector<const Env*>& prototypes, const std::vector<GraphEntry>& graphs) {
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    verify_teacher(model, *prototypes[i], graphs[i].key);
    const auto it = model.teachers.find(graphs[i].key);
    if (it != model.teachers.end() && it->second.targets.empty())
      it->second.targets = targets(graphs[i].graph, model.spec, it->second.teacher, model.device);
  }
}

ImitationMetrics imitate(Model& model, const std::vector<const Env*>& prototypes, std::int64_t steps,
                         const std::string& teacher, std::uint64_t stream,
                         const std::function<bool(const ImitationMetrics&)>& callback) {
  const std::string method = teacher.empty() ? model.config.teacher : teacher;
  GOENV_CHECK(!prototypes.empty(), InvalidArgument, "imitate needs at least one env");
  GOENV_CHECK(steps >= 1, InvalidArgument, "imitation steps must be >= 1, got " << steps);
  check_envs(model, prototypes);
  const ThreadScope threads(model.config.num_threads);
  const auto start = std::chrono::steady_clock::now();
  struct Item {
    std::unique_ptr<Env> env;
    std::uint64_t key = 0;
    GraphTensors graph;
    const TeacherEntry* teacher = nullptr;
    Batch states;  // the reset observation; with horizon > 1 refreshed by DAgger rollouts
  };
  ImitationMetrics metrics;
  // Teachers first, all of them: an unknown or infeasible one fails before anything changes.
  std::map<std::uint64_t, TeacherEntry> fresh;
  std::vector<Item> items(prototypes.size());
  for (std::size_t i = 0; i < prototypes.size(); ++i) {
    Item& item = items[i];
    item.env = copy_env(*prototypes[i]);
    item.key = env_key(*item.env);
    item.graph = model.tensors_of(*item.env);
    prepare_teacher(model, *item.env, item.key, item.graph, method, fresh, metrics.simulator_calls);
    const int n = item.env->graph().num_nodes();
    const DynamicObservation obs = item.env->reset(reset_seed(model.config, stream, i, 0));
    const ObservationDims dims = model.dims_of(item.graph);
    item.states = stack({view_of(obs, dims, n)}, dims, n, model.device);
  }
  for (auto& [key, entry] : fresh) model.teachers[key] = std::move(entry);  // every teacher was solved: keep them
  for (Item& item : items) item.teacher = &model.teachers.at(item.key);
  model.config.teacher = method;
  const std::size_t per_step = graphs_per_step(model, items.size());
  std::size_t next = 0;
  for (std::int64_t step = 1; step <= steps; ++step) {
    model.optimizer->zero_grad();
    double loss_sum = 0, accuracy_sum = 0;
    for (std::size_t j = 0; j < per_step; ++j) {
      Item& item = items[(next + j) % items.size()];
      if (item.env->config().horizon > 1)
        metrics.simulator_calls += dagger_states(model, item.env.get(), item.graph, stream, item.states);
      const auto logits = model.run(item.graph, item.states).first;
      const torch::Tensor loss = cross_entropy(logits, item.teacher->targets,
                                               smoothing_for(item.teacher->targets, model.config.imitation_flips));
      (loss / static_cast<double>(per_step)).backward();
      torch::NoGradGuard no_grad;
      loss_sum += loss.item<double>();
      accuracy_sum += accuracy(logits, item.teacher->targets);
    }
    next = (next + per_step) % items.size();
    finish_step(model, step, loss_sum, accuracy_sum, per_step, start, metrics);
    if (callback && !callback(metrics)) break;
  }
  model.schedule_origin = model.steps_trained;
  return metrics;
}

// Self-imitation (Oh et al., ICML 2018): a sampled decision that beats the
// graph's teacher becomes its teacher, so the policy is pulled toward the
// best decision found so far rather than back to the heuristic.
void adopt_better_sample(Model& model, const GraphEntry& g, const Rollout& r) {
  auto it = model.teachers.find(g.key);
  if (it == model.teachers.end() || it->second.targets.empty()) return;
  TeacherEntry& entry = it->second;
  std::int64_t best = -1;
  for (std::int64_t i = 0; i < r.samples(); ++i)
    if (r.done[i] && !r.invalid[i] && r.runtime[i] < entry.teacher.runtime && (best < 0 || r.runtime[i] < r.runtime[best]))
      best = i;
  if (best < 0) return;
  entry.teacher.runtime = r.runtime[best];
  entry.teacher.reward = r.reward[best];
  for (std::size_t h = 0; h < r.actions.size(); ++h) {
    const std::int64_t width = static_cast<std::int64_t>(r.actions[h].size()) / r.samples();
    const torch::Tensor chosen = torch::tensor(std::vector<std::int64_t>(r.actions[h].begin() + best * width,
                                                                         r.actions[h].begin() + (best + 1) * width),
                                               torch::kInt64)
                                     .unsqueeze(0);
    entry.targets[h] = chosen.to(model.device);
    const torch::Tensor per_node = model.env_actions(g.graph, h, chosen.to(model.device));
    entry.teacher.actions[h].assign(per_node.data_ptr<std::int64_t>(),
                                    per_node.data_ptr<std::int64_t>() + per_node.numel());
  }
}

}  // namespace imitation
}  // namespace goenv::agents
