// The Agent: PPO (Schulman et al., 2017) stepping goenv Envs from C++, with
// one-shot episodes by default (advantage = reward - value) and GAE(lambda)
// for longer horizons; acting on raw observations; checkpoints.
#include <ATen/CPUGeneratorImpl.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <sstream>

#include "agents/agent.h"
#include "agents/policy.h"
#include "core/error.h"
#include "envs/baselines/baseline.h"
#include "envs/registry.h"

namespace goenv::agents {

namespace {

constexpr char kMagic[8] = {'G', 'O', 'E', 'N', 'V', 'A', 'G', 'T'};
constexpr std::uint32_t kCheckpointVersion = 2;  // 2: + optimizer, generators, teachers, schedules

// Torch reports errors as c10::Error; callers of the agent see goenv's types.
template <typename F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    throw Error(std::string("torch: ") + e.what_without_backtrace());
  }
}

torch::Device choose_device(const std::string& name) {
  if (name == "cpu") return torch::kCPU;
  const bool cuda = torch::cuda::is_available();
  GOENV_CHECK(cuda || name != "cuda", InvalidArgument, "device='cuda' but torch sees no CUDA device");
  return cuda ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
}

std::uint64_t mix(std::uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t hash_bytes(const void* data, std::size_t size, std::uint64_t h = 1469598103934665603ULL) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    h = mix(h ^ word);
  }
  for (; i < size; ++i) h = (h ^ bytes[i]) * 1099511628211ULL;
  return mix(h ^ size);
}

bool same_observation(const DynamicObservation& a, const DynamicObservation& b) {
  return a.node_state == b.node_state && a.action_mask == b.action_mask && a.globals == b.globals;
}

// Observations stacked as tensors on the device: node_state (B, N, S), mask (B, N, A) bool, globals (B, G).
struct Batch {
  torch::Tensor node_state, mask, globals;
  Batch select(const torch::Tensor& index) const {
    return {node_state.index_select(0, index), mask.index_select(0, index), globals.index_select(0, index)};
  }
};

Batch stack(const std::vector<const DynamicObservation*>& observations, const PolicySpec& spec, int num_nodes,
            const torch::Device& device) {
  const auto b = static_cast<std::int64_t>(observations.size());
  const std::int64_t n = num_nodes, s = spec.node_state_dim, a = spec.action_mask_width(), g = spec.global_dim;
  torch::Tensor state = torch::empty({b, n, s}, torch::kFloat32);
  torch::Tensor mask = torch::empty({b, n, a}, torch::kInt8);
  torch::Tensor globals = torch::empty({b, g}, torch::kFloat32);
  for (std::int64_t i = 0; i < b; ++i) {
    const DynamicObservation& o = *observations[i];
    GOENV_CHECK(static_cast<std::int64_t>(o.node_state.size()) == n * s &&
                    static_cast<std::int64_t>(o.action_mask.size()) == n * a &&
                    static_cast<std::int64_t>(o.globals.size()) == g,
                InvalidArgument, "observation does not match the policy's spec " << spec.describe());
    std::memcpy(state[i].data_ptr<float>(), o.node_state.data(), n * s * sizeof(float));
    std::memcpy(mask[i].data_ptr<std::int8_t>(), o.action_mask.data(), n * a);
    std::memcpy(globals[i].data_ptr<float>(), o.globals.data(), g * sizeof(float));
  }
  return {state.to(device), mask.to(device).to(torch::kBool), globals.to(device)};
}

// One graph the agent learns on: its static observation as tensors on the device.
struct GraphEntry {
  std::string id;
  int num_nodes = 0;
  GraphTensors graph;
  std::uint64_t key = 0;  // env_key(): finds the graph's teacher
};

// Identifies an env's graph and decisions: its id, heads, static observation and groups.
std::uint64_t env_key(const Env& env) {
  const StaticObservation& so = env.static_observation();
  std::uint64_t key = hash_bytes(env.id().data(), env.id().size());
  for (Head h : env.heads()) key = mix(key ^ (static_cast<std::uint64_t>(h) + 1) * 0x100 ^ env.choices(h));
  key = hash_bytes(so.node_features.data(), sizeof(float) * so.node_features.size(), key);
  key = hash_bytes(so.edge_index.data(), sizeof(std::int64_t) * so.edge_index.size(), key);
  const auto& groups = env.graph().colocation();
  return hash_bytes(groups.data(), sizeof(groups[0]) * groups.size(), key);
}

// A teacher kept by the agent, with its decisions as targets per decision
// unit: per head (1, D) int64 on the device (D = placement units or nodes).
struct TeacherEntry {
  Teacher teacher;
  std::vector<torch::Tensor> targets;
};

