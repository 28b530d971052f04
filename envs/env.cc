#include "envs/env.h"

#include <algorithm>
#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <cmath>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "core/fusion.h"
#include "core/serialization.h"
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

// Per device: how busy the decisions in force keep it, when it finishes, its memory.
void Env::observe_devices(float* device_state) const {
  const int n = graph_->num_nodes(), num_devices = cluster().num_devices(), sd = device_state_dim();
  const double runtime = last_.runtime > 0 ? last_.runtime : 1.0;
  std::vector<double> finish(num_devices, 0.0);
  std::vector<int> nodes(num_devices, 0);
  for (NodeId v = 0; v < n; ++v) {
    const int d = placement_[v];
    ++nodes[d];
    if (!last_.finish.empty()) finish[d] = std::max(finish[d], last_.finish[v]);
  }
  for (int d = 0; d < num_devices; ++d) {
    const double busy = last_.device_busy.empty() ? 0.0 : std::min(1.0, last_.device_busy[d] / runtime);
    const double capacity = cluster().device(d).memory_bytes, peak = last_.peak_memory[d];
    const float values[] = {static_cast<float>(busy),
                            static_cast<float>(1.0 - busy),
                            static_cast<float>(finish[d] / runtime),
                            static_cast<float>(std::log1p(std::max(0.0, peak)) / 35.0),
                            static_cast<float>(peak / capacity),
                            static_cast<float>(nodes[d]) / static_cast<float>(n),
                            peak > capacity ? 1.f : 0.f};
    static_assert(sizeof(values) / sizeof(values[0]) == 7, "keep in step with device_state_names()");
    std::copy(std::begin(values), std::end(values), device_state + static_cast<std::size_t>(d) * sd);
  }
}

DynamicObservation Env::observe() const {
  const int n = graph_->num_nodes();
  DynamicObservation obs;
  obs.node_state.resize(static_cast<std::size_t>(n) * node_state_dim());
  obs.action_mask.resize(static_cast<std::size_t>(n) * action_mask_width());
  obs.globals.resize(global_names().size());
  obs.device_state.resize(static_cast<std::size_t>(cluster().num_devices()) * device_state_dim());
  observe_into(obs.node_state.data(), obs.action_mask.data(), obs.globals.data(), obs.device_state.data());
  return obs;
}

