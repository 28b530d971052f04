// The environment interface shared by every task (docs/environments.md).
//
// One generic Env serves placement, scheduling, fusion and joint: a task is the
// list of decision heads it controls (placement / priority / fusion), registered
// by the task's own file (envs/placement.cc, ...). The env owns its mutable
// decisions; the graph is shared read-only between envs.
//
// Contract:
//  * reset(seed) returns the observation of the start decisions and simulates
//    them: the compiler's defaults unless a start was set (set_start, or one
//    reset's own). `initial_runtime` is always the defaults' runtime: speedup
//    and the reward's scale compare with it whatever the start.
//  * The episode keeps the best adopted decisions (best(), info.best_runtime):
//    an improvement episode (horizon > 1) can wander and still report its best.
//  * step(action) in decision_mode "graph" applies a whole-graph decision (one
//    value per node per head); in "node" mode it decides one node (topological
//    order) per step, Placeto-style. Each step simulates the graph.
//  * reward = (previous runtime - runtime) / initial runtime. An invalid
//    decision (OOM, split colocation group, forbidden device kind) earns
//    `invalid_penalty`, is reported in info, and is not adopted.
//  * terminated after `horizon` whole-graph decisions (node mode: horizon passes
//    over all nodes); truncated is always false (no time limit is imposed here).
//  * Bad input throws InvalidAction; step before reset or after the end throws
//    ResetNeeded. The env is never left half-updated by a throw.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/fusion.h"
#include "core/graph.h"
#include "core/lower_bound.h"
#include "core/simulator.h"
#include "datasets/registry.h"
#include "envs/colocation.h"
#include "envs/observation.h"
#include "envs/threads.h"

namespace goenv {

enum class Head { kPlacement = 0, kPriority = 1, kFusion = 2 };

// Option limits (docs/limits.md): they bound an observation's size and keep
// every number in it finite.
inline constexpr int kMaxLevels = 4096;                           // priority_levels, fusion_levels
inline constexpr std::int64_t kMaxActionMaskEntries = std::int64_t{1} << 30;  // N * A per observation
inline constexpr double kMaxPenalty = 1e6;                        // |invalid_penalty|
inline constexpr double kMaxPriority = 1e15;                      // |explicit priority|
// Rewards and runtime ratios divide by max(initial runtime, this): a graph whose
// default decisions take no time (every cost zero) still gets finite numbers.
inline constexpr double kMinRuntimeScale = 1e-9;  // seconds
const char* head_name(Head head);

// One value per node for every decision head.
struct Solution {
  std::vector<std::int32_t> placement;
  std::vector<double> priority;
  std::vector<std::int32_t> fusion;
};

// What goenv.make's options set: envs/spec.cc documents each (the option "placement" sets
// `placement` or `initial_placement`, "priority" sets `initial_priority`).
struct EnvConfig {
  GraphParams graph_params;  // builder parameters (batch_size, ...): every keyword that is not an option
  std::string cluster;
  int horizon = 1;
  std::string decision_mode = "graph";
  double invalid_penalty = -1.0;
  int priority_levels = 16;
  int fusion_levels = 4;
  int max_fusion_size = 16;
  std::string colocation = "follow";  // envs/colocation.h
  std::string placement;
  std::vector<std::int32_t> initial_placement;
  std::vector<double> initial_priority;
  int observation_version = kObservationVersion;  // envs/observation.h
  // A baseline's name is resolved by make_env / make_env_on_graph (envs/start.h), which call set_start.
  std::string start;
};

// What a task is: the decisions it hands the agent and where it starts from.
struct TaskSpec {
  std::string name;                 // "placement"
  std::string description;          // one line for tables
  std::vector<Head> heads;          // decisions the agent makes, in action order
  // Initial placement (kept fixed when the task has no placement head):
  // "default" = everything on device 0 if it fits, else the expert split.
  std::string default_placement = "default";
};

// What a step reports. runtime, speedup, peak_memory and bytes_moved always
// describe the decisions in force after the step. When the step's decision was
// rejected, `invalid` is set (OOM included, with `oom` too), `invalid_reason`
// says why and `rejected_runtime` is that decision's own simulated runtime
// (NaN when nothing was rejected).
struct StepInfo {
  double runtime = 0, initial_runtime = 0, speedup = 1, lower_bound = 0;
  std::vector<double> peak_memory;  // bytes per device
  double bytes_moved = 0;
  bool oom = false, invalid = false;
  std::string invalid_reason;
  double rejected_runtime = std::numeric_limits<double>::quiet_NaN();
  int colocation_moved = 0;  // nodes the "follow" rule moved to keep their group together
  double best_runtime = 0;   // the best adopted decisions of the episode (Env::best())
};

struct StepResult {
  DynamicObservation observation;
  double reward = 0;
  bool terminated = false, truncated = false;
  StepInfo info;
};

class Env {
 public:
  Env(std::string id, const TaskSpec& task, GraphPtr graph, Cluster cluster, EnvConfig config);