std::vector<torch::Tensor> teacher_targets(const GraphTensors& graph, const PolicySpec& spec, const Teacher& t,
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

// Mean over decision units, observations and heads of the cross-entropy toward
// the teacher's choice, label-smoothed: `smoothing` of the target mass is spread
// over the unit's other allowed choices (none when it has none). Masked logits
// (B, D, C) per head, targets (1, D).
torch::Tensor teacher_cross_entropy(const std::vector<torch::Tensor>& logits, const std::vector<torch::Tensor>& targets,
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

// The label smoothing that leaves about `flips` decision units of a sampled
// decision off the teacher's choices.
double smoothing_for(const std::vector<torch::Tensor>& targets, double flips) {
  std::int64_t units = 0;
  for (const auto& t : targets) units += t.size(1);
  return units == 0 ? 0.0 : std::min(0.5, flips / static_cast<double>(units));
}

// Share of decision units whose most likely choice is the teacher's.
double teacher_accuracy(const std::vector<torch::Tensor>& logits, const std::vector<torch::Tensor>& targets) {
  double sum = 0;
  for (std::size_t h = 0; h < logits.size(); ++h)
    sum += logits[h].argmax(-1).eq(targets[h]).to(torch::kFloat64).mean().item<double>();
  return sum / static_cast<double>(logits.size());
}

// Mean and sample standard deviation (0 for fewer than two values).
template <typename T>
std::pair<double, double> mean_and_deviation(const std::vector<T>& values) {
  double mean = 0, square = 0;
  for (const T v : values) mean += v;
  mean /= static_cast<double>(values.size());
  for (const T v : values) square += (v - mean) * (v - mean);
  return {mean, values.size() > 1 ? std::sqrt(square / static_cast<double>(values.size() - 1)) : 0.0};
}

// One sampled graph: env copies (a small vector env stepped with OpenMP) and their current observations.
struct Slot {
  int graph = 0;  // index into Impl::graphs
  std::vector<std::unique_ptr<Env>> envs;
  std::vector<DynamicObservation> current;
  std::vector<std::int64_t> episodes;  // per copy, for reset seeds
  double best_runtime = std::numeric_limits<double>::infinity(), initial_runtime = 0;
};

template <typename T>
void append(std::vector<T>& out, const std::vector<T>& values) {
  out.insert(out.end(), values.begin(), values.end());
}

}  // namespace

struct Agent::Impl {
  AgentConfig config;
  bool ready = false;
  PolicySpec spec;
  torch::Device device = torch::kCPU;
  Policy policy;
  std::unique_ptr<torch::optim::Adam> optimizer;
  // sampler: actions (collect, act, evaluate); shuffler: minibatch permutations (update).
  torch::Generator sampler, shuffler;
  torch::Tensor flat;          // every parameter, one contiguous float32 buffer on the device
  torch::Tensor host_weights;  // CUDA: the host copy weights() hands out
  std::int64_t version = 0, updates = 0, steps_trained = 0;
  std::vector<GraphEntry> graphs;
  // By env_key(); kept by imitate(). Targets are empty until the graph's tensors exist (after a load).
  std::map<std::uint64_t, TeacherEntry> teachers;
  std::int64_t schedule_origin = 0;  // steps_trained when the last imitation ended: the schedules start there
  std::vector<Slot> slots;
  std::uint64_t stream = 0;
  std::size_t next_slot = 0;
  // act(): the last graph's tensors, by content hash.
  std::uint64_t act_graph_key = 0;
  GraphTensors act_graph;

  explicit Impl(AgentConfig c) : config(std::move(c)) {
    validate(config);
    device = choose_device(config.device);
    sampler = at::detail::createCPUGenerator(static_cast<std::uint64_t>(config.seed));
    shuffler = at::detail::createCPUGenerator(mix(static_cast<std::uint64_t>(config.seed) ^ 0x5348554646ULL));
  }

  // Sets torch's intra-op threads to config.num_threads for one call, then
  // restores the process-wide setting (other torch users keep theirs).
  struct ThreadScope {
    int previous = 0;
    explicit ThreadScope(int threads) {
      if (threads <= 0) return;
      previous = torch::get_num_threads();
      if (previous != threads) torch::set_num_threads(threads);
      else previous = 0;
    }
    ~ThreadScope() {
      if (previous > 0) torch::set_num_threads(previous);
    }
    ThreadScope(const ThreadScope&) = delete;
    ThreadScope& operator=(const ThreadScope&) = delete;
  };

  void build(const PolicySpec& s) {
    Policy p = make_policy(config, s);
    p->to(device);
    policy = std::move(p);
    spec = s;
    ready = true;
    flatten();
    optimizer = std::make_unique<torch::optim::Adam>(policy->parameters(),
                                                     torch::optim::AdamOptions(config.learning_rate));
  }

  // Moves every parameter into one contiguous buffer and makes each a view of
  // its slice (the optimizer keeps the same tensors), so that weights travel
  // as one array without packing. Loading a checkpoint replaces parameter
  // storage, so it is called again after a load.
  void flatten() {
    torch::NoGradGuard no_grad;
    std::int64_t total = 0;
    for (const auto& p : policy->parameters()) {
      GOENV_CHECK(p.scalar_type() == torch::kFloat32, Error, "policy parameters must be float32");
      total += p.numel();
    }
    torch::Tensor buffer = torch::empty({total}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
    std::int64_t offset = 0;
    for (auto& p : policy->parameters()) {
      torch::Tensor view = buffer.narrow(0, offset, p.numel()).view(p.sizes());
      view.copy_(p.detach());
      p.set_data(view);
      offset += p.numel();
    }
    flat = buffer;
    host_weights = torch::Tensor();
  }

  void check_spec(const PolicySpec& s, const std::string& what) const {
    GOENV_CHECK(s == spec, InvalidArgument,
                what << " does not fit the policy: it has " << s.describe() << ", the policy was built for "
                     << spec.describe() << " (one policy serves envs with the same features, devices and heads)");
  }

  void check_env(const Env& env) {
    GOENV_CHECK(!env.node_mode(), InvalidArgument,
                env.id() << ": the agents decide whole graphs; decision_mode='node' is not supported");
    const PolicySpec s = PolicySpec::of(env);
    if (!ready) build(s);
    check_spec(s, "env " + env.id());
  }

  // Masked logits per head and values for a batch; placement logits are per
  // decision unit (colocation groups as one), see unit_logits.
  std::pair<std::vector<torch::Tensor>, torch::Tensor> run(const GraphTensors& graph, const Batch& batch) {
    PolicyOutput out = policy->forward(graph, batch.node_state, batch.globals);
    std::int64_t offset = 0;
    for (std::size_t h = 0; h < out.logits.size(); ++h) {
      const torch::Tensor mask = batch.mask.narrow(-1, offset, spec.choices[h]);
      out.logits[h] = spec.heads[h] == Head::kPlacement ? unit_logits(graph, out.logits[h], mask)
                                                        : mask_logits(out.logits[h], mask);
      offset += spec.choices[h];
    }
    return {std::move(out.logits), std::move(out.value)};
  }

  // A head's sampled actions as per-node values on the CPU (placement: units expanded).
  torch::Tensor env_actions(const GraphTensors& graph, std::size_t head, const torch::Tensor& actions) const {
    const torch::Tensor a = spec.heads[head] == Head::kPlacement ? node_actions(graph, actions) : actions;
    return a.to(torch::kCPU).contiguous();
  }

  // Stream 0 keeps the seeds of a single-process run; workers use their own streams.
  std::uint64_t reset_seed(std::size_t graph, std::size_t copy, std::int64_t episode, std::uint64_t s) const {
    std::uint64_t base = mix(static_cast<std::uint64_t>(config.seed));
    if (s != 0) base = mix(base ^ mix(s));
    return mix(mix(base ^ graph) ^ (copy << 20)) ^ static_cast<std::uint64_t>(episode);
  }

  // An env's static observation and decision units as tensors on the device.
  GraphTensors tensors_of(const Env& env) const {
    const StaticObservation& so = env.static_observation();
    return graph_tensors(so.num_nodes, so.node_feature_dim, so.node_features.data(), so.num_edges,
                         so.edge_index.data(), device, env.graph().colocation().data());
  }

  std::unique_ptr<Env> copy_env(const Env& prototype) const {
    return make_env_on_graph(prototype.task(), prototype.graph_ptr(), prototype.cluster(), prototype.config());
  }

  void set_envs(const std::vector<const Env*>& prototypes, const std::vector<int>& sampled, std::uint64_t s) {
    GOENV_CHECK(!prototypes.empty(), InvalidArgument, "set_envs needs at least one env");
    for (std::size_t i = 0; i < prototypes.size(); ++i) {
      GOENV_CHECK(prototypes[i] != nullptr, InvalidArgument, "env " << i << " is null");
      check_env(*prototypes[i]);
    }
    const std::vector<int>& chosen = sampled;
    for (const int i : chosen)
      GOENV_CHECK(i >= 0 && static_cast<std::size_t>(i) < prototypes.size(), InvalidArgument,
                  "sampled env index " << i << " is out of range for " << prototypes.size() << " envs");
    std::vector<GraphEntry> fresh_graphs(prototypes.size());
    for (std::size_t i = 0; i < prototypes.size(); ++i) {
      const Env& prototype = *prototypes[i];
      fresh_graphs[i] = {prototype.id(), prototype.graph().num_nodes(), tensors_of(prototype), env_key(prototype)};
    }
    std::vector<Slot> fresh_slots(chosen.size());
    for (std::size_t j = 0; j < chosen.size(); ++j) {
      Slot& slot = fresh_slots[j];
      slot.graph = chosen[j];
      slot.episodes.assign(config.envs_per_graph, 0);
      for (int k = 0; k < config.envs_per_graph; ++k) {
        slot.envs.push_back(copy_env(*prototypes[chosen[j]]));
        slot.current.push_back(slot.envs.back()->reset(reset_seed(chosen[j], k, 0, s)));
      }
      slot.initial_runtime = slot.envs.front()->initial_runtime();
    }
    if (s != 0) sampler = at::detail::createCPUGenerator(mix(static_cast<std::uint64_t>(config.seed) ^ mix(s)));
    for (const GraphEntry& g : fresh_graphs) {
      const auto it = teachers.find(g.key);
      if (it != teachers.end() && it->second.targets.empty())
        it->second.targets = teacher_targets(g.graph, spec, it->second.teacher, device);
    }
    graphs = std::move(fresh_graphs);
    slots = std::move(fresh_slots);
    stream = s;
    if (next_slot >= slots.size()) next_slot = 0;
  }

  // One step of every env copy of a slot: act on the current observations, step, record into `out`.
  void collect_step(Slot& slot, Rollout& out) {
    const GraphEntry& entry = graphs[slot.graph];
    const int copies = static_cast<int>(slot.envs.size()), n = entry.num_nodes;
    std::vector<int> unique_of(copies);
    std::vector<int> fresh;  // copies whose observation is new this step
    for (int k = 0; k < copies; ++k) {
      int found = -1;
      for (std::size_t j = 0; j < fresh.size() && found < 0; ++j)
        if (same_observation(slot.current[k], slot.current[fresh[j]])) found = static_cast<int>(j);
      if (found < 0) {
        found = static_cast<int>(fresh.size());
        fresh.push_back(k);
      }
      unique_of[k] = found;
    }
    const int base = out.num_observations;
    std::vector<const DynamicObservation*> pointers;
    for (int k : fresh) {
      append(out.node_state, slot.current[k].node_state);
      append(out.action_mask, slot.current[k].action_mask);
      append(out.globals, slot.current[k].globals);
      pointers.push_back(&slot.current[k]);
    }
    out.num_observations += static_cast<int>(fresh.size());
    std::vector<torch::Tensor> per_node;  // per head, as the env takes them
    torch::Tensor log_probs, values;
    {
      torch::NoGradGuard no_grad;
      auto [logits, value] = run(entry.graph, stack(pointers, spec, n, device));
      const torch::Tensor index = torch::tensor(std::vector<std::int64_t>(unique_of.begin(), unique_of.end()),
                                                torch::kInt64).to(device);
      std::vector<torch::Tensor> actions;
      for (auto& l : logits) {
        l = l.index_select(0, index);
        actions.push_back(sample_actions(l, false, sampler));
      }
      log_probs = log_prob(logits, actions).to(torch::kCPU).contiguous();
      values = value.index_select(0, index).to(torch::kFloat32).to(torch::kCPU).contiguous();
      for (std::size_t h = 0; h < actions.size(); ++h) {
        per_node.push_back(env_actions(entry.graph, h, actions[h]));
        const torch::Tensor a = actions[h].to(torch::kCPU).contiguous();
        out.actions[h].insert(out.actions[h].end(), a.data_ptr<std::int64_t>(), a.data_ptr<std::int64_t>() + a.numel());
      }
    }
    std::vector<StepResult> results(copies);
    std::vector<std::exception_ptr> errors(copies);
    const int threads = std::max(1, std::min(copies, omp_get_max_threads()));
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int k = 0; k < copies; ++k) {
      try {
        std::vector<const std::int64_t*> parts;
        for (const auto& a : per_node) parts.push_back(a.data_ptr<std::int64_t>() + static_cast<std::int64_t>(k) * n);
        results[k] = slot.envs[k]->step(parts);
        if (results[k].terminated)
          results[k].observation = slot.envs[k]->reset(reset_seed(slot.graph, k, ++slot.episodes[k], stream));
      } catch (...) {
        errors[k] = std::current_exception();
      }
    }
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
    for (int k = 0; k < copies; ++k) {
      const StepResult& r = results[k];
      const bool invalid = r.info.oom || r.info.invalid;
      out.observation.push_back(base + unique_of[k]);
      out.reward.push_back(static_cast<float>(r.reward));
      out.value.push_back(values[k].item<float>());
      out.log_prob.push_back(log_probs[k].item<double>());
      out.done.push_back(r.terminated ? 1 : 0);
      out.invalid.push_back(invalid ? 1 : 0);
      out.runtime.push_back(r.info.runtime);
      out.speedup.push_back(r.info.speedup);
      slot.initial_runtime = r.info.initial_runtime;
      if (!invalid) slot.best_runtime = std::min(slot.best_runtime, r.info.runtime);
      slot.current[k] = std::move(results[k].observation);
    }
    ++out.steps;
  }

  // Value of each copy's current observation, for rollouts that end mid-episode.
  void bootstrap(Slot& slot, Rollout& out) {
    const int copies = static_cast<int>(slot.envs.size());
    out.bootstrap.assign(copies, 0.f);
    bool needed = false;
    for (int k = 0; k < copies; ++k) needed |= out.done[out.done.size() - copies + k] == 0;
    if (!needed) return;
    torch::NoGradGuard no_grad;
    std::vector<const DynamicObservation*> pointers;
    for (const auto& o : slot.current) pointers.push_back(&o);
    const torch::Tensor values =
        run(graphs[slot.graph].graph, stack(pointers, spec, graphs[slot.graph].num_nodes, device)).second.to(torch::kCPU);
    for (int k = 0; k < copies; ++k) out.bootstrap[k] = values[k].item<float>();
  }

  Rollout collect_slot(Slot& slot) {
    Rollout out;
    out.env_id = graphs[slot.graph].id;
    out.graph = slot.graph;
    out.policy_version = version;
    out.copies = static_cast<int>(slot.envs.size());
    out.num_nodes = graphs[slot.graph].num_nodes;
    out.node_state_dim = spec.node_state_dim;
    out.action_mask_width = spec.action_mask_width();
    out.global_dim = spec.global_dim;
    out.actions.resize(spec.heads.size());
    const int length = config.rollout_length > 0 ? config.rollout_length : slot.envs.front()->config().horizon;
    for (int t = 0; t < length; ++t) collect_step(slot, out);
    bootstrap(slot, out);
    out.initial_runtime = slot.initial_runtime;
    // A kept teacher's decisions were simulated (and charged) too: they count as found.
    if (const TeacherEntry* t = teacher_of(graphs[slot.graph].key))
      slot.best_runtime = std::min(slot.best_runtime, t->teacher.runtime);
    out.best_runtime = std::isfinite(slot.best_runtime) ? slot.best_runtime : slot.initial_runtime;
    return out;
  }

  std::vector<Rollout> collect() {
    GOENV_CHECK(!slots.empty(), InvalidArgument, "collect has no envs to sample: call set_envs with sampled envs first");
    const ThreadScope threads(config.num_threads);
    const std::size_t per_update = config.graphs_per_update > 0
                                       ? std::min<std::size_t>(config.graphs_per_update, slots.size())
                                       : slots.size();
    std::vector<Rollout> out;
    for (std::size_t j = 0; j < per_update; ++j) out.push_back(collect_slot(slots[(next_slot + j) % slots.size()]));
    next_slot = (next_slot + per_update) % slots.size();
    return out;
  }

  // A rollout from elsewhere (another process) must match the graphs and the spec.
  void check_rollout(const Rollout& r, std::size_t index) const {
    GOENV_CHECK(r.graph >= 0 && static_cast<std::size_t>(r.graph) < graphs.size(), InvalidArgument,
                "rollout " << index << ": graph " << r.graph << " is out of range; set_envs holds " << graphs.size()
                           << " graphs");
    const GraphEntry& g = graphs[r.graph];
    GOENV_CHECK(r.env_id == g.id && r.num_nodes == g.num_nodes, InvalidArgument,
                "rollout " << index << " is of " << r.env_id << " (" << r.num_nodes << " nodes), but graph " << r.graph
                           << " is " << g.id << " (" << g.num_nodes << " nodes)");
    GOENV_CHECK(r.node_state_dim == spec.node_state_dim && r.action_mask_width == spec.action_mask_width() &&
                    r.global_dim == spec.global_dim && r.actions.size() == spec.heads.size(),
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
    for (const auto* v : {&r.log_prob}) size_is(v->size(), m, "log_prob");
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
    for (std::size_t h = 0; h < r.actions.size(); ++h)
      GOENV_CHECK(!r.actions[h].empty() && r.actions[h].size() % m == 0, InvalidArgument,
                  "rollout " << index << ": actions of head " << h << " are not (samples, width)");
  }

  const TeacherEntry* teacher_of(std::uint64_t key) const {
    const auto it = teachers.find(key);
    return it == teachers.end() || it->second.targets.empty() ? nullptr : &it->second;
  }

  // Linear schedules over env steps since the last imitation (or the start).
  double progress(std::int64_t steps) const {
    return steps <= 0 ? 1.0 : std::min(1.0, static_cast<double>(steps_trained - schedule_origin) / steps);
  }
  double teacher_coef() const {
    return config.teacher_decay_steps == 0 ? config.teacher_coef
                                           : config.teacher_coef * (1.0 - progress(config.teacher_decay_steps));
  }
  double entropy_coef() const {
    if (config.entropy_coef_final < 0 || config.entropy_decay_steps == 0) return config.entropy_coef;
    return config.entropy_coef + (config.entropy_coef_final - config.entropy_coef) * progress(config.entropy_decay_steps);
  }

  // GAE(lambda) per copy, then normalized per rollout (one graph). With a
  // teacher (and teacher_baseline) one-shot advantages are reward minus the
  // teacher's reward, scaled by their spread but not centred.
  void advantages(const Rollout& r, const TeacherEntry* teacher, std::vector<double>& advantage,
                  std::vector<double>& target) const {
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

  // PPO epochs over the rollouts; fills the loss fields of `metrics`.
  void ppo(const std::vector<Rollout>& rollouts, UpdateMetrics& metrics) {
    struct Prepared {
      const GraphTensors* graph;
      Batch observations;
      torch::Tensor old_log_prob, advantage, value_target;  // (M,) on the device
      std::vector<torch::Tensor> actions;                   // per head (M, N or U) on the device
      std::vector<std::int64_t> observation_of;             // per sample
      std::int64_t num_observations = 0;
      const TeacherEntry* teacher = nullptr;
    };
    std::vector<Prepared> prepared;
    for (const Rollout& r : rollouts) {
      Prepared p;
      p.graph = &graphs[r.graph].graph;
      p.teacher = teacher_of(graphs[r.graph].key);
      const std::int64_t o = r.num_observations, n = r.num_nodes, m = r.samples();
      p.num_observations = o;
      p.observations = {
          torch::from_blob(const_cast<float*>(r.node_state.data()), {o, n, r.node_state_dim}, torch::kFloat32)
              .to(device),
          torch::from_blob(const_cast<std::int8_t*>(r.action_mask.data()), {o, n, r.action_mask_width}, torch::kInt8)
              .to(device)
              .to(torch::kBool),
          torch::from_blob(const_cast<float*>(r.globals.data()), {o, r.global_dim}, torch::kFloat32).to(device)};
      p.observation_of.assign(r.observation.begin(), r.observation.end());
      std::vector<double> advantage, target;
      advantages(r, p.teacher, advantage, target);
      const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
      p.old_log_prob = torch::tensor(r.log_prob, f64).to(device);
      p.advantage = torch::tensor(advantage, f64).to(device);
      p.value_target = torch::tensor(target, f64).to(torch::kFloat32).to(device);
      for (const auto& a : r.actions) {
        const std::int64_t width = static_cast<std::int64_t>(a.size()) / m;
        p.actions.push_back(
            torch::from_blob(const_cast<std::int64_t*>(a.data()), {m, width}, torch::kInt64).to(device).clone());
      }
      prepared.push_back(std::move(p));
    }
    const double heads = static_cast<double>(spec.heads.size());
    const double entropy_weight = entropy_coef(), teacher_weight = teacher_coef();
    metrics.entropy_coef = entropy_weight;
    metrics.teacher_coef = teacher_weight;
    double policy_loss = 0, value_loss = 0, entropy_sum = 0, kl = 0, clipped = 0, count = 0, teacher_sum = 0;
    for (int epoch = 0; epoch < config.epochs; ++epoch) {
      std::vector<torch::Tensor> permutations;
      for (const Prepared& p : prepared)
        permutations.push_back(
            torch::randperm(static_cast<std::int64_t>(p.observation_of.size()), shuffler, torch::kInt64));
      double epoch_kl = 0, epoch_count = 0;
      for (int mb = 0; mb < config.minibatches; ++mb) {
        optimizer->zero_grad();
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
          const Prepared& p = prepared[i];
          const torch::Tensor& chunk = chunks[i];
          const std::int64_t size = chunk.size(0);
          if (size == 0) continue;
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
          const torch::Tensor distinct_index = torch::tensor(distinct, torch::kInt64).to(device);
          const torch::Tensor local_index = torch::tensor(local, torch::kInt64).to(device);
          const torch::Tensor sample_index = chunk.to(device);
          auto [logits, value] = run(*p.graph, p.observations.select(distinct_index));
          torch::Tensor decision_entropy = entropy({logits[0]}) / static_cast<double>(logits[0].size(1));
          for (std::size_t h = 1; h < logits.size(); ++h)
            decision_entropy = decision_entropy + entropy({logits[h]}) / static_cast<double>(logits[h].size(1));
          const torch::Tensor node_entropy = (decision_entropy / heads).index_select(0, local_index);
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
          torch::Tensor loss = loss_policy.to(torch::kFloat32) + config.value_coef * loss_value -
                               entropy_weight * bonus;
          torch::Tensor loss_teacher;
          if (p.teacher != nullptr) {
            loss_teacher = teacher_cross_entropy(logits, p.teacher->targets,
                                                 smoothing_for(p.teacher->targets, config.imitation_flips));
            if (teacher_weight > 0) loss = loss + teacher_weight * loss_teacher;
          }
          (loss * (static_cast<double>(size) / total)).backward();
          {
            torch::NoGradGuard no_grad;
            const double w = static_cast<double>(size);
            policy_loss += loss_policy.item<double>() * w;
            value_loss += loss_value.item<double>() * w;
            entropy_sum += bonus.item<double>() * w;
            if (loss_teacher.defined()) teacher_sum += loss_teacher.item<double>() * w;
            const double sample_kl = ((ratio - 1) - log_ratio).mean().item<double>();  // k3 estimator
            kl += sample_kl * w;
            epoch_kl += sample_kl * w;
            clipped += ((ratio - 1).abs() > config.clip).to(torch::kFloat64).mean().item<double>() * w;
            count += w;
            epoch_count += w;
          }
        }
        if (config.max_grad_norm > 0) torch::nn::utils::clip_grad_norm_(policy->parameters(), config.max_grad_norm);
        optimizer->step();
      }
      if (config.target_kl > 0 && epoch_count > 0 && epoch_kl / epoch_count > 1.5 * config.target_kl) break;
    }
    if (count > 0) {
      metrics.policy_loss = policy_loss / count;
      metrics.value_loss = value_loss / count;
      metrics.entropy = entropy_sum / count;
      metrics.approx_kl = kl / count;
      metrics.clip_fraction = clipped / count;
      metrics.teacher_loss = teacher_sum / count;
    }
  }

  // Self-imitation (Oh et al., ICML 2018): a sampled decision that beats the
  // graph's teacher becomes its teacher, so the policy is pulled toward the
  // best decision found so far rather than back to the heuristic.
  void adopt_better_sample(const Rollout& r) {
    const GraphEntry& g = graphs[r.graph];
    auto it = teachers.find(g.key);
    if (it == teachers.end() || it->second.targets.empty()) return;
    TeacherEntry& entry = it->second;
    std::int64_t best = -1;
    for (std::int64_t i = 0; i < r.samples(); ++i)
      if (r.done[i] && !r.invalid[i] && r.runtime[i] < entry.teacher.runtime &&
          (best < 0 || r.runtime[i] < r.runtime[best]))
        best = i;
    if (best < 0) return;
    entry.teacher.runtime = r.runtime[best];
    entry.teacher.reward = r.reward[best];
    for (std::size_t h = 0; h < r.actions.size(); ++h) {
      const std::int64_t width = static_cast<std::int64_t>(r.actions[h].size()) / r.samples();
      const torch::Tensor chosen =
          torch::tensor(std::vector<std::int64_t>(r.actions[h].begin() + best * width,
                                                  r.actions[h].begin() + (best + 1) * width),
                        torch::kInt64).unsqueeze(0);
      entry.targets[h] = chosen.to(device);
      const torch::Tensor per_node = env_actions(g.graph, h, chosen.to(device));
      entry.teacher.actions[h].assign(per_node.data_ptr<std::int64_t>(), per_node.data_ptr<std::int64_t>() + per_node.numel());
    }
  }

  UpdateMetrics update(const std::vector<Rollout>& rollouts) {
    GOENV_CHECK(ready, InvalidArgument, "update needs a policy: call set_envs first");
    GOENV_CHECK(!rollouts.empty(), InvalidArgument, "update needs at least one rollout");
    for (std::size_t i = 0; i < rollouts.size(); ++i) check_rollout(rollouts[i], i);
    const ThreadScope threads(config.num_threads);
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
    if (config.teacher_update)
      for (const Rollout& r : rollouts) adopt_better_sample(r);
    ppo(rollouts, metrics);
    ++version;
    ++updates;
    steps_trained += static_cast<std::int64_t>(samples);
    metrics.step = steps_trained;
    metrics.update = updates;
    metrics.mean_reward = reward / samples;
    metrics.mean_runtime = runtime / samples;
    metrics.mean_speedup = speedup / samples;
    metrics.invalid_fraction = invalid / samples;
    metrics.best_runtime = best / static_cast<double>(rollouts.size());
    metrics.best_speedup = best_speedup / static_cast<double>(rollouts.size());
    return metrics;
  }

  void train(const std::vector<const Env*>& prototypes, std::int64_t total_steps, const Callback& callback) {
    GOENV_CHECK(!prototypes.empty(), InvalidArgument, "train needs at least one env");
    GOENV_CHECK(total_steps > 0, InvalidArgument, "total_steps must be > 0, got " << total_steps);
    const ThreadScope threads(config.num_threads);
    std::vector<int> all(prototypes.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    set_envs(prototypes, all, 0);
    const auto start = std::chrono::steady_clock::now();
    const std::int64_t before = steps_trained;
    std::int64_t count = 0;
    while (steps_trained - before < total_steps) {
      UpdateMetrics metrics = update(collect());
      metrics.step = steps_trained - before;
      metrics.update = ++count;
      metrics.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (callback && !callback(metrics)) break;
    }
  }

  // Makes sure the graph `key` of `env` has a teacher `method` with targets: the
  // kept one, or one solved into `fresh` (the simulations it ran added to `calls`).
  void prepare_teacher(const Env& env, std::uint64_t key, const GraphTensors& graph, const std::string& method,
                       std::map<std::uint64_t, TeacherEntry>& fresh, std::int64_t& calls) {
    const std::string resolved = teacher_method(method);
    auto it = teachers.find(key);
    if (it == teachers.end() || it->second.teacher.method != resolved) {
      it = fresh.find(key);
      if (it == fresh.end()) {
        Teacher t = solve_teacher(env, method, static_cast<std::uint64_t>(config.seed));
        calls += t.simulator_calls;
        it = fresh.emplace(key, TeacherEntry{std::move(t), {}}).first;
      }
    }
    if (it->second.targets.empty()) it->second.targets = teacher_targets(graph, spec, it->second.teacher, device);
  }

  ImitationMetrics imitate(const std::vector<const Env*>& prototypes, std::int64_t steps, const std::string& teacher,
                           const ImitationCallback& callback) {
    const std::string method = teacher.empty() ? config.teacher : teacher;
    GOENV_CHECK(!prototypes.empty(), InvalidArgument, "imitate needs at least one env");
    GOENV_CHECK(steps >= 1, InvalidArgument, "imitation steps must be >= 1, got " << steps);
    for (std::size_t i = 0; i < prototypes.size(); ++i) {
      GOENV_CHECK(prototypes[i] != nullptr, InvalidArgument, "env " << i << " is null");
      check_env(*prototypes[i]);
    }
    const ThreadScope threads(config.num_threads);
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
      item.graph = tensors_of(*item.env);
      prepare_teacher(*item.env, item.key, item.graph, method, fresh, metrics.simulator_calls);
      const DynamicObservation obs = item.env->reset(reset_seed(i, 0, 0, stream));
      item.states = stack({&obs}, spec, item.env->graph().num_nodes(), device);
    }
    for (auto& [key, entry] : fresh) teachers[key] = std::move(entry);  // every teacher was solved: keep them
    for (Item& item : items) item.teacher = &teachers.at(item.key);
    config.teacher = method;
    const std::size_t per_step = config.graphs_per_update > 0
                                     ? std::min<std::size_t>(config.graphs_per_update, items.size())
                                     : items.size();
    std::size_t next = 0;
    for (std::int64_t step = 1; step <= steps; ++step) {
      optimizer->zero_grad();
      double loss_sum = 0, accuracy_sum = 0;
      for (std::size_t j = 0; j < per_step; ++j) {
        Item& item = items[(next + j) % items.size()];
        if (item.env->config().horizon > 1) metrics.simulator_calls += dagger_states(item.env.get(), item.graph, item.states);
        const auto logits = run(item.graph, item.states).first;
        const torch::Tensor loss = teacher_cross_entropy(logits, item.teacher->targets,
                                                         smoothing_for(item.teacher->targets, config.imitation_flips));
        (loss / static_cast<double>(per_step)).backward();
        torch::NoGradGuard no_grad;
        loss_sum += loss.item<double>();
        accuracy_sum += teacher_accuracy(logits, item.teacher->targets);
      }
      next = (next + per_step) % items.size();
      if (config.max_grad_norm > 0) torch::nn::utils::clip_grad_norm_(policy->parameters(), config.max_grad_norm);
      optimizer->step();
      ++version;
      metrics.step = step;
      metrics.loss = loss_sum / static_cast<double>(per_step);
      metrics.accuracy = accuracy_sum / static_cast<double>(per_step);
      metrics.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (callback && !callback(metrics)) break;
    }
    schedule_origin = steps_trained;
    return metrics;
  }

  // DAgger: the states one sampled episode of the current policy visits (all
  // but the terminal one), to be labelled with the teacher's decisions.
  std::int64_t dagger_states(Env* env, const GraphTensors& graph, Batch& states) {
    torch::NoGradGuard no_grad;
    std::vector<DynamicObservation> visited;
    std::vector<std::vector<std::int64_t>> decided;
    std::int64_t calls = 0;
    episode(*env, graph, reset_seed(~std::size_t{1}, 0, version, stream), false, decided, calls, &visited);
    std::vector<const DynamicObservation*> pointers;
    for (const auto& o : visited) pointers.push_back(&o);
    states = stack(pointers, spec, static_cast<int>(graph.num_nodes), device);
    return calls;
  }

  // Runs one episode on `env` (greedy or sampled); returns the last step, with
  // its per-node actions in `decided`. `visited`, when given, receives every
  // observation acted on (all but the terminal one).
  StepResult episode(Env& env, const GraphTensors& graph, std::uint64_t seed, bool deterministic,
                     std::vector<std::vector<std::int64_t>>& decided, std::int64_t& calls,
                     std::vector<DynamicObservation>* visited = nullptr) {
    DynamicObservation obs = env.reset(seed);
    StepResult r;
    do {
      const auto logits = run(graph, stack({&obs}, spec, static_cast<int>(graph.num_nodes), device)).first;
      decided.clear();
      for (std::size_t h = 0; h < logits.size(); ++h) {
        const torch::Tensor a = env_actions(graph, h, sample_actions(logits[h], deterministic, sampler));
        decided.emplace_back(a.data_ptr<std::int64_t>(), a.data_ptr<std::int64_t>() + a.numel());
      }
      r = step_actions(env, decided);
      ++calls;
      if (visited != nullptr) visited->push_back(std::move(obs));
      obs = std::move(r.observation);
    } while (!r.terminated && !r.truncated);
    return r;
  }

  OptimizeResult optimize(const Env& prototype, int samples, std::int64_t local_search_budget) {
    GOENV_CHECK(samples >= 1, InvalidArgument, "samples must be >= 1, got " << samples);
    GOENV_CHECK(local_search_budget >= 0, InvalidArgument,
                "local_search_budget must be >= 0, got " << local_search_budget);
    check_env(prototype);
    const ThreadScope threads(config.num_threads);
    std::unique_ptr<Env> env = copy_env(prototype);
    const GraphTensors graph = tensors_of(*env);
    constexpr double inf = std::numeric_limits<double>::infinity();
    OptimizeResult result;
    result.env_id = prototype.id();
    result.runtime = result.greedy_runtime = inf;
    torch::NoGradGuard no_grad;
    std::vector<std::vector<std::int64_t>> decided;
    for (int i = 0; i < samples; ++i) {
      const StepResult r = episode(*env, graph, reset_seed(~std::size_t{0}, 0, i, 0), i == 0, decided,
                                   result.simulator_calls);
      result.initial_runtime = r.info.initial_runtime;
      const bool valid = !(r.info.oom || r.info.invalid);
      if (i == 0) result.greedy_runtime = valid ? r.info.runtime : inf;
      if (i == 0 || (valid && r.info.runtime < result.runtime)) {
        result.runtime = valid ? r.info.runtime : inf;
        result.actions = decided;
        result.source = i == 0 ? "greedy" : "sample";
      }
    }
    // The best decisions training found on this graph (a kept teacher) were simulated then.
    if (const auto it = teachers.find(env_key(*env)); it != teachers.end() && it->second.teacher.runtime < result.runtime) {
      result.runtime = it->second.teacher.runtime;
      result.actions = it->second.teacher.actions;
      result.source = "training";
    }
    if (local_search_budget > 0 && std::isfinite(result.runtime)) {
      // The best decisions become the env's current ones: local search starts from them.
      env->reset(reset_seed(~std::size_t{0}, 0, samples, 0));
      step_actions(*env, result.actions);
      ++result.simulator_calls;
      const BaselineResult searched =
          solve_baseline(*env, "local-search", Budget{local_search_budget, static_cast<std::uint64_t>(config.seed)});
      result.simulator_calls += searched.simulator_calls;
      if (!searched.oom && !searched.invalid && searched.runtime < result.runtime) {
        auto actions = solution_actions(*env, searched.decisions);  // measured as the env steps them
        env->reset(reset_seed(~std::size_t{0}, 0, samples + 1, 0));
        const StepResult r = step_actions(*env, actions);
        ++result.simulator_calls;
        if (!(r.info.oom || r.info.invalid) && r.info.runtime < result.runtime) {
          result.runtime = r.info.runtime;
          result.actions = std::move(actions);
          result.source = "local-search";
        }
      }
    }
    return result;
  }

  const float* weights() {
    GOENV_CHECK(ready, InvalidArgument, "the agent has no policy yet, so no weights");
    if (!flat.is_cuda()) return flat.data_ptr<float>();
    host_weights = flat.to(torch::kCPU).contiguous();
    return host_weights.data_ptr<float>();
  }

  void set_weights(const float* data, std::int64_t size, std::int64_t new_version) {
    GOENV_CHECK(ready, InvalidArgument, "the agent has no policy yet: set_envs (or setup) before set_weights");
    GOENV_CHECK(size == flat.numel(), InvalidArgument,
                "weights have " << size << " values, the policy has " << flat.numel() << " parameters ("
                                << spec.describe() << ", hidden " << config.hidden << ")");
    torch::NoGradGuard no_grad;
    flat.copy_(torch::from_blob(const_cast<float*>(data), {size}, torch::kFloat32));
    version = new_version;
  }

  GraphTensors& graph_for(const ObservationBatch& o) {
    std::uint64_t key = hash_bytes(o.node_features, sizeof(float) * o.num_nodes * static_cast<std::size_t>(o.node_feature_dim));
    key = hash_bytes(o.edge_index, sizeof(std::int64_t) * 2 * static_cast<std::size_t>(o.num_edges), key);
    if (o.colocation != nullptr) key = hash_bytes(o.colocation, sizeof(std::int32_t) * o.num_nodes, key);
    key = mix(key ^ (static_cast<std::uint64_t>(o.num_nodes) << 32) ^ static_cast<std::uint64_t>(o.num_edges) ^
              (o.colocation != nullptr ? 1ULL << 63 : 0));
    if (!act_graph.node_features.defined() || key != act_graph_key) {
      act_graph = graph_tensors(o.num_nodes, o.node_feature_dim, o.node_features, o.num_edges, o.edge_index, device,
                                o.colocation);
      act_graph_key = key;
    }
    return act_graph;
  }

  std::vector<std::vector<std::int64_t>> act(const ObservationBatch& o, bool deterministic) {
    GOENV_CHECK(ready, InvalidArgument,
                "the agent has no policy yet: train it, load a checkpoint, or pass env= when creating it");
    GOENV_CHECK(o.batch >= 1 && o.num_nodes >= 1 && o.num_edges >= 0, InvalidArgument,
                "observation needs batch >= 1 and nodes >= 1, got batch " << o.batch << ", " << o.num_nodes << " nodes");
    PolicySpec seen = spec;
    seen.node_feature_dim = o.node_feature_dim;
    seen.node_state_dim = o.node_state_dim;
    seen.global_dim = o.global_dim;
    check_spec(seen, "the observation");
    GOENV_CHECK(o.action_mask_width == spec.action_mask_width(), InvalidArgument,
                "action_mask has " << o.action_mask_width << " columns, the policy's heads need "
                                   << spec.action_mask_width() << " (" << spec.describe() << ")");
    const ThreadScope threads(config.num_threads);
    torch::NoGradGuard no_grad;
    const GraphTensors& graph = graph_for(o);
    const std::int64_t b = o.batch, n = o.num_nodes;
    const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
    Batch batch{torch::from_blob(const_cast<float*>(o.node_state), {b, n, o.node_state_dim}, f32).to(device),
                torch::from_blob(const_cast<std::int8_t*>(o.action_mask), {b, n, o.action_mask_width}, torch::kInt8)
                    .to(device)
                    .to(torch::kBool),
                torch::from_blob(const_cast<float*>(o.globals), {b, o.global_dim}, f32).to(device)};
    auto logits = run(graph, batch).first;
    std::vector<std::vector<std::int64_t>> out;
    for (std::size_t h = 0; h < logits.size(); ++h) {
      const torch::Tensor a = env_actions(graph, h, sample_actions(logits[h], deterministic, sampler));
      out.emplace_back(a.data_ptr<std::int64_t>(), a.data_ptr<std::int64_t>() + a.numel());
    }
    return out;
  }

  EvaluationResult evaluate(const Env& prototype, int episodes, bool deterministic) {
    GOENV_CHECK(episodes >= 1, InvalidArgument, "episodes must be >= 1, got " << episodes);
    check_env(prototype);
    const ThreadScope threads(config.num_threads);
    std::unique_ptr<Env> env = copy_env(prototype);
    const GraphTensors graph = tensors_of(*env);
    EvaluationResult result;
    result.env_id = prototype.id();
    result.episodes = episodes;
    result.best_runtime = std::numeric_limits<double>::infinity();
    double runtime = 0, invalid = 0;
    std::int64_t calls = 0;
    std::vector<std::vector<std::int64_t>> decided;
    torch::NoGradGuard no_grad;
    for (int e = 0; e < episodes; ++e) {
      const StepResult r = episode(*env, graph, reset_seed(~std::size_t{0}, 0, e, 0), deterministic, decided, calls);
      const bool bad = r.info.oom || r.info.invalid;
      runtime += r.info.runtime;
      invalid += bad ? 1 : 0;
      if (!bad) result.best_runtime = std::min(result.best_runtime, r.info.runtime);
      result.initial_runtime = r.info.initial_runtime;
      result.lower_bound = r.info.lower_bound;
    }
    result.runtime = runtime / episodes;
    result.speedup = result.runtime > 0 ? result.initial_runtime / result.runtime : 1.0;
    result.invalid_fraction = invalid / episodes;
    if (!std::isfinite(result.best_runtime)) result.best_runtime = result.runtime;
    return result;
  }
};

// --- checkpoints ---------------------------------------------------------------

namespace {

void put_u64(std::string& out, std::uint64_t x) { out.append(reinterpret_cast<const char*>(&x), 8); }

struct Reader {
  const std::string& bytes;
  std::size_t at = 0;
  void need(std::size_t n, const char* what) const {
    GOENV_CHECK(n <= bytes.size() - at, InvalidArgument,
                "corrupt agent checkpoint: truncated " << what << " (" << bytes.size() << " bytes in all)");
  }
  std::uint64_t u64(const char* what) {
    need(8, what);
    std::uint64_t x;
    std::memcpy(&x, bytes.data() + at, 8);
    at += 8;
    return x;
  }
  std::string take(std::uint64_t n, const char* what) {
    need(n, what);
    std::string s = bytes.substr(at, n);
    at += n;
    return s;
  }
};

struct Checkpoint {
  std::uint64_t format = 0;
  AgentConfig config;
  PolicySpec spec;
  bool has_policy = false;
  std::int64_t steps_trained = 0;
  // Format 2: the training state.
  std::int64_t version = 0, updates = 0, schedule_origin = 0, next_slot = 0;
  struct TeacherHeader {
    std::uint64_t key = 0;
    Teacher teacher;  // without actions (those are in the payload)
  };
  std::vector<TeacherHeader> teachers;
  std::string payload;
};

// "key;method;runtime;reward;calls", numbers in full precision.
std::string teacher_line(std::uint64_t key, const Teacher& t) {
  std::ostringstream os;
  os.precision(17);
  os << key << ';' << t.method << ';' << t.runtime << ';' << t.reward << ';' << t.simulator_calls;
  return os.str();
}

Checkpoint::TeacherHeader parse_teacher(const std::string& text) {
  std::istringstream in(text);
  std::string key, method, runtime, reward, calls;
  GOENV_CHECK(std::getline(in, key, ';') && std::getline(in, method, ';') && std::getline(in, runtime, ';') &&
                  std::getline(in, reward, ';') && std::getline(in, calls) && !method.empty(),
              InvalidArgument, "corrupt agent checkpoint: bad teacher line '" << text << "'");
  Checkpoint::TeacherHeader t;
  t.key = std::stoull(key);
  t.teacher.method = method;
  t.teacher.runtime = std::stod(runtime);
  t.teacher.reward = std::stod(reward);
  t.teacher.simulator_calls = std::stoll(calls);
  return t;
}

std::string head_list(const PolicySpec& spec) {
  std::ostringstream out;
  for (std::size_t i = 0; i < spec.heads.size(); ++i)
    out << (i ? "," : "") << head_name(spec.heads[i]) << ":" << spec.choices[i];
  return out.str();
}

PolicySpec parse_heads(PolicySpec spec, const std::string& text) {
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto colon = item.find(':');
    GOENV_CHECK(colon != std::string::npos, InvalidArgument, "corrupt agent checkpoint: bad head '" << item << "'");
    const std::string name = item.substr(0, colon);
    Head head;
    if (name == "placement") head = Head::kPlacement;
    else if (name == "priority") head = Head::kPriority;
    else if (name == "fusion") head = Head::kFusion;
    else GOENV_FAIL(InvalidArgument, "corrupt agent checkpoint: unknown head '" << name << "'");
    spec.heads.push_back(head);
    spec.choices.push_back(std::stoi(item.substr(colon + 1)));
  }
  return spec;
}

Checkpoint parse_checkpoint(const std::string& bytes) {
  GOENV_CHECK(bytes.size() >= sizeof(kMagic) && std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) == 0, InvalidArgument,
              "not a goenv agent checkpoint (bad magic bytes; " << bytes.size() << " bytes)");
  Reader r{bytes, sizeof(kMagic)};
  const std::uint64_t version = r.u64("version");
  GOENV_CHECK(version == 1 || version == kCheckpointVersion, InvalidArgument,
              "agent checkpoint format version " << version << " is not supported (this goenv reads version "
                                                 << "1 and " << kCheckpointVersion << ")");
  const std::uint64_t header_size = r.u64("header size");
  const std::string header = r.take(header_size, "header");
  const std::uint64_t payload_size = r.u64("payload size");
  const std::uint64_t checksum = r.u64("checksum");
  Checkpoint c;
  c.format = version;
  c.payload = r.take(payload_size, "parameters");
  GOENV_CHECK(r.at == bytes.size(), InvalidArgument,
              "corrupt agent checkpoint: " << bytes.size() - r.at << " unexpected trailing bytes");
  GOENV_CHECK(hash_bytes(header.data(), header.size(), hash_bytes(c.payload.data(), c.payload.size())) == checksum,
              InvalidArgument, "corrupt agent checkpoint: checksum mismatch");
  std::map<std::string, std::string> config_text;
  std::istringstream in(header);
  std::string line;
  try {
    while (std::getline(in, line)) {
      const auto eq = line.find('=');
      GOENV_CHECK(eq != std::string::npos, InvalidArgument, "corrupt agent checkpoint: bad header line '" << line << "'");
      const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
      if (key.rfind("config.", 0) == 0) config_text[key.substr(7)] = value;
      else if (key == "spec.node_feature_dim") c.spec.node_feature_dim = std::stoi(value);
      else if (key == "spec.node_state_dim") c.spec.node_state_dim = std::stoi(value);
      else if (key == "spec.global_dim") c.spec.global_dim = std::stoi(value);
      else if (key == "spec.heads") c.spec = parse_heads(c.spec, value);
      else if (key == "has_policy") c.has_policy = value == "1";
      else if (key == "steps_trained") c.steps_trained = std::stoll(value);
      else if (key == "version") c.version = std::stoll(value);
      else if (key == "updates") c.updates = std::stoll(value);
      else if (key == "schedule_origin") c.schedule_origin = std::stoll(value);
      else if (key == "next_slot") c.next_slot = std::stoll(value);
      else if (key == "teacher") c.teachers.push_back(parse_teacher(value));
      else GOENV_FAIL(InvalidArgument, "corrupt agent checkpoint: unknown header key '" << key << "'");
    }
  } catch (const std::logic_error& e) {  // std::stoi
    GOENV_FAIL(InvalidArgument, "corrupt agent checkpoint: bad number in line '" << line << "'");
  }
  c.config = config_from_text(config_text);
  validate(c.config);
  return c;
}

}  // namespace

