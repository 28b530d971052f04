#include "envs/env.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/fusion.h"
#include "core/slack.h"
#include "envs/placement_heuristics.h"

namespace goenv {

const char* head_name(Head head) {
  switch (head) {
    case Head::kPlacement: return "placement";
    case Head::kPriority: return "priority";
    case Head::kFusion: return "fusion";
  }
  return "?";
}

Env::Env(std::string id, const TaskSpec& task, GraphPtr graph, Cluster cluster, EnvConfig config)
    : id_(std::move(id)),
      task_(task.name),
      heads_(task.heads),
      graph_(std::move(graph)),
      config_(std::move(config)),
      simulator_(graph_, std::move(cluster)),
      colocation_(*graph_, simulator_.cluster()) {
  GOENV_CHECK(config_.decision_mode == "graph" || config_.decision_mode == "node", InvalidArgument,
              "decision_mode must be 'graph' or 'node', got '" << config_.decision_mode << "'");
  node_mode_ = config_.decision_mode == "node";
  GOENV_CHECK(config_.horizon >= 1, InvalidArgument, "horizon must be >= 1, got " << config_.horizon);
  GOENV_CHECK(config_.priority_levels >= 2 && config_.priority_levels <= kMaxLevels, InvalidArgument,
              "priority_levels must be in [2, " << kMaxLevels << "], got " << config_.priority_levels);
  GOENV_CHECK(config_.fusion_levels >= 2 && config_.fusion_levels <= kMaxLevels, InvalidArgument,
              "fusion_levels must be in [2, " << kMaxLevels << "], got " << config_.fusion_levels);
  GOENV_CHECK(std::isfinite(config_.invalid_penalty) && std::fabs(config_.invalid_penalty) <= kMaxPenalty,
              InvalidArgument, "invalid_penalty must be finite and within +-" << kMaxPenalty << ", got "
                                                                         << config_.invalid_penalty);
  GOENV_CHECK(config_.colocation == "follow" || config_.colocation == "strict", InvalidArgument,
              "colocation must be 'follow' or 'strict', got '" << config_.colocation << "'");
  follow_colocation_ = config_.colocation == "follow";
  GOENV_CHECK(graph_->num_nodes() > 0, InvalidArgument, "graph '" << graph_->name() << "' has no nodes");
  GOENV_CHECK(static_cast<std::int64_t>(graph_->num_nodes()) * action_mask_width() <= kMaxActionMaskEntries,
              InvalidArgument, "an observation would hold " << graph_->num_nodes() << " x " << action_mask_width()
                                   << " action-mask entries; at most " << kMaxActionMaskEntries
                                   << " (lower priority_levels / fusion_levels)");
  GOENV_CHECK(config_.observation_version >= kFirstObservationVersion &&
                  config_.observation_version <= kObservationVersion,
              InvalidArgument, "observation_version must be in [" << kFirstObservationVersion << ", "
                                   << kObservationVersion << "], got " << config_.observation_version);
  static_obs_ = goenv::static_observation(graph_);
  device_features_ = std::make_shared<const std::vector<float>>(
      config_.observation_version >= 2 ? goenv::device_features(this->cluster()) : std::vector<float>{});
  GOENV_CHECK(config_.max_fusion_size >= 1, InvalidArgument,
              "max_fusion_size must be >= 1, got " << config_.max_fusion_size);
  fuses_ = std::find(heads_.begin(), heads_.end(), Head::kFusion) != heads_.end();
  lower_bound_ = lower_bound(*graph_, this->cluster(), /*fusion=*/fuses_);
  if (fuses_) fused_.emplace(simulator_);  // shares the simulator's tables

  // The compiler's defaults: FIFO, the XLA-style fusion pass, and the task's placement.
  const int n = graph_->num_nodes();
  initial_priority_.assign(n, 0.0);
  if (!config_.initial_priority.empty()) {
    GOENV_CHECK(static_cast<int>(config_.initial_priority.size()) == n, InvalidArgument,
                "priority has " << config_.initial_priority.size() << " values, the graph has " << n << " nodes");
    for (int v = 0; v < n; ++v)
      GOENV_CHECK(std::isfinite(config_.initial_priority[v]) && std::fabs(config_.initial_priority[v]) <= kMaxPriority,
                  InvalidArgument, "priority of node " << v << " is " << config_.initial_priority[v]
                                                       << ": not finite, or beyond +-" << kMaxPriority);
    initial_priority_ = config_.initial_priority;
  }
  initial_fusion_ = fuses_ ? xla_fusion_priorities(*graph_) : std::vector<std::int32_t>(n, 0);
  const std::string rule = config_.placement.empty() ? task.default_placement : config_.placement;
  GOENV_CHECK(rule == "default" || rule == "single" || rule == "expert", InvalidArgument,
              "placement must be 'default', 'single' or 'expert', got '" << rule << "'");
  initial_placement_ = single_device_placement(*graph_);
  if (!config_.initial_placement.empty()) {
    GOENV_CHECK(static_cast<int>(config_.initial_placement.size()) == n, InvalidArgument,
                "placement has " << config_.initial_placement.size() << " values, the graph has " << n << " nodes");
    for (int v = 0; v < n; ++v)
      GOENV_CHECK(config_.initial_placement[v] >= 0 && config_.initial_placement[v] < this->cluster().num_devices(),
                  InvalidArgument, "placement of node " << v << " is device " << config_.initial_placement[v]
                                                        << ", the cluster has " << this->cluster().num_devices());
    initial_placement_ = config_.initial_placement;
    follow_colocation(initial_placement_);
  } else if (rule == "expert") {
    initial_placement_ = expert_placement(*graph_, this->cluster());
  } else if (rule == "default") {
    const SimulationResult& single = simulate(initial_placement_, initial_priority_, initial_fusion_);
    if (single.oom || single.invalid) initial_placement_ = expert_placement(*graph_, this->cluster());
  }
  topo_position_.resize(n);
  for (int i = 0; i < n; ++i) topo_position_[graph_->topological_order()[i]] = i;
}

const SimulationResult& Env::simulate(const std::vector<std::int32_t>& placement, const std::vector<double>& priority,
                                      const std::vector<std::int32_t>& fusion) {
  if (!fuses_) return simulator_.run({placement.data(), priority.data()});
  return fused_->run({placement.data(), priority.data()}, fusion.data(), config_.max_fusion_size);
}

// Graph mode: every group to its members' majority device. Node mode: the
// group of the node just decided, by the members decided in this pass.
int Env::follow_colocation(std::vector<std::int32_t>& placement) {
  if (!follow_colocation_ || colocation_.num_groups() == 0) return 0;
  if (!node_mode_ || !started_) return colocation_.follow(placement.data());
  const NodeId v = graph_->topological_order()[cursor_];
  const std::int32_t group = graph_->colocation()[v];
  if (group == kNone) return 0;
  return colocation_.follow_node(placement.data(), group, v, topo_position_.data(), cursor_);
}

namespace {

// Why a simulated decision ran out of memory: the first device over capacity.
std::string oom_reason(const SimulationResult& r, const Cluster& cluster) {
  for (int d = 0; d < cluster.num_devices(); ++d)
    if (r.peak_memory[d] > cluster.device(d).memory_bytes) {
      std::ostringstream os;
      os << "out of memory on device " << d << " (" << cluster.device(d).name << "): peak "
         << r.peak_memory[d] / 1e6 << " MB > capacity " << cluster.device(d).memory_bytes / 1e6 << " MB";
      return os.str();
    }
  return "out of memory";
}

}  // namespace

int Env::choices(Head head) const {
  switch (head) {
    case Head::kPlacement: return cluster().num_devices();
    case Head::kPriority: return config_.priority_levels;
    case Head::kFusion: return config_.fusion_levels;
  }
  return 0;
}

int Env::action_mask_width() const {
  int width = 0;
  for (Head h : heads_) width += choices(h);
  return width;
}

std::int64_t Env::total_steps() const {
  return node_mode_ ? std::int64_t{config_.horizon} * graph_->num_nodes() : config_.horizon;
}

int Env::device_state_dim() const {
  return observation_version() >= 2 ? static_cast<int>(device_state_names().size()) : 0;
}

DynamicObservation Env::reset(std::uint64_t /*seed: the env has no randomness yet*/, StepInfo* info,
                              const Solution* start) {
  if (start) {  // checked before anything changes
    SimulationResult result;
    const Solution checked = checked_start(*start, &result);
    start_episode(&checked, &result);
  } else {
    start_episode(nullptr, nullptr);
  }
  if (info) *info = info_;
  return observe();
}

void Env::reset_into(std::uint64_t /*seed: the env has no randomness yet*/, float* node_state,
                     std::int8_t* action_mask, float* globals, float* device_state, const Solution* start,
                     const SimulationResult* start_result) {
  start_episode(start && start_result ? start : nullptr, start && start_result ? start_result : nullptr);
  observe_into(node_state, action_mask, globals, device_state);
}

void Env::start_episode(const Solution* once, const SimulationResult* once_result) {
  if (!has_initial_result_) {  // the initial decisions never change: simulate them once
    initial_result_ = simulate(initial_placement_, initial_priority_, initial_fusion_);
    has_initial_result_ = true;
  }
  const Solution* from = once ? once : start_ ? &*start_ : nullptr;
  placement_ = from ? from->placement : initial_placement_;
  priority_ = from ? from->priority : initial_priority_;
  fusion_ = from ? from->fusion : initial_fusion_;
  last_ = once ? *once_result : start_ ? start_result_ : initial_result_;
  initial_runtime_ = initial_result_.runtime;
  runtime_ = last_.runtime;
  best_ = {placement_, priority_, fusion_};
  best_runtime_ = runtime_;
  fill_info(last_);
  refresh_schedule();
  steps_ = cursor_ = 0;
  last_reward_ = 0;
  started_ = true;
  done_ = false;
}

Solution Env::checked_start(Solution start, SimulationResult* result) {
  const int n = graph_->num_nodes();
  const auto decides = [this](Head h) { return std::find(heads_.begin(), heads_.end(), h) != heads_.end(); };
  const auto sized = [&](auto& values, const auto& initial, Head head) {
    // A head the task does not decide keeps the initial decisions; given other ones, they would
    // be dropped without a word (a placement for a scheduling env), so they are refused.
    GOENV_CHECK(values.empty() || decides(head) || values == initial, InvalidArgument,
                id_ << ": the task does not decide " << head_name(head) << ", so a start keeps the initial "
                    << head_name(head) << "; give only the task's heads (or the initial " << head_name(head) << ")");
    if (values.empty() || !decides(head)) {  // this head is not the agent's: the initial decisions
      values = initial;
      return;
    }
    GOENV_CHECK(static_cast<int>(values.size()) == n, InvalidArgument,
                id_ << ": start " << head_name(head) << " has " << values.size() << " values, the graph has " << n
                    << " nodes");
  };
  sized(start.placement, initial_placement_, Head::kPlacement);
  sized(start.priority, initial_priority_, Head::kPriority);
  sized(start.fusion, initial_fusion_, Head::kFusion);
  for (int v = 0; v < n; ++v) {
    GOENV_CHECK(start.placement[v] >= 0 && start.placement[v] < cluster().num_devices(), InvalidArgument,
                id_ << ": start placement of node " << v << " is device " << start.placement[v] << ", the cluster has "
                    << cluster().num_devices());
    const double p = start.priority[v];
    GOENV_CHECK(!decides(Head::kPriority) || (p >= 0 && p < config_.priority_levels && p == std::floor(p)),
                InvalidArgument,
                id_ << ": start priority of node " << v << " is " << p << ", not a level in [0, "
                    << config_.priority_levels << ") (goenv.baselines.quantize_priorities makes levels)");
    GOENV_CHECK(start.fusion[v] >= 0 && start.fusion[v] < config_.fusion_levels, InvalidArgument,
                id_ << ": start fusion of node " << v << " is " << start.fusion[v] << ", outside [0, "
                    << config_.fusion_levels << ")");
  }
  if (follow_colocation_ && colocation_.num_groups() > 0) colocation_.follow(start.placement.data());
  const SimulationResult& r = simulate(start.placement, start.priority, start.fusion);
  GOENV_CHECK(!r.oom && !r.invalid, InvalidArgument,
              id_ << ": the start is infeasible: " << (r.invalid ? r.invalid_reason : oom_reason(r, cluster())));
  *result = r;
  return start;
}

void Env::set_start(Solution start, std::string name) {
  SimulationResult result;
  Solution checked = checked_start(std::move(start), &result);
  start_ = std::move(checked);
  start_result_ = std::move(result);
  config_.start = std::move(name);
}

Solution Env::start() const {
  return start_ ? *start_ : initial_decisions();
}

void Env::refresh_schedule() {
  if (observation_version() >= 2) slack_ = schedule_slack(*graph_, cluster(), last_);
  slack_stale_ = false;
}

void Env::apply(const std::int64_t* const* action, std::size_t parts, std::vector<std::int32_t>& placement,
                std::vector<double>& priority, std::vector<std::int32_t>& fusion) const {
  GOENV_CHECK(parts == heads_.size(), InvalidAction,
              id_ << ": action has " << parts << " parts, the task decides " << heads_.size());
  check_action(action);  // every head given, every value in range, before anything is written
  // A node-mode action decides the cursor's node, a full one every node.
  const NodeId first = node_mode_ ? graph_->topological_order()[cursor_] : 0;
  const int count = node_mode_ ? 1 : graph_->num_nodes();
  for (std::size_t h = 0; h < heads_.size(); ++h)
    write_head(heads_[h], action[h], first, count, placement, priority, fusion);
}

// One head's values into its decisions: node first + i takes values[i]. A loop per head,
// no switch per node (a joint step writes three heads of N values).
void Env::write_head(Head head, const std::int64_t* values, NodeId first, int count,
                     std::vector<std::int32_t>& placement, std::vector<double>& priority,
                     std::vector<std::int32_t>& fusion) {
  auto write = [&](auto* out, auto convert) {
    for (int i = 0; i < count; ++i) out[first + i] = convert(values[i]);
  };
  const auto to_int = [](std::int64_t x) { return static_cast<std::int32_t>(x); };
  switch (head) {
    case Head::kPlacement: write(placement.data(), to_int); break;
    case Head::kPriority: write(priority.data(), [](std::int64_t x) { return static_cast<double>(x); }); break;
    case Head::kFusion: write(fusion.data(), to_int); break;
  }
}

StepResult Env::step(const std::vector<const std::int64_t*>& action) {
  const StepOutcome outcome = transition(action.data(), action.size());
  StepResult out;
  out.reward = outcome.reward;
  out.terminated = outcome.terminated;
  out.truncated = outcome.truncated;
  out.info = info_;
  out.observation = observe();
  return out;
}

Env::StepOutcome Env::advance(const std::vector<const std::int64_t*>& action) {
  return transition(action.data(), action.size(), false);
}

DynamicObservation Env::observation() {
  if (slack_stale_) refresh_schedule();
  return observe();
}

Env::StepOutcome Env::step_into(const std::int64_t* const* action, float* node_state, std::int8_t* action_mask,
                                float* globals, float* device_state) {
  const StepOutcome outcome = transition(action, heads_.size());
  observe_into(node_state, action_mask, globals, device_state);
  return outcome;
}

void Env::check_action(const std::int64_t* const* action) const {
  const int count = node_mode_ ? 1 : graph_->num_nodes();
  for (std::size_t h = 0; h < heads_.size(); ++h) {
    const std::int64_t* values = action[h];
    GOENV_CHECK(values != nullptr, InvalidAction, id_ << ": missing '" << head_name(heads_[h]) << "' action");
    const int limit = choices(heads_[h]);
    // One branch-free pass (vectorized: as unsigned, a negative value is out of range too),
    // then the first bad value for the message.
    const auto unsigned_limit = static_cast<std::uint64_t>(limit);
    bool bad = false;
    for (int i = 0; i < count; ++i) bad |= static_cast<std::uint64_t>(values[i]) >= unsigned_limit;
    if (!bad) continue;
    for (int i = 0; i < count; ++i)
      if (values[i] < 0 || values[i] >= limit) {
        const NodeId v = node_mode_ ? graph_->topological_order()[cursor_] : i;
        GOENV_FAIL(InvalidAction, id_ << ": " << head_name(heads_[h]) << " action for node " << v << " is "
                                      << values[i] << ", outside [0, " << limit << ")");
      }
  }
}

Env::StepOutcome Env::transition(const std::int64_t* const* action, std::size_t parts, bool schedule) {
  GOENV_CHECK(started_, ResetNeeded, id_ << ": step() called before reset()");
  GOENV_CHECK(!done_, ResetNeeded, id_ << ": step() called after the episode ended; call reset()");
  next_placement_ = placement_;  // copy-assignment reuses the capacity: no allocation after the first step
  next_fusion_ = fusion_;
  next_priority_ = priority_;
  apply(action, parts, next_placement_, next_priority_, next_fusion_);  // throws before any state changes
  const int moved = std::find(heads_.begin(), heads_.end(), Head::kPlacement) != heads_.end()
                        ? follow_colocation(next_placement_)
                        : 0;

  const SimulationResult& r = simulate(next_placement_, next_priority_, next_fusion_);
  StepOutcome out;
  if (r.oom || r.invalid) {  // rejected: info describes the decisions still in force, plus why
    out.reward = config_.invalid_penalty;
    fill_info(last_);  // r is the simulator's own result: filling info from last_ leaves it intact
    info_.invalid = true;
    info_.oom = r.oom;
    info_.invalid_reason = r.invalid ? r.invalid_reason : oom_reason(r, cluster());
    info_.rejected_runtime = r.runtime;
  } else {
    fill_info(r);
    out.reward = (runtime_ - r.runtime) / runtime_scale();
    runtime_ = r.runtime;
    placement_.swap(next_placement_);
    priority_.swap(next_priority_);
    fusion_.swap(next_fusion_);
    last_ = r;
    if (schedule)
      refresh_schedule();
    else
      slack_stale_ = true;
    if (runtime_ < best_runtime_) {
      best_ = {placement_, priority_, fusion_};
      best_runtime_ = runtime_;
    }
  }
  info_.best_runtime = best_runtime_;
  info_.colocation_moved = moved;
  last_reward_ = out.reward;
  ++steps_;
  if (node_mode_) {
    cursor_ = (cursor_ + 1) % graph_->num_nodes();
    done_ = steps_ >= total_steps();
  } else {
    done_ = steps_ >= config_.horizon;
  }
  out.terminated = done_;
  out.truncated = false;
  return out;
}

const SimulationResult& Env::evaluate(std::vector<std::int32_t> placement, std::vector<double> priority,
                                      std::vector<std::int32_t> fusion) {
  const auto n = static_cast<std::size_t>(graph_->num_nodes());
  if (placement.empty()) placement = started_ ? placement_ : initial_placement_;
  if (priority.empty()) priority = started_ ? priority_ : initial_priority_;
  if (fusion.empty()) fusion = started_ ? fusion_ : initial_fusion_;
  GOENV_CHECK(placement.size() == n && priority.size() == n && fusion.size() == n, InvalidArgument,
              "evaluate needs " << n << " values per decision");
  return simulate(placement, priority, fusion);
}

void Env::fill_info(const SimulationResult& r) {
  info_.runtime = r.runtime;
  info_.initial_runtime = initial_runtime_ > 0 ? initial_runtime_ : r.runtime;
  info_.speedup = r.runtime > 0 ? info_.initial_runtime / r.runtime : 1.0;
  info_.lower_bound = lower_bound_.value;
  info_.peak_memory = r.peak_memory;
  info_.bytes_moved = r.bytes_moved;
  info_.oom = r.oom;
  info_.invalid = r.invalid;
  info_.invalid_reason = r.invalid_reason;
  info_.rejected_runtime = std::numeric_limits<double>::quiet_NaN();
  info_.colocation_moved = 0;
  info_.best_runtime = best_runtime_;
}

}  // namespace goenv
