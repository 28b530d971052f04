// Env's snapshot format: get_state() writes the episode as cereal bytes closed by a checksum;
// set_state() checks every field before anything changes.
#include <algorithm>
#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <cmath>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "core/serialization.h"
#include "envs/env.h"

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
namespace {

// Throws InvalidArgument naming the env, the field and why.
[[noreturn]] void bad_field(const std::string& id, const char* field, const std::string& why) {
  GOENV_FAIL(InvalidArgument, id << ": env state field '" << field << "' " << why);
}

EnvState decode(const std::string& bytes, const std::string& id) {
  EnvState s;
  try {
    const std::string what = id + ": cannot decode env state";
    BoundedBinaryInput(bytes, what)(s.version);  // the version says whether a checksum closes the state
    GOENV_CHECK(s.version >= kOldestEnvStateVersion && s.version <= kEnvStateVersion, InvalidArgument,
                id << ": env state version " << s.version << ", this goenv reads versions " << kOldestEnvStateVersion
                   << " to " << kEnvStateVersion);
    const std::string_view record =
        s.version >= kFirstChecksummedEnvState ? without_checksum(bytes, what) : std::string_view(bytes);
    BoundedBinaryInput ar(record, what);
    ar(s);
    ar.finish();
  } catch (const InvalidGraph& e) {
    throw InvalidArgument(e.what());
  }
  if (s.version < 3) {  // no best recorded: the decisions in force
    s.best_placement = s.placement;
    s.best_priority = s.priority;
    s.best_fusion = s.fusion;
  }
  return s;
}

// What decisions an env can hold: in range, and the initial ones for heads the task does not decide.
struct DecisionRules {
  std::string id;
  int num_nodes, num_devices, priority_levels, fusion_levels;
  bool places, prioritizes, fuses;
  const std::vector<std::int32_t>& initial_placement;
  const std::vector<double>& initial_priority;
  const std::vector<std::int32_t>& initial_fusion;

  void check(const std::string& prefix, const std::vector<std::int32_t>& placement,
             const std::vector<double>& priority, const std::vector<std::int32_t>& fusion) const {
    const std::string pf = prefix + "placement", pp = prefix + "priority", pu = prefix + "fusion";
    const int n = num_nodes;
    if (static_cast<int>(placement.size()) != n) bad_field(id, pf.c_str(), "does not have one value per node");
    if (static_cast<int>(priority.size()) != n) bad_field(id, pp.c_str(), "does not have one value per node");
    if (static_cast<int>(fusion.size()) != n) bad_field(id, pu.c_str(), "does not have one value per node");
    for (int v = 0; v < n; ++v) {
      const std::string node = "at node " + std::to_string(v);
      if (placement[v] < 0 || placement[v] >= num_devices) bad_field(id, pf.c_str(), node + " is out of range");
      if (!places && placement[v] != initial_placement[v])
        bad_field(id, pf.c_str(), node + " differs from the fixed placement");
      const double p = priority[v];
      const bool level = prioritizes && p >= 0 && p < priority_levels && p == std::floor(p);
      if (!level && !(p == initial_priority[v]))  // explicit initial priorities need not be levels
        bad_field(id, pp.c_str(), node + " is not a priority level of this env");
      if (fuses ? (fusion[v] < 0 || fusion[v] >= fusion_levels) : fusion[v] != initial_fusion[v])
        bad_field(id, pu.c_str(), node + " is not a fusion level of this env");
    }
  }
};

// The info of the state's last reset or step against the simulation of its decisions in force
// (fill_info): what the env recomputes must match bitwise; a rejected decision's runtime, reason
// and reward must be what a rejecting step writes. Returns whether the last step was rejected.
bool check_info(const EnvState& s, const SimulationResult& current, double invalid_penalty, const std::string& id) {
  const auto bad = [&id](const char* field, const std::string& why) { bad_field(id, field, why); };
  const double scale = std::max(s.initial_runtime, kMinRuntimeScale);
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
    if (!(s.last_reward == invalid_penalty)) bad("last_reward", "is not this env's invalid_penalty");
  } else {
    if (s.info_oom != current.oom) bad("info_oom", "differs from the simulation of the state's decisions");
    if (s.info_invalid != current.invalid || s.info_invalid_reason != current.invalid_reason)
      bad("info_invalid", "differs from the simulation of the state's decisions");
    // An adopted step's reward is (previous runtime - runtime) / scale with a previous runtime >= 0.
    if (s.steps == 0 ? s.last_reward != 0 : !(s.last_reward >= -s.runtime / scale) || !float_finite(s.last_reward))
      bad("last_reward", "is not a reward this state can follow");
  }
  return rejected;
}

}  // namespace

void Env::set_state(const std::string& bytes) {
  EnvState s = decode(bytes, id_);
  const auto bad = [this](const char* field, const std::string& why) { bad_field(id_, field, why); };
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
  const DecisionRules rules{id_, n, cluster().num_devices(), config_.priority_levels, config_.fusion_levels,
                            has(Head::kPlacement), has(Head::kPriority), has(Head::kFusion),
                            initial_placement_, initial_priority_, initial_fusion_};
  rules.check("", s.placement, s.priority, s.fusion);
  rules.check("best_", s.best_placement, s.best_priority, s.best_fusion);
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
  const bool rejected = check_info(s, current, config_.invalid_penalty, id_);
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