void Env::observe_into(float* node_state, std::int8_t* action_mask, float* globals, float* device_state) const {
  const Graph& g = *graph_;
  const int n = g.num_nodes(), num_devices = cluster().num_devices();
  const int s = node_state_dim(), a = action_mask_width();
  const bool v2 = observation_version() >= 2;
  // After advance() without observation(): the slack of the schedule in force, derived here.
  std::vector<double> derived;
  if (v2 && slack_stale_) derived = schedule_slack(g, cluster(), last_);
  const std::vector<double>& slack = v2 && slack_stale_ ? derived : slack_;
  std::fill(node_state, node_state + static_cast<std::size_t>(n) * s, 0.f);
  std::fill(action_mask, action_mask + static_cast<std::size_t>(n) * a, std::int8_t{1});
  const double runtime = last_.runtime > 0 ? last_.runtime : 1.0;
  const NodeId current = node_mode_ ? g.topological_order()[cursor_] : kNone;
  // Node mode: the nodes before the cursor in topological order are decided in this pass.
  auto decided = [&](NodeId v) { return node_mode_ && topo_position_[v] < cursor_; };
  for (NodeId v = 0; v < n; ++v) {
    float* row = &node_state[static_cast<std::size_t>(v) * s];
    row[placement_[v]] = 1.f;
    float* x = row + num_devices;
    x[0] = static_cast<float>(priority_[v] / (config_.priority_levels - 1));
    x[1] = static_cast<float>(fusion_[v]) / static_cast<float>(config_.fusion_levels - 1);
    x[2] = static_cast<float>(last_.start[v] / runtime);
    x[3] = static_cast<float>(last_.finish[v] / runtime);
    x[4] = last_.critical[v];
    x[5] = decided(v) ? 1.f : 0.f;
    x[6] = v == current ? 1.f : 0.f;
    if (v2) x[7] = slack.empty() ? 0.f : static_cast<float>(slack[v] / runtime);
  }
  if (v2 && device_state) observe_devices(device_state);
  // Placement choices: allowed device kinds; in node mode also a colocation
  // group's device once one of its members was decided in this pass.
  int offset = 0;
  for (Head h : heads_) {
    if (h == Head::kPlacement) {
      group_device_.assign(node_mode_ ? g.num_colocation_groups() : 0, -1);
      if (node_mode_)
        for (NodeId v = 0; v < n; ++v)
          if (decided(v) && g.colocation()[v] != kNone) group_device_[g.colocation()[v]] = placement_[v];
      for (NodeId v = 0; v < n; ++v) {
        std::int8_t* mask = &action_mask[static_cast<std::size_t>(v) * a + offset];
        const auto c = node_mode_ ? g.colocation()[v] : kNone;
        for (int d = 0; d < num_devices; ++d)
          mask[d] = g.allows(v, cluster().device(d).kind) &&
                    (c == kNone || group_device_[c] == -1 || group_device_[c] == d);
      }
    }
    offset += choices(h);
  }
  const double capacity_fraction = [&] {
    double worst = 0;
    for (int d = 0; d < num_devices; ++d)
      worst = std::max(worst, last_.peak_memory[d] / cluster().device(d).memory_bytes);
    return worst;
  }();
  const double simulated = std::isnan(info_.rejected_runtime) ? info_.runtime : info_.rejected_runtime;
  const float values[] = {static_cast<float>(simulated / runtime_scale()),
                          static_cast<float>(runtime_ / runtime_scale()),
                          static_cast<float>(static_cast<double>(steps_) / static_cast<double>(total_steps())),
                          static_cast<float>(last_reward_),
                          info_.oom ? 1.f : 0.f,
                          info_.invalid ? 1.f : 0.f,
                          static_cast<float>(capacity_fraction),
                          static_cast<float>(std::log10(std::max(initial_runtime_, 1e-9)) / 10.0)};
  static_assert(sizeof(values) / sizeof(values[0]) == 8, "keep in step with global_names()");
  std::copy(std::begin(values), std::end(values), globals);
}

}  // namespace goenv