std::string checkpoint_algorithm(const std::string& bytes) { return parse_checkpoint(bytes).config.algorithm; }

Agent::Agent(AgentConfig config) : impl_(guarded([&] { return std::make_unique<Impl>(std::move(config)); })) {}
Agent::~Agent() = default;
Agent::Agent(Agent&&) noexcept = default;
Agent& Agent::operator=(Agent&&) noexcept = default;

const AgentConfig& Agent::config() const { return impl_->config; }
bool Agent::has_policy() const { return impl_->ready; }
const PolicySpec& Agent::spec() const {
  GOENV_CHECK(impl_->ready, InvalidArgument, "the agent has no policy yet");
  return impl_->spec;
}
void Agent::setup(const PolicySpec& spec) {
  guarded([&] {
    if (!impl_->ready) impl_->build(spec);
    impl_->check_spec(spec, "the spec");
  });
}
std::int64_t Agent::num_parameters() const {
  if (!impl_->ready) return 0;
  std::int64_t total = 0;
  for (const auto& p : impl_->policy->parameters()) total += p.numel();
  return total;
}
std::int64_t Agent::steps_trained() const { return impl_->steps_trained; }
std::string Agent::device() const { return impl_->device.is_cuda() ? "cuda" : "cpu"; }

void Agent::train(const std::vector<const Env*>& envs, std::int64_t total_steps, const Callback& callback) {
  guarded([&] { impl_->train(envs, total_steps, callback); });
}
void Agent::set_envs(const std::vector<const Env*>& envs, const std::vector<int>& sampled, std::uint64_t stream) {
  guarded([&] { impl_->set_envs(envs, sampled, stream); });
}
std::vector<Rollout> Agent::collect() {
  return guarded([&] { return impl_->collect(); });
}
UpdateMetrics Agent::update(const std::vector<Rollout>& rollouts) {
  return guarded([&] { return impl_->update(rollouts); });
}
const float* Agent::weights() {
  return guarded([&] { return impl_->weights(); });
}
std::int64_t Agent::weights_version() const { return impl_->version; }
void Agent::set_weights(const float* data, std::int64_t size, std::int64_t version) {
  guarded([&] { impl_->set_weights(data, size, version); });
}
std::vector<std::vector<std::int64_t>> Agent::act(const ObservationBatch& observation, bool deterministic) {
  return guarded([&] { return impl_->act(observation, deterministic); });
}
EvaluationResult Agent::evaluate(const Env& env, int episodes, bool deterministic) {
  return guarded([&] { return impl_->evaluate(env, episodes, deterministic); });
}

