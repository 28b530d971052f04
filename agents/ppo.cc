#include "agents/ppo.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "agents/imitation.h"
#include "core/error.h"

namespace goenv::agents::ppo {

namespace {

// Mean and sample standard deviation (0 for fewer than two values).
template <typename T>
std::pair<double, double> mean_and_deviation(const std::vector<T>& values) {
  double mean = 0, square = 0;
  for (const T v : values) mean += v;
  mean /= static_cast<double>(values.size());
  for (const T v : values) square += (v - mean) * (v - mean);
  return {mean, values.size() > 1 ? std::sqrt(square / static_cast<double>(values.size() - 1)) : 0.0};
}

// A rollout from elsewhere (another process) must match the graphs and the spec.
void check_rollout(const Model& model, const std::vector<GraphEntry>& graphs, const Rollout& r, std::size_t index) {
  GOENV_CHECK(r.graph >= 0 && static_cast<std::size_t>(r.graph) < graphs.size(), InvalidArgument,
              "rollout " << index << ": graph " << r.graph << " is out of range; set_envs holds " << graphs.size()
                         << " graphs");
  const GraphEntry& g = graphs[r.graph];
  GOENV_CHECK(r.env_id == g.id && r.num_nodes == g.num_nodes, InvalidArgument,
              "rollout " << index << " is of " << r.env_id << " (" << r.num_nodes << " nodes), but graph " << r.graph
                         << " is " << g.id << " (" << g.num_nodes << " nodes)");
  const PolicySpec& spec = model.spec;
  const ObservationDims dims = model.dims_of(g.graph);
  GOENV_CHECK(r.node_state_dim == dims.node_state && r.action_mask_width == dims.action_mask &&
                  r.global_dim == dims.globals && r.actions.size() == spec.heads.size(),
              InvalidArgument, "rollout " << index << " does not fit the policy's spec " << spec.describe());
  const std::int64_t m = r.samples(), o = r.num_observations, n = r.num_nodes;
  GOENV_CHECK(m >= 1 && o >= 1 && r.copies >= 1, InvalidArgument, "rollout " << index << " is empty");
  auto size_is = [&](std::size_t size, std::int64_t expected, const char* what) {
    GOENV_CHECK(static_cast<std::int64_t>(size) == expected, InvalidArgument,
                "rollout " << index << ": " << what << " has " << size << " values, expected " << expected);
  };
  size_is(r.node_state.size(), o * n * r.node_state_dim, "node_state");
  size_is(r.action_mask.size(), o * n * r.action_mask_width, "action_mask");
  size_is(r.globals.size(), o * r.global_dim, "globals");
  size_is(r.log_prob.size(), m, "log_prob");
  size_is(r.observation.size(), m, "observation");
  size_is(r.value.size(), m, "value");
  size_is(r.reward.size(), m, "reward");
  size_is(r.done.size(), m, "done");
  size_is(r.invalid.size(), m, "invalid");
  size_is(r.runtime.size(), m, "runtime");
  size_is(r.speedup.size(), m, "speedup");
  size_is(r.bootstrap.size(), r.copies, "bootstrap");
  for (const std::int32_t i : r.observation)
    GOENV_CHECK(i >= 0 && i < o, InvalidArgument, "rollout " << index << ": observation index " << i << " out of range");
  for (std::size_t h = 0; h < r.actions.size(); ++h) {
    GOENV_CHECK(!r.actions[h].empty() && r.actions[h].size() % m == 0, InvalidArgument,
                "rollout " << index << ": actions of head " << h << " are not (samples, width)");
    const std::int64_t choices = h < dims.choices.size() ? dims.choices[h] : r.action_mask_width;
    for (const std::int64_t a : r.actions[h])
      GOENV_CHECK(a >= 0 && a < choices, InvalidArgument,
                  "rollout " << index << ": an action of head " << h << " is " << a << ", not a choice in [0, "
                             << choices << ")");
  }
  // A NaN or an infinity here would reach every weight in one update, silently.
  auto finite = [&](const auto& values, const char* what) {
    for (const auto x : values)
      GOENV_CHECK(std::isfinite(x), InvalidArgument,
                  "rollout " << index << ": " << what << " holds " << x << "; every value must be finite");
  };
  finite(r.node_state, "node_state");
  finite(r.globals, "globals");
  finite(r.log_prob, "log_prob");
  finite(r.value, "value");
  finite(r.reward, "reward");
  finite(r.bootstrap, "bootstrap");
}

// Linear schedules over env steps since the last imitation (or the start).
double progress(const Model& model, std::int64_t steps) {
  return steps <= 0 ? 1.0
                    : std::min(1.0, static_cast<double>(model.steps_trained - model.schedule_origin) / steps);
}
double teacher_coef(const Model& model) {
  const AgentConfig& c = model.config;
  return c.teacher_decay_steps == 0 ? c.teacher_coef : c.teacher_coef * (1.0 - progress(model, c.teacher_decay_steps));
}
double entropy_coef(const Model& model) {
  const AgentConfig& c = model.config;
  if (c.entropy_coef_final < 0 || c.entropy_decay_steps == 0) return c.entropy_coef;
  return c.entropy_coef + (c.entropy_coef_final - c.entropy_coef) * progress(model, c.entropy_decay_steps);
}

// GAE(lambda) per copy, then normalized per rollout (one graph). With a
// teacher (and teacher_baseline) one-shot advantages are reward minus the
// teacher's reward, scaled by their spread but not centred.
void advantages(const AgentConfig& config, const Rollout& r, const TeacherEntry* teacher,
                std::vector<double>& advantage, std::vector<double>& target) {
  const bool one_shot = std::all_of(r.done.begin(), r.done.end(), [](std::uint8_t d) { return d != 0; });
  if (teacher != nullptr && config.teacher_baseline && one_shot) {
    advantage.resize(r.samples());
    target.resize(r.samples());
    const double scale = config.normalize_advantages ? mean_and_deviation(r.reward).second + 1e-4
                                                     : 1.0;  // rewards are relative runtimes
    for (std::int64_t i = 0; i < r.samples(); ++i) {
      advantage[i] = (r.reward[i] - teacher->teacher.reward) / scale;
      target[i] = r.reward[i];
    }
    return;
  }
  const int copies = r.copies, steps = r.steps;
  advantage.assign(r.samples(), 0);
  target.assign(r.samples(), 0);
  for (int k = 0; k < copies; ++k) {
    double next_value = r.bootstrap[k], gae = 0;
    for (int t = steps - 1; t >= 0; --t) {
      const std::size_t i = static_cast<std::size_t>(t) * copies + k;
      const double continues = r.done[i] ? 0.0 : 1.0;
      const double delta = r.reward[i] + config.gamma * next_value * continues - r.value[i];
      gae = delta + config.gamma * config.gae_lambda * continues * gae;
      advantage[i] = gae;
      target[i] = gae + r.value[i];
      next_value = r.value[i];
    }
  }
  if (config.normalize_advantages && advantage.size() > 1) {
    const auto [mean, deviation] = mean_and_deviation(advantage);
    for (double& a : advantage) a = (a - mean) / (deviation + 1e-8);
  }
}

// One rollout on the device, with its advantages and value targets.
struct Prepared {
  const GraphTensors* graph;
  Batch observations;
  torch::Tensor old_log_prob, advantage, value_target;  // (M,) on the device
  std::vector<torch::Tensor> actions;                   // per head (M, N or U) on the device
  std::vector<std::int64_t> observation_of;             // per sample
  std::int64_t num_observations = 0;
  const TeacherEntry* teacher = nullptr;
};

Prepared prepare(const Model& model, const GraphEntry& graph, const Rollout& r) {
  Prepared p;
  p.graph = &graph.graph;
  p.teacher = model.teacher_of(graph.key);
  const std::int64_t o = r.num_observations, m = r.samples();
  p.num_observations = o;
  p.observations = batch_of(o, r.num_nodes, r.node_state.data(), r.node_state_dim, r.action_mask.data(),
                            r.action_mask_width, r.globals.data(), r.global_dim, model.device);
  p.observation_of.assign(r.observation.begin(), r.observation.end());
  std::vector<double> advantage, target;
  advantages(model.config, r, p.teacher, advantage, target);
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  p.old_log_prob = torch::tensor(r.log_prob, f64).to(model.device);
  p.advantage = torch::tensor(advantage, f64).to(model.device);
  p.value_target = torch::tensor(target, f64).to(torch::kFloat32).to(model.device);
  for (const auto& a : r.actions) {
    const std::int64_t width = static_cast<std::int64_t>(a.size()) / m;
    p.actions.push_back(
        torch::from_blob(const_cast<std::int64_t*>(a.data()), {m, width}, torch::kInt64).to(model.device).clone());
  }
  return p;
}

// Sums of the losses and statistics, weighted by samples.
struct Totals {
  double policy_loss = 0, value_loss = 0, entropy = 0, kl = 0, clipped = 0, teacher = 0, count = 0;
};

// The clipped PPO loss of one minibatch chunk of one rollout, backpropagated
// with weight size / total; adds its statistics to `totals`, returns its KL sum.
double chunk_loss(Model& model, const Prepared& p, const torch::Tensor& chunk, double total, double entropy_weight,
                  double teacher_weight, Totals& totals) {
  const AgentConfig& config = model.config;
  const std::int64_t size = chunk.size(0);
  // Forward each distinct observation of the chunk once.
  std::vector<std::int64_t> distinct, local;
  std::vector<std::int64_t> slot_of(p.num_observations, -1);
  const auto* ids = chunk.data_ptr<std::int64_t>();
  for (std::int64_t j = 0; j < size; ++j) {
    const std::int64_t u = p.observation_of[ids[j]];
    if (slot_of[u] < 0) {
      slot_of[u] = static_cast<std::int64_t>(distinct.size());
      distinct.push_back(u);
    }
    local.push_back(slot_of[u]);
  }
  const torch::Tensor distinct_index = torch::tensor(distinct, torch::kInt64).to(model.device);
  const torch::Tensor local_index = torch::tensor(local, torch::kInt64).to(model.device);
  const torch::Tensor sample_index = chunk.to(model.device);
  auto [logits, value] = model.run(*p.graph, p.observations.select(distinct_index));
  torch::Tensor decision_entropy = entropy({logits[0]}) / static_cast<double>(logits[0].size(1));
  for (std::size_t h = 1; h < logits.size(); ++h)
    decision_entropy = decision_entropy + entropy({logits[h]}) / static_cast<double>(logits[h].size(1));
  const torch::Tensor node_entropy =
      (decision_entropy / static_cast<double>(model.spec.heads.size())).index_select(0, local_index);
  std::vector<torch::Tensor> sample_logits, sample_actions;
  for (std::size_t h = 0; h < logits.size(); ++h) {
    sample_logits.push_back(logits[h].index_select(0, local_index));
    sample_actions.push_back(p.actions[h].index_select(0, sample_index));
  }
  const torch::Tensor new_log_prob = log_prob(sample_logits, sample_actions);
  // The ratio to the sampling policy's probability is PPO's importance weight;
  // it also corrects for bounded policy lag in distributed training.
  const torch::Tensor log_ratio = new_log_prob - p.old_log_prob.index_select(0, sample_index);
  const torch::Tensor ratio = torch::exp(log_ratio);
  const torch::Tensor advantage = p.advantage.index_select(0, sample_index);
  const torch::Tensor surrogate =
      torch::min(ratio * advantage, torch::clamp(ratio, 1 - config.clip, 1 + config.clip) * advantage);
  const torch::Tensor loss_policy = -surrogate.mean();
  const torch::Tensor loss_value =
      0.5 * (value.index_select(0, local_index) - p.value_target.index_select(0, sample_index)).pow(2).mean();
  const torch::Tensor bonus = node_entropy.mean();
  torch::Tensor loss = loss_policy.to(torch::kFloat32) + config.value_coef * loss_value - entropy_weight * bonus;
  torch::Tensor loss_teacher;
  if (p.teacher != nullptr) {
    loss_teacher = imitation::cross_entropy(logits, p.teacher->targets,
                                            imitation::smoothing_for(p.teacher->targets, config.imitation_flips));
    if (teacher_weight > 0) loss = loss + teacher_weight * loss_teacher;
  }
  (loss * (static_cast<double>(size) / total)).backward();
  torch::NoGradGuard no_grad;
  const double w = static_cast<double>(size);
  totals.policy_loss += loss_policy.item<double>() * w;
  totals.value_loss += loss_value.item<double>() * w;
  totals.entropy += bonus.item<double>() * w;
  if (loss_teacher.defined()) totals.teacher += loss_teacher.item<double>() * w;
  const double sample_kl = ((ratio - 1) - log_ratio).mean().item<double>() * w;  // k3 estimator
  totals.kl += sample_kl;
  totals.clipped += ((ratio - 1).abs() > config.clip).to(torch::kFloat64).mean().item<double>() * w;
  totals.count += w;
  return sample_kl;
}

// PPO epochs over the rollouts; fills the loss fields of `metrics`.
void optimize(Model& model, const std::vector<GraphEntry>& graphs, const std::vector<Rollout>& rollouts,
              UpdateMetrics& metrics) {
  const AgentConfig& config = model.config;
  std::vector<Prepared> prepared;
  for (const Rollout& r : rollouts) prepared.push_back(prepare(model, graphs[r.graph], r));
  const double entropy_weight = entropy_coef(model), teacher_weight = teacher_coef(model);
  metrics.entropy_coef = entropy_weight;
  metrics.teacher_coef = teacher_weight;
  Totals totals;
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    std::vector<torch::Tensor> permutations;
    for (const Prepared& p : prepared)
      permutations.push_back(
          torch::randperm(static_cast<std::int64_t>(p.observation_of.size()), model.shuffling, torch::kInt64));
    double epoch_kl = 0, epoch_count = 0;
    for (int mb = 0; mb < config.minibatches; ++mb) {
      model.optimizer->zero_grad();
      std::vector<torch::Tensor> chunks;
      double total = 0;
      for (std::size_t i = 0; i < prepared.size(); ++i) {
        const std::int64_t m = permutations[i].size(0);
        const std::int64_t begin = m * mb / config.minibatches, end = m * (mb + 1) / config.minibatches;
        chunks.push_back(permutations[i].slice(0, begin, end));
        total += static_cast<double>(end - begin);
      }
      if (total == 0) continue;
      for (std::size_t i = 0; i < prepared.size(); ++i) {
        if (chunks[i].size(0) == 0) continue;
        epoch_kl += chunk_loss(model, prepared[i], chunks[i], total, entropy_weight, teacher_weight, totals);
        epoch_count += static_cast<double>(chunks[i].size(0));
      }
      if (config.max_grad_norm > 0)
        torch::nn::utils::clip_grad_norm_(model.policy->parameters(), config.max_grad_norm);
      model.optimizer->step();
    }
    if (config.target_kl > 0 && epoch_count > 0 && epoch_kl / epoch_count > 1.5 * config.target_kl) break;
  }
  if (totals.count > 0) {
    metrics.policy_loss = totals.policy_loss / totals.count;
    metrics.value_loss = totals.value_loss / totals.count;
    metrics.entropy = totals.entropy / totals.count;
    metrics.approx_kl = totals.kl / totals.count;
    metrics.clip_fraction = totals.clipped / totals.count;
    metrics.teacher_loss = totals.teacher / totals.count;
  }
}

}  // namespace