namespace goenv {

namespace {

// 2: the step counter is int64, the rejected decision's runtime and the nodes colocation moved.
// 3: the episode's best decisions (a version-2 state is read with best = the decisions in force).
// 4: a closing checksum (older states are read without one).
constexpr std::uint32_t kEnvStateVersion = 4;
constexpr std::uint32_t kOldestEnvStateVersion = 2;
constexpr std::uint32_t kFirstChecksummedEnvState = 4;

// Everything that, with the env's (task, graph, cluster, config), fixes its future.
struct EnvState {
  std::uint32_t version = kEnvStateVersion;
  std::string task;
  std::int64_t num_nodes = 0, num_edges = 0, num_devices = 0;
  std::uint64_t graph_checksum = 0;
  std::vector<std::int32_t> placement, fusion;
  std::vector<double> priority;
  double initial_runtime = 0, runtime = 0, last_reward = 0;
  std::int64_t steps = 0;
  std::int32_t cursor = 0;
  bool started = false, done = false;
  double info_runtime = 0;
  std::vector<double> info_peak_memory;
  double info_bytes_moved = 0;
  bool info_oom = false, info_invalid = false;
  std::string info_invalid_reason;
  double info_rejected_runtime = std::numeric_limits<double>::quiet_NaN();  // as StepInfo's: NaN = none
  std::int32_t info_colocation_moved = 0;
  std::vector<std::int32_t> best_placement, best_fusion;  // version 3
  std::vector<double> best_priority;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(version, task, num_nodes, num_edges, num_devices, graph_checksum, placement, fusion, priority,
       initial_runtime, runtime, last_reward, steps, cursor, started, done, info_runtime, info_peak_memory,
       info_bytes_moved, info_oom, info_invalid, info_invalid_reason, info_rejected_runtime, info_colocation_moved);
    if (version >= 3) ar(best_placement, best_fusion, best_priority);
  }
};

std::string encode(const EnvState& s) {
  std::ostringstream os;
  {
    cereal::PortableBinaryOutputArchive ar(os);
    ar(s);
  }
  return s.version >= kFirstChecksummedEnvState ? append_checksum(os.str()) : os.str();
}

// Cheap identity of a graph's structure and costs (not its names).
std::uint64_t graph_checksum(const Graph& g) {
  std::string bytes;
  auto add = [&bytes](const auto& column) {
    bytes.append(reinterpret_cast<const char*>(column.data()), column.size() * sizeof(column[0]));
  };
  add(g.edge_src());
  add(g.edge_dst());
  add(g.flops());
  add(g.output_bytes());
  return fnv1a64(bytes);
}

// A value that observations divide and cast to float32 stays finite there.
bool float_finite(double x) { return std::isfinite(x) && std::isfinite(static_cast<float>(x)); }

// Bitwise equality, for what set_state recomputes: -0.0 == 0.0 and NaN != NaN, but an accepted
// state must round-trip to the same bytes.
bool same_bits(const double* a, const double* b, std::size_t n) { return std::memcmp(a, b, n * sizeof(double)) == 0; }

}  // namespace

std::string Env::get_state() const {
  EnvState s;
  s.task = task_;
  s.num_nodes = graph_->num_nodes();
  s.num_edges = graph_->num_edges();
  s.num_devices = cluster().num_devices();
  s.graph_checksum = graph_checksum(*graph_);
  if (!started_) return encode(s);  // never reset: only the identity (set_state expects exactly this)
  s.placement = placement_;
  s.fusion = fusion_;
  s.priority = priority_;
  s.initial_runtime = initial_runtime_;
  s.runtime = runtime_;
  s.last_reward = last_reward_;
  s.steps = steps_;
  s.cursor = cursor_;
  s.started = started_;
  s.done = done_;
  s.info_runtime = info_.runtime;
  s.info_peak_memory = info_.peak_memory;
  s.info_bytes_moved = info_.bytes_moved;
  s.info_oom = info_.oom;
  s.info_invalid = info_.invalid;
  s.info_invalid_reason = info_.invalid_reason;
  s.info_rejected_runtime = info_.rejected_runtime;
  s.info_colocation_moved = info_.colocation_moved;
  s.best_placement = best_.placement;
  s.best_fusion = best_.fusion;
  s.best_priority = best_.priority;
  return encode(s);
}

