// Reference agents for goenv's environments, written in LibTorch (docs/architecture.md):
// PPO (GraphSAGE + per-node MLP heads) and the GO policy of "Transferable Graph
// Optimizers for ML Compilers" (Zhou et al., NeurIPS 2020): GraphSAGE node
// embeddings, Transformer-XL-style segment-recurrent attention over the nodes
// in topological order, FiLM conditioned on a graph embedding, one output layer
// per decision head. Both train with PPO, stepping goenv Envs directly from C++.
//
// This file is the public facade: the Agent and the plain data it takes and
// returns. The work lives in one room per job:
//   config     AgentConfig, its option table, PolicySpec (torch-free)
//   policy     the networks and the masked per-node distribution
//   weights    the parameters as one flat buffer plus a version
//   model      the policy on its device with optimizer and generators; the masked forward
//   sampler    rollouts: env copies stepped through envs::VectorEnv; single episodes
//   ppo        advantages, the clipped loss, update, train
//   imitation  teachers, cross-entropy toward them, DAgger, self-imitation
//   search     act, evaluate, optimize
//   safetensors the file layout checkpoints use, with its bounded reader
//   checkpoint  what a checkpoint holds (format 3), and old formats refused
// This header is torch-free on purpose: the Python binding (bindings/agents/)
// includes only it, so it never parses <torch/torch.h>.
//
// Contract:
//  * An Agent owns its policy, optimizer and random generator. The policy is
//    built for one PolicySpec (feature widths, decision heads and their
//    choices), fixed by setup() or by the first env it trains on; envs with
//    another spec are refused with InvalidArgument naming both.
//  * A whole-graph action is one value per node per head; its log-probability
//    is the sum over nodes and heads. Choices masked out by the observation's
//    action_mask are never sampled (their logits are set to a large negative).
//  * Same config (seed included), same envs: same results, on CPU with one
//    torch thread (num_threads=1); env stepping may use any thread count.
//  * Errors are goenv's typed exceptions (InvalidArgument, NotFound, ...);
//    torch's own errors are rethrown as goenv::Error.
//  * One trainer (docs/distributed.md): train() is set_envs(), then collect() and
//    update() in turn. A distributed run splits the same calls: rollout
//    workers set_weights() and collect(), the learner update()s and hands out
//    weights(). Sampling (collect, act, evaluate) and updating (minibatch
//    shuffles) draw from two separate generators, so a worker and a learner
//    seeded alike reproduce train() exactly.
//  * The parameters live in one contiguous float32 buffer (weights()); every
//    update() advances the weight version by one.
//  * Warm start (DOPPLER, ICLR 2026; GDP/GO pretraining): imitate() trains the
//    heads by cross-entropy toward a teacher's decisions (a baseline's, see
//    Teacher below), one term per decision unit (a colocation group is one
//    placement unit), on the states the policy itself reaches (DAgger: with
//    horizon > 1 the policy's own rollouts, labelled with the teacher's
//    decisions). The agent keeps each graph's teacher: PPO on it then adds
//    teacher_coef x the same cross-entropy, decaying linearly to 0 over
//    teacher_decay_steps env steps after the imitation, and (teacher_baseline)
//    measures one-shot advantages against the teacher's reward, scaled but not
//    centred, so only decisions better than the teacher's gain probability.
//    With teacher_update, a sampled decision that beats the teacher replaces it
//    (self-imitation).
//  * Checkpoints hold the parameters, Adam's moments, both generators, the
//    teachers and the schedules: a loaded agent continues exactly as the
//    saved one would have.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agents/config.h"
#include "envs/env.h"
#include "envs/start.h"