UpdateMetrics update(Model& model, const std::vector<GraphEntry>& graphs, const std::vector<Rollout>& rollouts) {
  GOENV_CHECK(model.ready, InvalidArgument, "update needs a policy: call set_envs first");
  GOENV_CHECK(!rollouts.empty(), InvalidArgument, "update needs at least one rollout");
  for (std::size_t i = 0; i < rollouts.size(); ++i) check_rollout(model, graphs, rollouts[i], i);
  const ThreadScope threads(model.config.num_threads);
  UpdateMetrics metrics;
  double reward = 0, runtime = 0, speedup = 0, invalid = 0, samples = 0, best = 0, best_speedup = 0;
  for (const Rollout& r : rollouts) {
    for (std::int64_t i = 0; i < r.samples(); ++i) {
      reward += r.reward[i];
      runtime += r.runtime[i];
      speedup += r.speedup[i];
      invalid += r.invalid[i] ? 1 : 0;
    }
    samples += static_cast<double>(r.samples());
    best += r.best_runtime;
    best_speedup += r.best_runtime > 0 ? r.initial_runtime / r.best_runtime : 1.0;
  }
  if (model.config.teacher_update)
    for (const Rollout& r : rollouts) imitation::adopt_better_sample(model, graphs[r.graph], r);
  const torch::Tensor before = model.weights.snapshot();
  optimize(model, graphs, rollouts, metrics);
  if (!model.weights.all_finite()) {  // diverged (a learning rate far too high): undone, said
    model.weights.restore(before);
    throw InvalidArgument("update: the policy's weights became NaN or infinite (policy loss " +
                          std::to_string(metrics.policy_loss) + ", learning rate " +
                          std::to_string(model.config.learning_rate) +
                          "); the weights are as before this update. Lower the learning rate or max_grad_norm");
  }
  ++model.weights.version;
  ++model.updates;
  model.steps_trained += static_cast<std::int64_t>(samples);
  metrics.step = model.steps_trained;
  metrics.update = model.updates;
  metrics.mean_reward = reward / samples;
  metrics.mean_runtime = runtime / samples;
  metrics.mean_speedup = speedup / samples;
  metrics.invalid_fraction = invalid / samples;
  metrics.best_runtime = best / static_cast<double>(rollouts.size());
  metrics.best_speedup = best_speedup / static_cast<double>(rollouts.size());
  return metrics;
}

void train(Model& model, Sampler& sampler, const std::vector<const Env*>& prototypes, std::int64_t total_steps,
           const std::function<bool(const UpdateMetrics&)>& callback) {
  GOENV_CHECK(!prototypes.empty(), InvalidArgument, "train needs at least one env");
  GOENV_CHECK(total_steps > 0, InvalidArgument, "total_steps must be > 0, got " << total_steps);
  const ThreadScope threads(model.config.num_threads);
  std::vector<int> all(prototypes.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  sampler.set_envs(model, prototypes, all, 0);
  imitation::restore_teachers(model, prototypes, sampler.graphs());
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t before = model.steps_trained;
  std::int64_t count = 0;
  while (model.steps_trained - before < total_steps) {
    UpdateMetrics metrics = update(model, sampler.graphs(), sampler.collect(model));
    metrics.step = model.steps_trained - before;
    metrics.update = ++count;
    metrics.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (callback && !callback(metrics)) break;
  }
}

}  // namespace goenv::agents::ppo