ImitationMetrics Agent::imitate(const std::vector<const Env*>& envs, std::int64_t steps, const std::string& teacher,
                                const ImitationCallback& callback) {
  return guarded([&] { return impl_->imitate(envs, steps, teacher, callback); });
}
const Teacher* Agent::teacher(const Env& env) const {
  const auto it = impl_->teachers.find(env_key(env));
  return it == impl_->teachers.end() ? nullptr : &it->second.teacher;
}
OptimizeResult Agent::optimize(const Env& env, int samples, std::int64_t local_search_budget) {
  return guarded([&] { return impl_->optimize(env, samples, local_search_budget); });
}

std::string Agent::to_bytes() const {
  return guarded([&] {
    const Impl& m = *impl_;
    std::string header;
    for (const auto& [key, value] : config_to_text(m.config)) header += "config." + key + "=" + value + "\n";
    header += "has_policy=" + std::string(m.ready ? "1" : "0") + "\n";
    header += "steps_trained=" + std::to_string(m.steps_trained) + "\n";
    header += "version=" + std::to_string(m.version) + "\n";
    header += "updates=" + std::to_string(m.updates) + "\n";
    header += "schedule_origin=" + std::to_string(m.schedule_origin) + "\n";
    header += "next_slot=" + std::to_string(m.next_slot) + "\n";
    std::string payload;
    if (m.ready) {
      const PolicySpec& s = m.spec;
      header += "spec.node_feature_dim=" + std::to_string(s.node_feature_dim) + "\n";
      header += "spec.node_state_dim=" + std::to_string(s.node_state_dim) + "\n";
      header += "spec.global_dim=" + std::to_string(s.global_dim) + "\n";
      header += "spec.heads=" + head_list(s) + "\n";
      torch::serialize::OutputArchive archive, policy, optimizer;
      m.policy->save(policy);
      m.optimizer->save(optimizer);
      archive.write("policy", policy);
      archive.write("optimizer", optimizer);
      archive.write("sampler", m.sampler.get_state());
      archive.write("shuffler", m.shuffler.get_state());
      for (const auto& [key, entry] : m.teachers) {
        header += "teacher=" + teacher_line(key, entry.teacher) + "\n";
        for (std::size_t h = 0; h < entry.teacher.actions.size(); ++h)
          archive.write("teacher." + std::to_string(key) + "." + std::to_string(h),
                        torch::tensor(entry.teacher.actions[h], torch::kInt64));
      }
      std::ostringstream os;
      archive.save_to(os);
      payload = os.str();
    }
    std::string out(kMagic, sizeof(kMagic));
    put_u64(out, kCheckpointVersion);
    put_u64(out, header.size());
    out += header;
    put_u64(out, payload.size());
    put_u64(out, hash_bytes(header.data(), header.size(), hash_bytes(payload.data(), payload.size())));
    out += payload;
    return out;
  });
}