namespace goenv::agents {

// The teacher an agent imitates: a baseline's decisions on one env, as the
// env's actions, with what they simulate to. `method` is a baseline name
// (envs/baselines/baseline.h) or "best", short for "best-heuristic": the best
// of the classic heuristics by simulated runtime. `simulator_calls` charges
// every simulation: the baseline's own calls plus the one step that measures
// the decisions.
struct Teacher {
  std::string method;                              // the baseline actually run ("best" -> "best-heuristic")
  std::vector<std::vector<std::int64_t>> actions;  // per head in env.heads() order, (N,) values
  double runtime = 0;                              // seconds, the stepped decisions
  double reward = 0;                               // the env's reward for them (one-shot: the first step)
  std::int64_t simulator_calls = 0;
};

// A batch of observations of one graph, as raw row-major arrays (numpy or C++).
struct ObservationBatch {
  int batch = 1, num_nodes = 0, num_edges = 0;
  const float* node_features = nullptr;      // (N, F), shared by the batch
  const std::int64_t* edge_index = nullptr;  // (2, E), shared by the batch
  const float* node_state = nullptr;         // (B, N, S)
  const std::int8_t* action_mask = nullptr;  // (B, N, A)
  const float* globals = nullptr;            // (B, G)
  // (N,) colocation group ids (negative = none) or null: placements then keep
  // each group on one device, as in training.
  const std::int32_t* colocation = nullptr;
  // (D, Fd) the cluster's device features (observation version 2) or null; a
  // device_head "pairs" policy needs them.
  const float* device_features = nullptr;
  int num_devices = 0, device_feature_dim = 0;
  int node_feature_dim = 0, node_state_dim = 0, action_mask_width = 0, global_dim = 0;
};

// Reported after every PPO update.
struct UpdateMetrics {
  std::int64_t step = 0;     // env steps so far (this train() call)
  std::int64_t update = 0;   // updates so far (this train() call)
  double mean_reward = 0;    // over the rollout's steps
  double mean_runtime = 0;   // seconds, simulated runtime of the rollout's decisions
  double mean_speedup = 0;   // initial runtime / runtime, averaged over the rollout
  double best_runtime = 0;   // best valid runtime found so far, averaged over the update's graphs
  double best_speedup = 0;   // initial / best runtime, averaged over the update's graphs
  double invalid_fraction = 0;  // share of decisions that were OOM or invalid
  double policy_loss = 0, value_loss = 0, entropy = 0;  // entropy: mean per node and head
  double approx_kl = 0, clip_fraction = 0;
  double teacher_loss = 0;   // cross-entropy toward the teacher (0 on graphs without one)
  double teacher_coef = 0, entropy_coef = 0;  // the schedules' values in this update
  double seconds = 0;        // wall time since training started (after the env copies were made)
};

// Reported after every imitation step.
struct ImitationMetrics {
  std::int64_t step = 0;       // imitation steps so far (this imitate() call)
  double loss = 0;             // cross-entropy per decision unit and head
  double accuracy = 0;         // share of decision units whose greedy choice is the teacher's
  std::int64_t simulator_calls = 0;  // so far: teachers plus DAgger rollouts
  double seconds = 0;
};

// Where policy-guided search reads the policy its proposals follow: the agent's trained
// weights; the same network freshly initialised (config.seed: what training started from);
// or no network, every allowed choice equally likely. The last two are the ablations that
// measure what training adds at the same calls and the same moves; neither starts from the
// best decisions training kept.
enum class Proposals { kLearned, kUntrained, kUniform };
// The names optimize() takes ("learned", "untrained", "uniform"); InvalidArgument otherwise.
Proposals proposals_named(const std::string& name);
const char* name_of(Proposals proposals);

// optimize(): the best decisions found with the policy.
struct OptimizeResult {
  std::string env_id;
  std::vector<std::vector<std::int64_t>> actions;  // per head, (N,) per node: the best decisions
  double runtime = 0;          // seconds, never above start_runtime
  double greedy_runtime = 0;   // the policy's greedy decision's (infinity when invalid)
  double initial_runtime = 0;  // the compiler default's
  std::string start;           // what the search started from ("default", "best-heuristic", ...)
  double start_runtime = 0;
  std::string source;          // "start", "greedy", "policy", "training" or "local-search"
  std::int64_t start_calls = 0;      // simulations to find and measure the start
  std::int64_t simulator_calls = 0;  // every simulation made: start, budget, local search
  std::int64_t policy_reads = 0;     // forwards of the policy: at most 1 + 16 per search
  std::string proposals = "learned";  // name_of() the reading the proposals followed
  std::vector<double> curve;   // best runtime after each of the budget's calls
};

// One graph's rollout: copies x steps whole-graph decisions, as plain arrays.
// Samples are in (step, copy) order; observations are stored once per distinct
// observation (one-shot episodes restart from the same reset observation).
struct Rollout {
  std::string env_id;
  int graph = 0;                      // index of the env in set_envs()'s list
  std::int64_t policy_version = 0;    // weight version that chose the actions
  int copies = 0, steps = 0, num_nodes = 0;
  int num_observations = 0;           // distinct observations, O
  int node_state_dim = 0, action_mask_width = 0, global_dim = 0;
  std::vector<float> node_state;          // (O, N, S)
  std::vector<std::int8_t> action_mask;   // (O, N, A)
  std::vector<float> globals;             // (O, G)
  std::vector<std::int32_t> observation;  // (M,) index of each sample's observation, M = steps * copies
  // Per head, (M, D) as sampled: D = N, or the placement units (colocation groups as one).
  std::vector<std::vector<std::int64_t>> actions;
  std::vector<double> log_prob;           // (M,) under the sampling policy
  std::vector<float> value, reward;       // (M,)
  std::vector<std::uint8_t> done, invalid;  // (M,)
  std::vector<double> runtime, speedup;   // (M,) seconds, initial / runtime
  std::vector<float> bootstrap;           // (copies,) value after the last step (0 when it ended an episode)
  double initial_runtime = 0;
  double best_runtime = 0;  // best valid runtime the sampler has seen on this graph, a kept teacher's included (initial if none)
  std::int64_t samples() const { return static_cast<std::int64_t>(steps) * copies; }
};

struct EvaluationResult {
  std::string env_id;
  int episodes = 0;
  double runtime = 0;          // mean final runtime over episodes, seconds
  double initial_runtime = 0;  // the compiler-default decisions' runtime
  double speedup = 0;          // initial_runtime / runtime
  double best_runtime = 0;     // best valid final runtime over episodes
  double lower_bound = 0;
  double invalid_fraction = 0;
};

class Agent {
 public:
  // Called after each update; returning false stops training.
  using Callback = std::function<bool(const UpdateMetrics&)>;