// Every field is checked (the first bad one is named): a snapshot from a bit
// flip, a truncated pickle or another env is refused, never half-applied. What
// the env can recompute (both runtimes; the info of the decisions in force) must
// match its own simulation exactly; what it cannot (a rejected decision's runtime
// and reason, the last reward) must be consistent with how a step produces it.
void Env::set_state(const std::string& bytes) {
  EnvState s;
  try {
    const std::string what = id_ + ": cannot decode env state";
    BoundedBinaryInput(bytes, what)(s.version);  // the version says whether a checksum closes the state
    GOENV_CHECK(s.version >= kOldestEnvStateVersion && s.version <= kEnvStateVersion, InvalidArgument,
                id_ << ": env state version " << s.version << ", this goenv reads versions " << kOldestEnvStateVersion
                    << " to " << kEnvStateVersion);
    const std::string_view record =
        s.version >= kFirstChecksummedEnvState ? without_checksum(bytes, what) : std::string_view(bytes);
    BoundedBinaryInput ar(record, what);
    ar(s);
    ar.finish();
  } catch (const InvalidGraph& e) {
    throw InvalidArgument(e.what());
  }
  const auto bad = [this](const char* field, const std::string& why) {
    GOENV_FAIL(InvalidArgument, id_ << ": env state field '" << field << "' " << why);
  };
  GOENV_CHECK(s.task == task_ && s.num_nodes == graph_->num_nodes() && s.num_edges == graph_->num_edges() &&
                  s.num_devices == cluster().num_devices() && s.graph_checksum == graph_checksum(*graph_),
              InvalidArgument, id_ << ": the state belongs to another task, graph or cluster");
  if (!s.started) {  // a never-reset env: nothing but its identity
    EnvState fresh;
    fresh.version = s.version;
    fresh.task = s.task;
    fresh.num_nodes = s.num_nodes;
    fresh.num_edges = s.num_edges;
    fresh.num_devices = s.num_devices;
    fresh.graph_checksum = s.graph_checksum;
    if (encode(fresh) != bytes) bad("started", "is false but the state holds an episode");
    started_ = done_ = false;
    steps_ = cursor_ = 0;
    return;
  }
  const int n = graph_->num_nodes();
  const auto has = [this](Head h) { return std::find(heads_.begin(), heads_.end(), h) != heads_.end(); };
  if (s.version < 3) {  // no best recorded: the decisions in force
    s.best_placement = s.placement;
    s.best_priority = s.priority;
    s.best_fusion = s.fusion;
  }
  // Decisions this env can hold: in range, and the initial ones for heads the task does not decide.
  const auto check_decisions = [&](const std::string& prefix, const std::vector<std::int32_t>& placement,
                                   const std::vector<double>& priority, const std::vector<std::int32_t>& fusion) {
    const std::string pf = prefix + "placement", pp = prefix + "priority", pu = prefix + "fusion";
    if (static_cast<int>(placement.size()) != n) bad(pf.c_str(), "does not have one value per node");
    if (static_cast<int>(priority.size()) != n) bad(pp.c_str(), "does not have one value per node");
    if (static_cast<int>(fusion.size()) != n) bad(pu.c_str(), "does not have one value per node");
    for (int v = 0; v < n; ++v) {
      const std::string node = "at node " + std::to_string(v);
      if (placement[v] < 0 || placement[v] >= cluster().num_devices()) bad(pf.c_str(), node + " is out of range");
      if (!has(Head::kPlacement) && placement[v] != initial_placement_[v])
        bad(pf.c_str(), node + " differs from the fixed placement");
      const double p = priority[v];
      const bool level = has(Head::kPriority) && p >= 0 && p < config_.priority_levels && p == std::floor(p);
      if (!level && !(p == initial_priority_[v]))  // explicit initial priorities need not be levels
        bad(pp.c_str(), node + " is not a priority level of this env");
      if (has(Head::kFusion) ? (fusion[v] < 0 || fusion[v] >= config_.fusion_levels) : fusion[v] != initial_fusion_[v])
        bad(pu.c_str(), node + " is not a fusion level of this env");
    }
  };
  check_decisions("", s.placement, s.priority, s.fusion);
  check_decisions("best_", s.best_placement, s.best_priority, s.best_fusion);
  const std::int64_t total = total_steps();
  if (s.steps < 0 || s.steps > total) bad("steps", "is outside [0, " + std::to_string(total) + "]");
  if (s.done != (s.steps >= total)) bad("done", "disagrees with the step counter");
  if (s.cursor != (node_mode_ ? static_cast<std::int32_t>(s.steps % n) : 0)) bad("cursor", "disagrees with steps");
  if (!has_initial_result_) {
    initial_result_ = simulate(initial_placement_, initial_priority_, initial_fusion_);
    has_initial_result_ = true;
  }
  // Bitwise: the simulator is deterministic, so a genuine snapshot matches.
  if (!(s.initial_runtime == initial_result_.runtime)) bad("initial_runtime", "differs from this env's simulation");
  const SimulationResult& best = simulate(s.best_placement, s.best_priority, s.best_fusion);
  if (best.oom || best.invalid || !(best.runtime <= s.runtime))
    bad("best_placement", "is not feasible decisions at least as fast as those in force");
  const double best_runtime = best.runtime;
  const SimulationResult& current = simulate(s.placement, s.priority, s.fusion);
  if (!(s.runtime == current.runtime)) bad("runtime", "differs from the simulation of the state's decisions");
  const double scale = std::max(s.initial_runtime, kMinRuntimeScale);
  // info describes the decisions in force after the last reset or step (fill_info).
  if (!same_bits(&s.info_runtime, &current.runtime, 1))
    bad("info_runtime", "differs from the simulation of the state's decisions");
  if (s.info_peak_memory.size() != current.peak_memory.size() ||
      !same_bits(s.info_peak_memory.data(), current.peak_memory.data(), current.peak_memory.size()))
    bad("info_peak_memory", "differs from the simulation of the state's decisions");
  if (!same_bits(&s.info_bytes_moved, &current.bytes_moved, 1))
    bad("info_bytes_moved", "differs from the simulation of the state's decisions");
  // The last step's decision was not adopted unless the field is StepInfo's own NaN.
  const double none = std::numeric_limits<double>::quiet_NaN();
  const bool rejected = !same_bits(&s.info_rejected_runtime, &none, 1);
  if (rejected) {
    if (s.steps == 0 || !s.info_invalid) bad("info_rejected_runtime", "is set but no step was rejected");
    if (!(s.info_rejected_runtime >= 0) || !float_finite(s.info_rejected_runtime / scale))
      bad("info_rejected_runtime", "is not the runtime of a rejected decision");
    if (s.info_invalid_reason.empty() || s.info_invalid_reason.size() > 65536 ||
        !is_valid_utf8(s.info_invalid_reason))
      bad("info_invalid_reason", "is not the reason of a rejected decision");
    if (!(s.last_reward == config_.invalid_penalty)) bad("last_reward", "is not this env's invalid_penalty");
  } else {
    if (s.info_oom != current.oom) bad("info_oom", "differs from the simulation of the state's decisions");
    if (s.info_invalid != current.invalid || s.info_invalid_reason != current.invalid_reason)
      bad("info_invalid", "differs from the simulation of the state's decisions");
    // An adopted step's reward is (previous runtime - runtime) / scale with a previous runtime >= 0.
    if (s.steps == 0 ? s.last_reward != 0 : !(s.last_reward >= -s.runtime / scale) || !float_finite(s.last_reward))
      bad("last_reward", "is not a reward this state can follow");
  }
  const bool can_move = s.steps > 0 && has(Head::kPlacement) && follow_colocation_ && colocation_.num_groups() > 0;
  if (s.info_colocation_moved < 0 || s.info_colocation_moved > (can_move ? n : 0))
    bad("info_colocation_moved", "is not a count of nodes colocation moved");

  last_ = current;
  refresh_schedule();
  best_ = {std::move(s.best_placement), std::move(s.best_priority), std::move(s.best_fusion)};
  best_runtime_ = best_runtime;
  placement_ = std::move(s.placement);
  priority_ = std::move(s.priority);
  fusion_ = std::move(s.fusion);
  initial_runtime_ = s.initial_runtime;
  runtime_ = s.runtime;
  last_reward_ = s.last_reward;
  steps_ = s.steps;
  cursor_ = s.cursor;
  started_ = true;
  done_ = s.done;
  fill_info(last_);  // runtime, speedup, peak memory and bytes moved: recomputed, equal to the state's
  if (rejected) {
    info_.oom = s.info_oom;
    info_.invalid = true;
    info_.invalid_reason = std::move(s.info_invalid_reason);
    info_.rejected_runtime = s.info_rejected_runtime;
  }
  info_.colocation_moved = s.info_colocation_moved;
}

}  // namespace goenv