void Agent::from_bytes(const std::string& bytes) {
  guarded([&] {
    Checkpoint c = parse_checkpoint(bytes);
    auto fresh = std::make_unique<Impl>(c.config);
    if (c.has_policy) {
      fresh->build(c.spec);
      try {
        torch::serialize::InputArchive archive;
        archive.load_from(c.payload.data(), c.payload.size(), fresh->device);
        if (c.format == 1) {  // parameters only
          fresh->policy->load(archive);
          fresh->flatten();
        } else {
          torch::serialize::InputArchive policy, optimizer;
          archive.read("policy", policy);
          fresh->policy->load(policy);
          fresh->flatten();  // loading replaced the parameters' storage; the optimizer keeps the same tensors
          archive.read("optimizer", optimizer);
          fresh->optimizer->load(optimizer);
          torch::Tensor state;
          archive.read("sampler", state);
          fresh->sampler.set_state(state.to(torch::kCPU));
          archive.read("shuffler", state);
          fresh->shuffler.set_state(state.to(torch::kCPU));
          for (auto& t : c.teachers) {
            for (std::size_t h = 0; h < c.spec.heads.size(); ++h) {
              torch::Tensor values;
              archive.read("teacher." + std::to_string(t.key) + "." + std::to_string(h), values);
              values = values.to(torch::kCPU).to(torch::kInt64).contiguous();
              t.teacher.actions.emplace_back(values.data_ptr<std::int64_t>(),
                                             values.data_ptr<std::int64_t>() + values.numel());
            }
          }
        }
      } catch (const c10::Error& e) {
        GOENV_FAIL(InvalidArgument, "corrupt agent checkpoint: parameters do not load: " << e.what_without_backtrace());
      }
    }
    fresh->steps_trained = c.steps_trained;
    fresh->version = c.version;
    fresh->updates = c.updates;
    fresh->schedule_origin = c.schedule_origin;
    fresh->next_slot = static_cast<std::size_t>(std::max<std::int64_t>(0, c.next_slot));
    // Targets need their graph's decision units: built when set_envs or imitate meets the graph.
    for (auto& t : c.teachers) fresh->teachers[t.key] = TeacherEntry{std::move(t.teacher), {}};
    impl_ = std::move(fresh);
  });
}

}  // namespace goenv::agents