  explicit Agent(AgentConfig config = {});
  ~Agent();
  Agent(Agent&&) noexcept;
  Agent& operator=(Agent&&) noexcept;

  const AgentConfig& config() const;
  bool has_policy() const;
  const PolicySpec& spec() const;  // InvalidArgument before setup()
  // Builds the policy for `spec`; a no-op when it already has that spec.
  void setup(const PolicySpec& spec);
  std::int64_t num_parameters() const;
  std::int64_t steps_trained() const;  // env steps over the agent's life
  std::string device() const;          // "cpu" or "cuda"

  // PPO on copies of the given envs (config().envs_per_graph per env), about
  // `total_steps` env steps in all (whole updates): set_envs(envs), then
  // collect() and update() until done.
  void train(const std::vector<const Env*>& envs, std::int64_t total_steps, const Callback& callback = {});

  // Imitation warm start on `envs` (see the contract): `steps` Adam steps, each
  // over config().graphs_per_update graphs (round robin; 0 = all). Solves and
  // keeps each graph's teacher (`teacher`, "" = config().teacher, which it then
  // becomes); an unknown or infeasible teacher leaves the agent unchanged.
  // Returns the last step's metrics.
  using ImitationCallback = std::function<bool(const ImitationMetrics&)>;
  ImitationMetrics imitate(const std::vector<const Env*>& envs, std::int64_t steps, const std::string& teacher = "",
                           const ImitationCallback& callback = {});
  // The kept teacher of `env`'s graph, or null.
  const Teacher* teacher(const Env& env) const;
  // Move-gain supervision (agents/move_gains.h): `steps` Adam steps toward the runtime gained
  // by moving one unit to another device, on `states` decisions per env (the best
  // heuristic's and perturbations of it), a softmax whose margin and temperature are
  // `temperature` (a share of the runtime). Trains the reading policy-guided search follows;
  // keeps no teacher.
  ImitationMetrics learn_moves(const std::vector<const Env*>& envs, std::int64_t steps, std::int64_t states,
                               double temperature, const ImitationCallback& callback = {});

  // The graphs collect() samples and update() learns on (checked against the
  // policy's spec; builds the policy on first use). `sampled`: indices of the
  // envs this agent steps (config().envs_per_graph copies each); the others
  // only lend their graph to update() (a learner samples none). `stream` != 0 reseeds the
  // sampling generator and the env resets from (seed, stream): rollout
  // workers sharing a graph then draw different samples.
  void set_envs(const std::vector<const Env*>& envs, const std::vector<int>& sampled, std::uint64_t stream = 0);
  // One rollout of each of the next config().graphs_per_update sampled graphs
  // (round robin), rollout_length steps per copy, with the current policy.
  std::vector<Rollout> collect();
  // One PPO update (config().epochs passes) on the rollouts; their graphs must be
  // the ones of set_envs(). Advances the weight version. metrics.step and
  // metrics.update count over the agent's life.
  UpdateMetrics update(const std::vector<Rollout>& rollouts);