  const std::string& id() const { return id_; }
  const std::string& task() const { return task_; }
  const std::vector<Head>& heads() const { return heads_; }
  int choices(Head head) const;  // values a head takes per node
  bool node_mode() const { return node_mode_; }
  const EnvConfig& config() const { return config_; }
  const Graph& graph() const { return *graph_; }
  GraphPtr graph_ptr() const { return graph_; }
  const Cluster& cluster() const { return simulator_.cluster(); }
  // The lower bound of this task's decisions (with fusion where the task decides it).
  const LowerBound& bound() const { return lower_bound_; }
  const StaticObservation& static_observation() const { return *static_obs_; }
  std::shared_ptr<const StaticObservation> static_observation_ptr() const { return static_obs_; }
  int action_mask_width() const;  // A: sum of the heads' choices (<= 256 + 2 * kMaxLevels)
  int observation_version() const { return config_.observation_version; }
  int node_state_dim() const { return goenv::node_state_dim(cluster().num_devices(), observation_version()); }
  int device_state_dim() const;  // Sd; 0 in version 1
  // (D, Fd) static per-device features (built once; empty in version 1).
  const std::vector<float>& device_features() const { return *device_features_; }
  std::shared_ptr<const std::vector<float>> device_features_ptr() const { return device_features_; }
  // Steps in an episode: horizon, or horizon * N in node mode (int64: no overflow).
  std::int64_t total_steps() const;

  // `start`: this episode's start instead of the env's (see set_start).
  DynamicObservation reset(std::uint64_t seed, StepInfo* info = nullptr, const Solution* start = nullptr);
  // Where later episodes start: decisions for the task's heads (an empty vector
  // = that head's initial decisions; heads the task does not decide keep the
  // initial ones). Checked (sizes, ranges, priority levels, colocation, memory):
  // an infeasible start throws InvalidArgument naming why and changes nothing.
  // Colocation "follow" repairs a split group as a step would. `name` becomes config().start:
  // the start's name ("default", a baseline's), or empty for decisions given as such, so that
  // the config never names a start that was replaced.
  void set_start(Solution start, std::string name = {});
  // The start decisions in force for the next reset (the initial ones when none was set).
  Solution start() const;
  bool has_start() const { return start_.has_value(); }
  Solution initial_decisions() const { return {initial_placement_, initial_priority_, initial_fusion_}; }
  // One pointer per head, in heads() order: N values each in graph mode, 1 in node mode.
  StepResult step(const std::vector<const std::int64_t*>& action);

  // Allocation-free variants for VectorEnv: the same transitions as reset() and
  // step(), writing the dynamic observation into caller buffers instead of
  // returning it (info: last_info()). Buffers hold N * node_state_dim floats,
  // N * action_mask_width() int8 and global_names().size() floats; every
  // element is written. `action` has one pointer per head, as in step().
  struct StepOutcome {
    double reward = 0;
    bool terminated = false, truncated = false;
  };
  // step() without its observation: the same transition (decisions, reward, counters;
  // info in last_info()). A search that simulates many decisions and keeps few asks
  // for the observation of those it keeps (observation()); the schedule's slack, a
  // third of a placement step's work, is derived only then.
  StepOutcome advance(const std::vector<const std::int64_t*>& action);
  // What step() would have returned as its observation, now.
  DynamicObservation observation();
  // device_state (D * device_state_dim() floats) may be null: not written. `start`: this
  // episode's start, as checked_start() made it with its simulation `start_result`.
  void reset_into(std::uint64_t seed, float* node_state, std::int8_t* action_mask, float* globals,
                  float* device_state = nullptr, const Solution* start = nullptr,
                  const SimulationResult* start_result = nullptr);
  // A start for one reset, checked as set_start checks it (throws InvalidArgument naming the
  // problem, changes nothing); `result` gets its simulation.
  Solution checked_start(Solution start, SimulationResult* result);
  StepOutcome step_into(const std::int64_t* const* action, float* node_state, std::int8_t* action_mask,
                        float* globals, float* device_state = nullptr);
  void observe_into(float* node_state, std::int8_t* action_mask, float* globals, float* device_state = nullptr) const;
  // Throws InvalidAction exactly when step() would reject `action` (range), without stepping.
  void check_action(const std::int64_t* const* action) const;
  bool needs_reset() const { return !started_ || done_; }
  bool started() const { return started_; }
  std::int64_t steps() const { return steps_; }  // in this episode

