// Rollouts (docs/distributed.md; RLlib's EnvRunner): the sampler steps copies of each
// sampled graph's env through one envs::VectorEnv per graph, acting with the
// model's policy, and returns plain-array rollouts tagged with the weight
// version. It has no stepping loop, thread pool or per-episode seed sequence of
// its own: the vector env steps the copies in parallel and resets finished
// ones with its seed sequence. Also single episodes on one env (evaluate,
// optimize, DAgger).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/model.h"
#include "envs/vector_env.h"

namespace goenv::agents {

// One graph the agent learns on: its static observation as tensors on the device.
struct GraphEntry {
  std::string id;
  int num_nodes = 0;
  GraphTensors graph;
  std::uint64_t key = 0;  // env_key(): finds the graph's teacher
};

class Sampler {
 public:
  // The graphs collect() samples and update() learns on (see Agent::set_envs):
  // checks them against the model (building its policy on first use), makes
  // config.envs_per_graph copies of each sampled one and resets them.
  void set_envs(Model& model, const std::vector<const Env*>& prototypes, const std::vector<int>& sampled,
                std::uint64_t stream);
  // One rollout of each of the next graphs_per_update sampled graphs (round robin).
  std::vector<Rollout> collect(Model& model);

  const std::vector<GraphEntry>& graphs() const { return graphs_; }
  std::uint64_t stream() const { return stream_; }
  std::size_t next_slot() const { return next_slot_; }
  void set_next_slot(std::size_t next) { next_slot_ = next; }

 private:
  // One sampled graph: its env copies, stepped together. The vector env's own
  // buffers hold the copies' current observations and last step's outcomes.
  struct Slot {
    int graph = 0;  // index into graphs_
    std::unique_ptr<VectorEnv> envs;
    double best_runtime = std::numeric_limits<double>::infinity(), initial_runtime = 0;
  };
  Rollout collect_slot(Model& model, Slot& slot);
  void collect_step(Model& model, Slot& slot, Rollout& out);
  void bootstrap(Model& model, Slot& slot, Rollout& out);

  std::vector<GraphEntry> graphs_;
  std::vector<Slot> slots_;
  std::uint64_t stream_ = 0;
  std::size_t next_slot_ = 0;
};

// A fresh env on the prototype's graph, cluster, config and start, at the
// observation version the policy reads (kPolicyObservationVersion).
std::unique_ptr<Env> copy_env(const Env& prototype);
// Steps `env` with per-head (N,) actions.
StepResult step_actions(Env& env, const std::vector<std::vector<std::int64_t>>& actions);

// The reset seed of copy `copy` of graph `graph` (single episodes: kEvaluation
// for evaluation and search, kDagger for imitation's rollouts). Vector envs and
// single episodes derive each later episode's seed from it (episode_seed).
// Stream 0 keeps a single-process run's seeds; rollout workers use their own.
inline constexpr std::uint64_t kEvaluation = ~std::uint64_t{0}, kDagger = ~std::uint64_t{1};
std::uint64_t reset_seed(const AgentConfig& config, std::uint64_t stream, std::uint64_t graph, std::uint64_t copy);

// The policy's logits for the last observation forwarded: episodes that start
// from the same observation (one-shot samples of one graph) forward it once.
struct ForwardCache {
  DynamicObservation observation;
  std::vector<torch::Tensor> logits;
};

// Runs one episode on `env` (greedy or sampled); returns the last step, with
// its per-node actions in `decided`, and adds the steps to `calls`. `visited`,
// when given, receives every observation acted on (all but the terminal one).
// With `cache`, an observation equal to the cached one reuses its logits.
StepResult run_episode(Model& model, Env& env, const GraphTensors& graph, std::uint64_t seed, bool deterministic,
                       std::vector<std::vector<std::int64_t>>& decided, std::int64_t& calls,
                       std::vector<DynamicObservation>* visited = nullptr, ForwardCache* cache = nullptr);

}  // namespace goenv::agents