  // The parameters, one contiguous float32 buffer in parameters() order. On
  // CPU a live view of the policy until the next build or load (after which the
  // pointer still holds the old values: it owns their storage); on CUDA a host
  // copy made by this call.
  std::shared_ptr<const float> weights();
  std::int64_t weights_version() const;
  // Copies `size` floats into the parameters and sets the version;
  // InvalidArgument when the size differs from num_parameters().
  void set_weights(const float* data, std::int64_t size, std::int64_t version);
  // One action per observation: per head, batch * num_nodes values (row-major (B, N)).
  std::vector<std::vector<std::int64_t>> act(const ObservationBatch& observation, bool deterministic = false);
  // Runs `episodes` episodes on a copy of `env` (greedy actions when deterministic).
  EvaluationResult evaluate(const Env& env, int episodes = 1, bool deterministic = true);

  // Search with the policy: the best of `samples` decisions on a copy of `env`
  // (the first greedy, the others sampled) and of the best decisions training
  // found on it (the kept teacher, simulated then), then, when
  // local_search_budget > 0, local search ("local-search" baseline) from the
  // best with that many calls. Never worse than the greedy decision; every
  // simulation it makes is counted. `start_budget`: the most calls a baseline
  // named as `start` may make to find it (outside `budget`, counted in start_calls).
  OptimizeResult optimize(const Env& env, std::int64_t budget, const std::string& start = "",
                          std::int64_t local_search_budget = 0, std::int64_t seed = -1,
                          std::int64_t start_budget = kStartBudget, Proposals proposals = Proposals::kLearned);

  // Checkpoints: magic, format version, config, spec, checksummed parameters.
  std::string to_bytes() const;
  // Replaces config, spec and parameters; InvalidArgument on a bad or corrupt
  // checkpoint (the agent is unchanged then). `device` ('cpu', 'cuda', 'auto'; empty: the
  // checkpoint's own) says where it loads: an agent trained on a GPU, used on a CPU.
  void from_bytes(const std::string& bytes, const std::string& device = "");

  // Held by the Python binding around every call, so one agent used from several threads
  // serializes (the calls above are not thread-safe: a load during a step frees what it
  // reads). Recursive: a training callback may call the agent again (save it, read weights,
  // act, evaluate); a call that would replace what training holds (from_bytes, set_envs,
  // collect, update, train, imitate) is refused there with InvalidArgument.
  std::recursive_mutex& guard() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  // The long call under way on this agent ("train", "imitate") or null: its callback may
  // call the agent, but not replace the model or the sampler it holds references into.
  const char* running_ = nullptr;
  void refuse_while_running(const char* call) const;
  template <typename F>
  auto running(const char* call, F&& f) -> decltype(f());
  // Runs f; when it throws after building the policy of an agent that had none, the agent
  // goes back to having none (a failed call changes nothing).
  template <typename F>
  auto unbuilt_on_error(F&& f) -> decltype(f());
  // Not in Impl: from_bytes replaces the Impl while the guard is held. A move takes the
  // Impl and leaves each agent its own guard.
  mutable std::recursive_mutex guard_;
};

// The algorithm ("ppo" | "go") a checkpoint holds; InvalidArgument when the
// bytes are not a readable goenv agent checkpoint header.
std::string checkpoint_algorithm(const std::string& bytes);

// One named array for checkpoint_from_arrays: dtype "F32", "I64" or "U8", a
// shape, and its row-major bytes (not owned).
struct NamedArray {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  const void* data = nullptr;
  std::size_t bytes = 0;
};
// A checkpoint in the current format from metadata strings and arrays (what the
// converter of older formats has read, never running them). It is checked by
// loading it: InvalidArgument names what does not fit.
std::string checkpoint_from_arrays(const std::map<std::string, std::string>& metadata,
                                   const std::vector<NamedArray>& arrays);

}  // namespace goenv::agents