  // Current decisions and the last simulation (for rendering and baselines).
  const std::vector<std::int32_t>& placement() const { return placement_; }
  const std::vector<double>& priority() const { return priority_; }
  const std::vector<std::int32_t>& fusion() const { return fusion_; }
  // The best adopted decisions of the episode (the start's until a step improves on it).
  const Solution& best() const { return best_; }
  double best_runtime() const { return best_runtime_; }
  const SimulationResult& last_result() const { return last_; }
  const StepInfo& last_info() const { return info_; }
  double initial_runtime() const { return initial_runtime_; }
  // Simulates decisions without touching the episode (baselines, search).
  // Empty vectors mean the current decisions.
  const SimulationResult& evaluate(std::vector<std::int32_t> placement, std::vector<double> priority = {},
                                   std::vector<std::int32_t> fusion = {});
  bool fuses() const { return fuses_; }

  // Snapshot of the episode (decisions, counters, last info) as cereal bytes;
  // set_state() restores it on an env of the same task, graph and cluster, so
  // the future is reproduced exactly (search, forking, worker processes).
  std::string get_state() const;
  void set_state(const std::string& state);

  // Not thread-safe itself: callers that share one env between threads (the
  // Python bindings) hold guard() around every call that reads or changes the
  // episode. A copy of the env gets its own guard.
  std::mutex& guard() const { return guard_.mutex(); }

 private:
  void apply(const std::int64_t* const* action, std::size_t parts, std::vector<std::int32_t>& placement,
             std::vector<double>& priority, std::vector<std::int32_t>& fusion) const;
  static void write_head(Head head, const std::int64_t* values, NodeId first, int count,
                         std::vector<std::int32_t>& placement, std::vector<double>& priority,
                         std::vector<std::int32_t>& fusion);
  // `schedule`: derive what the observation needs from an adopted simulation (slack) now,
  // else mark it stale (advance()).
  StepOutcome transition(const std::int64_t* const* action, std::size_t parts, bool schedule = true);
  // From `once` (checked, with its simulation), else the env's start, else the initial decisions.
  void start_episode(const Solution* once, const SimulationResult* once_result);
  void observe_devices(float* device_state) const;
  void refresh_schedule();  // after last_ changes: what the observation derives from it (slack)
  const SimulationResult& simulate(const std::vector<std::int32_t>& placement, const std::vector<double>& priority,
                                   const std::vector<std::int32_t>& fusion);
  DynamicObservation observe() const;
  void fill_info(const SimulationResult& r);
  int follow_colocation(std::vector<std::int32_t>& placement);

  std::string id_, task_;
  std::vector<Head> heads_;
  GraphPtr graph_;
  EnvConfig config_;
  bool node_mode_ = false;
  bool fuses_ = false;  // the task decides fusion: kernels come from the fusion pass
  Simulator simulator_;
  ColocationRule colocation_;
  bool follow_colocation_ = true;  // config colocation == "follow"
  std::optional<FusedSimulator> fused_;  // tasks that decide fusion: the pass and its kernel simulation
  std::shared_ptr<const StaticObservation> static_obs_;
  LowerBound lower_bound_;
  // Episode state.
  std::vector<std::int32_t> placement_, fusion_;
  std::vector<double> priority_;
  std::vector<std::int32_t> initial_placement_, initial_fusion_;
  std::vector<double> initial_priority_;
  std::optional<Solution> start_;   // set_start(); none = the initial decisions
  SimulationResult start_result_;   // start_'s simulation (deterministic, so simulated once)
  Solution best_;
  double best_runtime_ = 0;
  std::shared_ptr<const std::vector<float>> device_features_;
  std::vector<double> slack_;       // seconds per node, of last_ (version 2)
  bool slack_stale_ = false;        // last_ changed by advance(): slack_ is an older schedule's
  SimulationResult last_;
  StepInfo info_;
  double initial_runtime_ = 0, runtime_ = 0, last_reward_ = 0;
  double runtime_scale() const { return std::max(initial_runtime_, kMinRuntimeScale); }
  std::int64_t steps_ = 0;
  int cursor_ = 0;  // cursor: node-mode position in topological order
  bool started_ = false, done_ = false;
  // Reused across steps so stepping does not allocate: the candidate decisions,
  // the initial decisions' simulation (deterministic, so simulated once), each
  // node's position in topological order, and node-mode colocation scratch.
  std::vector<std::int32_t> next_placement_, next_fusion_;
  std::vector<double> next_priority_;
  SimulationResult initial_result_;
  bool has_initial_result_ = false;
  std::vector<std::int32_t> topo_position_;
  mutable std::vector<std::int32_t> group_device_;
  Guard guard_;
};

}  // namespace goenv
