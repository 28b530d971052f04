#include "agents/sampler.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/hash.h"
#include "envs/registry.h"

namespace goenv::agents {

namespace {

// Copy k's current observation in a stacked vector env's buffers.
ObservationView copy_observation(const BatchBuffers& buffers, const ObservationDims& dims, int num_nodes, int k) {
  const std::size_t n = num_nodes;
  return {buffers.node_state + k * n * dims.node_state, buffers.action_mask + k * n * dims.action_mask,
          buffers.globals + static_cast<std::size_t>(k) * dims.globals};
}

template <typename T>
void append(std::vector<T>& out, const T* values, std::size_t count) {
  out.insert(out.end(), values, values + count);
}

}  // namespace

std::uint64_t reset_seed(const AgentConfig& config, std::uint64_t stream, std::uint64_t graph, std::uint64_t copy) {
  std::uint64_t base = splitmix64(static_cast<std::uint64_t>(config.seed));
  if (stream != 0) base = splitmix64(base ^ splitmix64(stream));
  return splitmix64(splitmix64(base ^ graph) ^ (copy << 20));
}

std::unique_ptr<Env> copy_env(const Env& prototype) {
  EnvConfig config = prototype.config();
  config.observation_version = kPolicyObservationVersion;
  config.start.clear();  // the prototype's start, resolved once, is copied below
  auto env = make_env_on_graph(prototype.task(), prototype.graph_ptr(), prototype.cluster(), config);
  if (prototype.has_start()) env->set_start(prototype.start(), prototype.config().start);
  return env;
}

StepResult step_actions(Env& env, const std::vector<std::vector<std::int64_t>>& actions) {
  std::vector<const std::int64_t*> parts;
  for (const auto& a : actions) parts.push_back(a.data());
  return env.step(parts);
}

StepResult run_episode(Model& model, Env& env, const GraphTensors& graph, std::uint64_t seed, bool deterministic,
                       std::vector<std::vector<std::int64_t>>& decided, std::int64_t& calls,
                       std::vector<DynamicObservation>* visited, ForwardCache* cache) {
  const int n = static_cast<int>(graph.num_nodes);
  const ObservationDims dims = model.dims_of(graph);
  DynamicObservation obs = env.reset(seed);
  StepResult r;
  do {
    const ObservationView view = view_of(obs, dims, n);
    std::vector<torch::Tensor> logits;
    if (cache != nullptr && !cache->logits.empty() &&
        same_observation(view, view_of(cache->observation, dims, n), dims, n)) {
      logits = cache->logits;  // tensor handles: no copy of the values
    } else {
      logits = model.run(graph, stack({view}, dims, n, model.device)).first;
      if (cache != nullptr) *cache = {obs, logits};
    }
    decided = model.decide(graph, logits, deterministic);
    r = step_actions(env, decided);
    ++calls;
    if (visited != nullptr) visited->push_back(std::move(obs));
    obs = std::move(r.observation);
  } while (!r.terminated && !r.truncated);
  return r;
}

void Sampler::set_envs(Model& model, const std::vector<const Env*>& prototypes, const std::vector<int>& sampled,
                       std::uint64_t stream) {
  GOENV_CHECK(!prototypes.empty(), InvalidArgument, "set_envs needs at least one env");
  for (std::size_t i = 0; i < prototypes.size(); ++i) {
    GOENV_CHECK(prototypes[i] != nullptr, InvalidArgument, "env " << i << " is null");
    model.check_env(*prototypes[i]);
  }
  for (const int i : sampled)
    GOENV_CHECK(i >= 0 && static_cast<std::size_t>(i) < prototypes.size(), InvalidArgument,
                "sampled env index " << i << " is out of range for " << prototypes.size() << " envs");
  std::vector<GraphEntry> graphs(prototypes.size());
  for (std::size_t i = 0; i < prototypes.size(); ++i) {
    const Env& prototype = *prototypes[i];
    graphs[i] = {prototype.id(), prototype.graph().num_nodes(), model.tensors_of(prototype), env_key(prototype)};
  }
  const int copies = model.config.envs_per_graph;
  std::vector<Slot> slots(sampled.size());
  for (std::size_t j = 0; j < sampled.size(); ++j) {
    Slot& slot = slots[j];
    slot.graph = sampled[j];
    const auto env = copy_env(*prototypes[sampled[j]]);  // at the policy's observation version
    slot.envs = VectorEnv::from_templates(std::vector<const Env*>(copies, env.get()), BatchLayout::kStacked);
    std::vector<std::uint64_t> seeds(copies);
    for (int k = 0; k < copies; ++k) seeds[k] = reset_seed(model.config, stream, sampled[j], k);
    slot.envs->reset(seeds.data(), nullptr, slot.envs->owned_buffers());
    slot.initial_runtime = slot.envs->env(0).initial_runtime();
  }
  if (stream != 0)
    model.sampling =
        at::detail::createCPUGenerator(splitmix64(static_cast<std::uint64_t>(model.config.seed) ^ splitmix64(stream)));
  graphs_ = std::move(graphs);
  slots_ = std::move(slots);
  stream_ = stream;
  if (next_slot_ >= slots_.size()) next_slot_ = 0;
}

std::vector<Rollout> Sampler::collect(Model& model) {
  GOENV_CHECK(!slots_.empty(), InvalidArgument, "collect has no envs to sample: call set_envs with sampled envs first");
  const ThreadScope threads(model.config.num_threads);
  const std::size_t per_update = model.config.graphs_per_update > 0
                                     ? std::min<std::size_t>(model.config.graphs_per_update, slots_.size())
                                     : slots_.size();
  std::vector<Rollout> out;
  for (std::size_t j = 0; j < per_update; ++j)
    out.push_back(collect_slot(model, slots_[(next_slot_ + j) % slots_.size()]));
  next_slot_ = (next_slot_ + per_update) % slots_.size();
  return out;
}

Rollout Sampler::collect_slot(Model& model, Slot& slot) {
  const GraphEntry& entry = graphs_[slot.graph];
  Rollout out;
  out.env_id = entry.id;
  out.graph = slot.graph;
  out.policy_version = model.weights.version;
  out.copies = slot.envs->num_envs();
  out.num_nodes = entry.num_nodes;
  const ObservationDims dims = model.dims_of(entry.graph);
  out.node_state_dim = dims.node_state;
  out.action_mask_width = dims.action_mask;
  out.global_dim = dims.globals;
  out.actions.resize(model.spec.heads.size());
  const int length = model.config.rollout_length > 0 ? model.config.rollout_length : slot.envs->env(0).config().horizon;
  for (int t = 0; t < length; ++t) collect_step(model, slot, out);
  bootstrap(model, slot, out);
  out.initial_runtime = slot.initial_runtime;
  // A kept teacher's decisions were simulated (and charged) too: they count as found.
  if (const TeacherEntry* t = model.teacher_of(entry.key))
    slot.best_runtime = std::min(slot.best_runtime, t->teacher.runtime);
  out.best_runtime = std::isfinite(slot.best_runtime) ? slot.best_runtime : slot.initial_runtime;
  return out;
}

// One step of every copy: act on the current observations, step the vector
// env, record into `out`, reset the copies whose episode ended.
void Sampler::collect_step(Model& model, Slot& slot, Rollout& out) {
  const GraphEntry& entry = graphs_[slot.graph];
  VectorEnv& envs = *slot.envs;
  const BatchBuffers& buffers = envs.owned_buffers();
  const int copies = envs.num_envs(), n = entry.num_nodes;
  const ObservationDims dims = model.dims_of(entry.graph);
  const std::size_t state = static_cast<std::size_t>(n) * dims.node_state,
                    mask = static_cast<std::size_t>(n) * dims.action_mask, globals = dims.globals;
  auto observation = [&](int k) { return copy_observation(buffers, dims, n, k); };
  auto same = [&](int a, int b) { return same_observation(observation(a), observation(b), dims, n); };
  // Copies with the same observation (one-shot episodes restart from one) are stored and forwarded once.
  std::vector<int> unique_of(copies);
  std::vector<int> fresh;
  for (int k = 0; k < copies; ++k) {
    int found = -1;
    for (std::size_t j = 0; j < fresh.size() && found < 0; ++j)
      if (same(k, fresh[j])) found = static_cast<int>(j);
    if (found < 0) {
      found = static_cast<int>(fresh.size());
      fresh.push_back(k);
    }
    unique_of[k] = found;
  }
  const int base = out.num_observations;
  std::vector<ObservationView> views;
  for (int k : fresh) {
    const ObservationView o = observation(k);
    append(out.node_state, o.node_state, state);
    append(out.action_mask, o.action_mask, mask);
    append(out.globals, o.globals, globals);
    views.push_back(o);
  }
  out.num_observations += static_cast<int>(fresh.size());
  std::vector<torch::Tensor> per_node;  // per head (copies, N), as the envs take them
  torch::Tensor log_probs, values;
  {
    torch::NoGradGuard no_grad;
    auto [logits, value] = model.run(entry.graph, stack(views, dims, n, model.device));
    const torch::Tensor index =
        torch::tensor(std::vector<std::int64_t>(unique_of.begin(), unique_of.end()), torch::kInt64).to(model.device);
    std::vector<torch::Tensor> actions;
    for (auto& l : logits) {
      l = l.index_select(0, index);
      actions.push_back(sample_actions(l, false, model.sampling));
    }
    log_probs = log_prob(logits, actions).to(torch::kCPU).contiguous();
    values = value.index_select(0, index).to(torch::kFloat32).to(torch::kCPU).contiguous();
    for (std::size_t h = 0; h < actions.size(); ++h) {
      per_node.push_back(model.env_actions(entry.graph, h, actions[h]));
      const torch::Tensor a = actions[h].to(torch::kCPU).contiguous();
      append(out.actions[h], a.data_ptr<std::int64_t>(), static_cast<std::size_t>(a.numel()));
    }
  }
  std::vector<const std::int64_t*> heads;
  for (const auto& a : per_node) heads.push_back(a.data_ptr<std::int64_t>());
  envs.set_num_threads(std::max(1, std::min(copies, default_num_threads())));
  envs.step(heads.data(), ActionLayout{false, n}, buffers);
  for (int k = 0; k < copies; ++k) {
    const bool invalid = buffers.oom[k] || buffers.invalid[k];
    out.observation.push_back(base + unique_of[k]);
    out.reward.push_back(static_cast<float>(buffers.reward[k]));
    out.value.push_back(values[k].item<float>());
    out.log_prob.push_back(log_probs[k].item<double>());
    out.done.push_back(buffers.terminated[k] ? 1 : 0);
    out.invalid.push_back(invalid ? 1 : 0);
    out.runtime.push_back(buffers.runtime[k]);
    out.speedup.push_back(buffers.speedup[k]);
    slot.initial_runtime = buffers.initial_runtime[k];
    if (!invalid) slot.best_runtime = std::min(slot.best_runtime, buffers.runtime[k]);
  }
  envs.reset_finished(buffers);
  ++out.steps;
}

// Value of each copy's current observation, for rollouts that end mid-episode.
void Sampler::bootstrap(Model& model, Slot& slot, Rollout& out) {
  const int copies = slot.envs->num_envs(), n = graphs_[slot.graph].num_nodes;
  out.bootstrap.assign(copies, 0.f);
  bool needed = false;
  for (int k = 0; k < copies; ++k) needed |= out.done[out.done.size() - copies + k] == 0;
  if (!needed) return;
  torch::NoGradGuard no_grad;
  const BatchBuffers& buffers = slot.envs->owned_buffers();
  std::vector<ObservationView> views;
  const GraphTensors& graph = graphs_[slot.graph].graph;
  const ObservationDims dims = model.dims_of(graph);
  for (int k = 0; k < copies; ++k) views.push_back(copy_observation(buffers, dims, n, k));
  const torch::Tensor values = model.run(graph, stack(views, dims, n, model.device)).second.to(torch::kCPU);
  for (int k = 0; k < copies; ++k) out.bootstrap[k] = values[k].item<float>();
}

}  // namespace goenv::agents
