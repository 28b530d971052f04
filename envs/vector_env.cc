#include "envs/vector_env.h"

#include <algorithm>
#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <map>
#include <omp.h>
#include <sstream>

#include "core/error.h"
#include "core/hash.h"
#include "core/serialization.h"
#include "envs/registry.h"

namespace goenv {

const char* batch_layout_name(BatchLayout layout) {
  switch (layout) {
    case BatchLayout::kStacked: return "stacked";
    case BatchLayout::kConcatenated: return "concatenated";
    case BatchLayout::kPadded: return "padded";
  }
  return "?";
}

std::uint64_t episode_seed(std::uint64_t seed, std::uint64_t episode) {
  return episode == 0 ? seed : splitmix64(seed + kSplitmixIncrement * (episode - 1));
}

int default_num_threads() { return omp_get_max_threads(); }

VectorEnv::VectorEnv(std::vector<std::unique_ptr<Env>> envs, BatchLayout layout, int num_threads, int pad_nodes,
                     int pad_edges, int max_episode_steps)
    : envs_(std::move(envs)), layout_(layout), max_episode_steps_(max_episode_steps) {
  GOENV_CHECK(!envs_.empty(), InvalidArgument, "a vector env needs at least one env");
  for (const auto& e : envs_) GOENV_CHECK(e != nullptr, InvalidArgument, "a vector env got a null env");
  GOENV_CHECK(max_episode_steps >= 0, InvalidArgument, "max_episode_steps must be >= 0 (0 = none), got "
                                                           << max_episode_steps);
  set_num_threads(num_threads);
  const Env& first = *envs_.front();
  const int b = num_envs();
  num_devices_ = first.cluster().num_devices();
  node_state_dim_ = first.node_state_dim();
  device_state_dim_ = first.device_state_dim();
  device_feature_dim_ = first.observation_version() >= 2 ? static_cast<int>(device_feature_names().size()) : 0;
  action_mask_width_ = first.action_mask_width();
  global_dim_ = static_cast<int>(global_names().size());
  for (int i = 1; i < b; ++i) {
    const Env& e = *envs_[i];
    GOENV_CHECK(e.task() == first.task() && e.heads() == first.heads(), InvalidArgument,
                "vector env: env " << i << " is task '" << e.task() << "', env 0 is '" << first.task()
                                   << "'; one vector env runs one task");
    GOENV_CHECK(e.node_mode() == first.node_mode(), InvalidArgument,
                "vector env: env " << i << " has decision_mode '" << e.config().decision_mode << "', env 0 has '"
                                   << first.config().decision_mode << "'");
    for (Head h : first.heads())
      GOENV_CHECK(e.choices(h) == first.choices(h), InvalidArgument,
                  "vector env: env " << i << " (" << e.id() << ") has " << e.choices(h) << " " << head_name(h)
                                     << " choices, env 0 (" << first.id() << ") has " << first.choices(h)
                                     << "; give every env the same cluster size and levels (e.g. cluster=...)");
    GOENV_CHECK(e.observation_version() == first.observation_version(), InvalidArgument,
                "vector env: env " << i << " has observation_version " << e.observation_version() << ", env 0 has "
                                   << first.observation_version());
    if (e.graph_ptr() != first.graph_ptr()) same_graph_ = false;
  }
  GOENV_CHECK(layout_ != BatchLayout::kStacked || same_graph_, InvalidArgument,
              "vector env: the stacked layout needs one graph for every env; use concatenated or padded");

  node_offset_.resize(b);
  concat_offset_.resize(b);
  for (int i = 0; i < b; ++i) {
    const Graph& g = envs_[i]->graph();
    concat_offset_[i] = total_nodes_;
    total_nodes_ += g.num_nodes();
    total_edges_ += g.num_edges();
    max_nodes_ = std::max(max_nodes_, g.num_nodes());
    max_edges_ = std::max(max_edges_, g.num_edges());
  }
  if (layout_ == BatchLayout::kPadded) {
    for (int i = 0; i < b; ++i) {
      const Graph& g = envs_[i]->graph();
      GOENV_CHECK(g.num_nodes() <= pad_nodes && g.num_edges() <= pad_edges, InvalidArgument,
                  "vector env: pad_to=(" << pad_nodes << ", " << pad_edges << ") is too small for env " << i << " ("
                                         << envs_[i]->id() << ": " << g.num_nodes() << " nodes, " << g.num_edges()
                                         << " edges); the batch needs at least (" << max_nodes_ << ", "
                                         << max_edges_ << ")");
    }
    max_nodes_ = pad_nodes;
    max_edges_ = pad_edges;
  }
  for (int i = 0; i < b; ++i)
    node_offset_[i] = layout_ == BatchLayout::kConcatenated ? concat_offset_[i]
                                                            : static_cast<std::int64_t>(i) * max_nodes_;
  node_rows_ = layout_ == BatchLayout::kConcatenated ? total_nodes_ : static_cast<std::int64_t>(b) * max_nodes_;

  autoreset_.assign(b, 0);
  has_reset_.assign(b, 0);
  seed_.assign(b, 0);
  episode_.assign(b, 0);
  episode_steps_.assign(b, 0);
  errors_.assign(b, nullptr);
  env_actions_.assign(b, std::vector<const std::int64_t*>(first.heads().size(), nullptr));
  build_static();
}

std::unique_ptr<VectorEnv> VectorEnv::from_templates(const std::vector<const Env*>& templates, BatchLayout layout,
                                                     int num_threads, int pad_nodes, int pad_edges,
                                                     int max_episode_steps) {
  std::vector<std::unique_ptr<Env>> envs;
  envs.reserve(templates.size());
  for (const Env* t : templates) {
    GOENV_CHECK(t != nullptr, InvalidArgument, "vector env: null template env");
    std::lock_guard<std::mutex> lock(t->guard());  // a template may be stepped by another thread meanwhile
    envs.push_back(std::make_unique<Env>(*t));     // shares the graph and its static observation
  }
  return std::make_unique<VectorEnv>(std::move(envs), layout, num_threads, pad_nodes, pad_edges, max_episode_steps);
}

std::unique_ptr<VectorEnv> VectorEnv::make(const std::vector<std::string>& ids, int num_envs, const EnvConfig& config,
                                           int num_threads, bool padded, int pad_nodes, int pad_edges,
                                           int max_episode_steps) {
  GOENV_CHECK(!ids.empty(), InvalidArgument, "make_vec needs at least one env id");
  GOENV_CHECK(num_envs >= 1, InvalidArgument, "num_envs must be >= 1, got " << num_envs);
  std::map<std::string, std::unique_ptr<Env>> built;  // one graph per distinct id
  std::vector<const Env*> templates;
  for (int i = 0; i < num_envs; ++i) {
    const std::string& id = ids[i % ids.size()];
    auto& slot = built[id];
    if (!slot) slot = make_env(id, config);
    templates.push_back(slot.get());
  }
  const bool one_graph = built.size() == 1;
  const BatchLayout layout = padded ? BatchLayout::kPadded : one_graph ? BatchLayout::kStacked
                                                                       : BatchLayout::kConcatenated;
  return from_templates(templates, layout, num_threads, pad_nodes, pad_edges, max_episode_steps);
}

void VectorEnv::set_num_threads(int num_threads) {
  num_threads_ = checked_num_threads(num_threads);
}

Env& VectorEnv::env(int i) {
  GOENV_CHECK(i >= 0 && i < num_envs(), InvalidArgument, "env index " << i << " outside [0, " << num_envs() << ")");
  return *envs_[i];
}

const Env& VectorEnv::env(int i) const {
  GOENV_CHECK(i >= 0 && i < num_envs(), InvalidArgument, "env index " << i << " outside [0, " << num_envs() << ")");
  return *envs_[i];
}

void VectorEnv::build_static() {
  const int b = num_envs();
  static_.num_nodes.resize(b);
  static_.num_edges.resize(b);
  for (int i = 0; i < b; ++i) {
    static_.num_nodes[i] = envs_[i]->graph().num_nodes();
    static_.num_edges[i] = envs_[i]->graph().num_edges();
  }
  static_.device_features.clear();
  for (int i = 0; i < b; ++i) {
    const auto& features = envs_[i]->device_features();
    static_.device_features.insert(static_.device_features.end(), features.begin(), features.end());
  }
  const StaticObservation& first = envs_.front()->static_observation();
  const int f = first.node_feature_dim, fe = first.edge_feature_dim;
  if (layout_ == BatchLayout::kStacked) {
    static_.broadcast = true;
    static_.shared = envs_.front()->static_observation_ptr();
    return;
  }
  if (layout_ == BatchLayout::kConcatenated) {
    static_.node_features.resize(static_cast<std::size_t>(total_nodes_) * f);
    static_.edge_features.resize(static_cast<std::size_t>(total_edges_) * fe);
    static_.edge_index.resize(2 * static_cast<std::size_t>(total_edges_));
    static_.batch.resize(total_nodes_);
    std::int64_t edge_offset = 0;
    for (int i = 0; i < b; ++i) {
      const StaticObservation& s = envs_[i]->static_observation();
      const std::int64_t node_offset = concat_offset_[i];
      std::copy(s.node_features.begin(), s.node_features.end(), static_.node_features.begin() + node_offset * f);
      std::copy(s.edge_features.begin(), s.edge_features.end(), static_.edge_features.begin() + edge_offset * fe);
      for (int e = 0; e < s.num_edges; ++e) {
        static_.edge_index[edge_offset + e] = s.edge_index[e] + node_offset;
        static_.edge_index[total_edges_ + edge_offset + e] = s.edge_index[s.num_edges + e] + node_offset;
      }
      std::fill(static_.batch.begin() + node_offset, static_.batch.begin() + node_offset + s.num_nodes, i);
      edge_offset += s.num_edges;
    }
    return;
  }
  // Padded: one block per env (or one shared block when every env has the same graph).
  static_.broadcast = same_graph_;
  const int blocks = same_graph_ ? 1 : b;
  const std::size_t p = max_nodes_, q = max_edges_;
  static_.node_features.assign(blocks * p * f, 0.f);
  static_.edge_features.assign(blocks * q * fe, 0.f);
  static_.edge_index.assign(blocks * 2 * q, -1);
  for (int i = 0; i < blocks; ++i) {
    const StaticObservation& s = envs_[i]->static_observation();
    std::copy(s.node_features.begin(), s.node_features.end(), static_.node_features.begin() + i * p * f);
    std::copy(s.edge_features.begin(), s.edge_features.end(), static_.edge_features.begin() + i * q * fe);
    std::int64_t* rows = &static_.edge_index[i * 2 * q];
    std::copy(s.edge_index.begin(), s.edge_index.begin() + s.num_edges, rows);
    std::copy(s.edge_index.begin() + s.num_edges, s.edge_index.end(), rows + q);
  }
}

// Threads pay only when an env step outweighs waking them, and on a busy machine
// they can cost more than they give: after a parallel region OpenMP's workers
// spin for milliseconds, taking the core the caller (the Python loop, the policy)
// needs. So step() measures both modes and keeps the faster, whatever the size
// and the load: a block of kBlock steps per mode, timed from the start of one
// step to the start of the next (the caller's work between steps included, as
// the spinning workers slow it), the shortest cycle of the block counted
// without its first (which still feels the previous mode). The mode in use is
// re-measured against the other every probe_interval steps; the interval doubles
// each time the choice stands. Results never depend on the mode (each env owns
// its state); only the speed does.
namespace {
constexpr int kBlock = 3;
constexpr std::int64_t kFirstInterval = 128, kLongestInterval = 8192;
}  // namespace

bool VectorEnv::choose_threads() {
  ThreadChoice& c = choice_;
  const auto now = std::chrono::steady_clock::now();
  if (c.has_last && c.block_calls >= 2) {  // the cycle of the previous step (not a block's first)
    const double cycle = std::chrono::duration<double>(now - c.last_start).count();
    c.block_best = c.block_best > 0 ? std::min(c.block_best, cycle) : cycle;
  }
  c.has_last = true;
  c.last_start = now;
  if (c.probing && c.block_calls == kBlock) {  // a block is over: record it, then the next block or the choice
    c.best[c.mode] = c.block_best;
    c.block_calls = 0;
    c.block_best = 0;
    if (c.best[!c.mode] < 0) {
      c.mode = !c.mode;  // the other mode was never measured: it is next
    } else {
      const bool faster = c.best[1] < c.best[0];
      c.probe_interval = faster == c.threads && c.probe_interval ? std::min(2 * c.probe_interval, kLongestInterval)
                                                                 : kFirstInterval;
      c.threads = faster;
      c.probing = false;
      c.calls_since_probe = 0;
    }
  }
  if (!c.probing && ++c.calls_since_probe > c.probe_interval) {  // time to re-measure: both modes, one block each
    c.probing = true;
    c.mode = !c.threads;
    c.best[0] = c.best[1] = -1;
    c.block_calls = 0;
    c.block_best = 0;
  }
  if (!c.probing) return c.threads;
  ++c.block_calls;
  return c.mode;
}

template <typename F>
void VectorEnv::parallel_for_envs(F&& body, bool timed) {
  const int b = num_envs();
  std::fill(errors_.begin(), errors_.end(), nullptr);
  const int threads = std::min(num_threads_, b);
  // Untimed calls (reset, set_state) use threads unless steps measured them slower.
  const bool parallel = threads > 1 && (timed ? choose_threads() : choice_.probe_interval == 0 || choice_.threads);
  if (!parallel) {
    for (int i = 0; i < b; ++i) {
      try {
        body(i);
      } catch (...) {
        errors_[i] = std::current_exception();
      }
    }
  } else if (same_graph_) {
    // One graph: equal work per env, so contiguous blocks (no scheduling, and
    // neighbouring envs' outputs, which share cache lines, stay on one thread).
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int i = 0; i < b; ++i) {
      try {
        body(i);
      } catch (...) {
        errors_[i] = std::current_exception();
      }
    }
  } else {
    // dynamic: graphs of mixed sizes balance; nothing escapes the region.
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int i = 0; i < b; ++i) {
      try {
        body(i);
      } catch (...) {
        errors_[i] = std::current_exception();
      }
    }
  }
  for (const auto& error : errors_)
    if (error) std::rethrow_exception(error);  // the lowest env index first, on the calling thread
}

void VectorEnv::write_info(int i, const BatchBuffers& out, double reward, bool terminated, bool truncated) {
  const StepInfo& info = envs_[i]->last_info();
  if (out.reward) out.reward[i] = reward;
  if (out.terminated) out.terminated[i] = terminated;
  if (out.truncated) out.truncated[i] = truncated;
  if (out.runtime) out.runtime[i] = info.runtime;
  if (out.initial_runtime) out.initial_runtime[i] = info.initial_runtime;
  if (out.speedup) out.speedup[i] = info.speedup;
  if (out.lower_bound) out.lower_bound[i] = info.lower_bound;
  if (out.peak_memory) {
    double* row = out.peak_memory + static_cast<std::size_t>(i) * num_devices_;
    for (int d = 0; d < num_devices_; ++d)
      row[d] = d < static_cast<int>(info.peak_memory.size()) ? info.peak_memory[d] : 0.0;
  }
  if (out.oom) out.oom[i] = info.oom;
  if (out.invalid) out.invalid[i] = info.invalid;
  if (out.rejected_runtime) out.rejected_runtime[i] = info.rejected_runtime;
  if (out.colocation_moved) out.colocation_moved[i] = info.colocation_moved;
  if (out.best_runtime) out.best_runtime[i] = info.best_runtime;
}

float* VectorEnv::device_state_of(int i, const BatchBuffers& out) const {
  return out.device_state ? out.device_state + static_cast<std::size_t>(i) * num_devices_ * device_state_dim_ : nullptr;
}

void VectorEnv::zero_padding(int i, const BatchBuffers& out) {
  if (layout_ != BatchLayout::kPadded) return;
  const std::int64_t n = envs_[i]->graph().num_nodes();
  const std::int64_t first = node_offset_[i] + n, last = node_offset_[i] + max_nodes_;
  std::fill(out.node_state + first * node_state_dim_, out.node_state + last * node_state_dim_, 0.f);
  std::fill(out.action_mask + first * action_mask_width_, out.action_mask + last * action_mask_width_,
            std::int8_t{0});
}

void VectorEnv::reset(const std::uint64_t* seeds, const std::uint8_t* mask, const BatchBuffers& buffers,
                      const std::vector<Solution>* starts) {
  const auto started = std::chrono::steady_clock::now();
  BatchBuffers out = buffers;  // reset reports no reward or episode ends
  out.reward = nullptr;
  out.terminated = out.truncated = nullptr;
  GOENV_CHECK(out.node_state && out.action_mask && out.globals, InvalidArgument,
              "vector env: reset needs node_state, action_mask and globals buffers");
  const int b = num_envs();
  for (int i = 0; i < b; ++i)
    GOENV_CHECK(!mask || mask[i] || has_reset_[i], ResetNeeded,
                "vector env: env " << i << " is left out of reset_mask but was never reset; reset every env first");
  GOENV_CHECK(!starts || static_cast<int>(starts->size()) == b, InvalidArgument,
              "vector env: " << (starts ? starts->size() : 0) << " starts for " << b << " envs");
  // This reset's starts, checked (and simulated) before any env changes.
  std::vector<Solution> checked(starts ? b : 0);
  std::vector<SimulationResult> simulated(starts ? b : 0);
  std::vector<std::uint8_t> given(starts ? b : 0, 0);
  for (int i = 0; starts && i < b; ++i) {
    const Solution& start = (*starts)[i];
    if ((mask && !mask[i]) || (start.placement.empty() && start.priority.empty() && start.fusion.empty())) continue;
    try {
      checked[i] = envs_[i]->checked_start(start, &simulated[i]);
    } catch (const InvalidArgument& error) {
      GOENV_FAIL(InvalidArgument, "vector env: the start of env " << i << ": " << error.what());
    }
    given[i] = 1;
  }
  parallel_for_envs([&](int i) {
    float* node_state = out.node_state + node_offset_[i] * node_state_dim_;
    std::int8_t* action_mask = out.action_mask + node_offset_[i] * action_mask_width_;
    float* globals = out.globals + static_cast<std::size_t>(i) * global_dim_;
    Env& env = *envs_[i];
    if (!mask || mask[i]) {
      seed_[i] = seeds ? seeds[i] : 0;
      episode_[i] = 0;
      episode_steps_[i] = 0;
      autoreset_[i] = 0;
      has_reset_[i] = 1;
      const bool once = starts && given[i];
      env.reset_into(episode_seed(seed_[i], 0), node_state, action_mask, globals, device_state_of(i, out),
                     once ? &checked[i] : nullptr, once ? &simulated[i] : nullptr);
    } else {
      env.observe_into(node_state, action_mask, globals, device_state_of(i, out));
    }
    write_info(i, out, 0.0, false, false);
    zero_padding(i, out);
  });
  last_call_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

void VectorEnv::step(const std::int64_t* const* actions, const ActionLayout& action_layout, const BatchBuffers& out) {
  const auto started = std::chrono::steady_clock::now();
  GOENV_CHECK(out.node_state && out.action_mask && out.globals, InvalidArgument,
              "vector env: step needs node_state, action_mask and globals buffers");
  const int b = num_envs();
  const std::size_t heads = envs_.front()->heads().size();
  // Serial checks first, so a bad action leaves every env untouched.
  for (int i = 0; i < b; ++i) {
    if (autoreset_[i]) continue;  // this step resets env i and ignores its action
    GOENV_CHECK(has_reset_[i] && !envs_[i]->needs_reset(), ResetNeeded,
                "vector env: env " << i << " (" << envs_[i]->id() << ") was never reset; call reset() first");
    const std::int64_t offset = node_mode() ? i
                                : action_layout.concatenated ? concat_offset_[i]
                                                             : i * action_layout.row_width;
    for (std::size_t h = 0; h < heads; ++h) {
      GOENV_CHECK(actions[h] != nullptr, InvalidAction,
                  "vector env: missing '" << head_name(envs_[i]->heads()[h]) << "' actions");
      env_actions_[i][h] = actions[h] + offset;
    }
    try {
      envs_[i]->check_action(env_actions_[i].data());
    } catch (const InvalidAction& e) {
      GOENV_FAIL(InvalidAction, "env " << i << " of the batch: " << e.what());
    }
  }
  parallel_for_envs([&](int i) {
    float* node_state = out.node_state + node_offset_[i] * node_state_dim_;
    std::int8_t* action_mask = out.action_mask + node_offset_[i] * action_mask_width_;
    float* globals = out.globals + static_cast<std::size_t>(i) * global_dim_;
    Env& env = *envs_[i];
    if (autoreset_[i]) {
      ++episode_[i];
      episode_steps_[i] = 0;
      autoreset_[i] = 0;
      env.reset_into(episode_seed(seed_[i], episode_[i]), node_state, action_mask, globals, device_state_of(i, out));
      write_info(i, out, 0.0, false, false);
    } else {
      const Env::StepOutcome o =
          env.step_into(env_actions_[i].data(), node_state, action_mask, globals, device_state_of(i, out));
      ++episode_steps_[i];
      const bool truncated =
          o.truncated || (!o.terminated && max_episode_steps_ > 0 && episode_steps_[i] >= max_episode_steps_);
      autoreset_[i] = o.terminated || truncated;
      write_info(i, out, o.reward, o.terminated, truncated);
    }
    zero_padding(i, out);
  }, /*timed=*/true);
  last_call_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

int VectorEnv::reset_finished(const BatchBuffers& out) {
  GOENV_CHECK(out.node_state && out.action_mask && out.globals, InvalidArgument,
              "vector env: reset_finished needs node_state, action_mask and globals buffers");
  const int finished = static_cast<int>(std::count(autoreset_.begin(), autoreset_.end(), std::uint8_t{1}));
  if (finished == 0) return 0;
  parallel_for_envs([&](int i) {
    if (!autoreset_[i]) return;
    ++episode_[i];
    episode_steps_[i] = 0;
    autoreset_[i] = 0;
    envs_[i]->reset_into(episode_seed(seed_[i], episode_[i]), out.node_state + node_offset_[i] * node_state_dim_,
                         out.action_mask + node_offset_[i] * action_mask_width_,
                         out.globals + static_cast<std::size_t>(i) * global_dim_, device_state_of(i, out));
    zero_padding(i, out);
  });
  return finished;
}

const BatchBuffers& VectorEnv::owned_buffers() {
  if (owned_ready_) return owned_;
  const std::size_t b = num_envs(), rows = node_rows_;
  own_node_state_.assign(rows * node_state_dim_, 0.f);
  own_action_mask_.assign(rows * action_mask_width_, 0);
  own_globals_.assign(b * global_dim_, 0.f);
  own_reward_.assign(b, 0);
  own_runtime_.assign(b, 0);
  own_initial_runtime_.assign(b, 0);
  own_speedup_.assign(b, 0);
  own_lower_bound_.assign(b, 0);
  own_peak_memory_.assign(b * num_devices_, 0);
  own_terminated_.assign(b, 0);
  own_truncated_.assign(b, 0);
  own_oom_.assign(b, 0);
  own_invalid_.assign(b, 0);
  own_rejected_runtime_.assign(b, 0);
  own_colocation_moved_.assign(b, 0);
  own_device_state_.assign(b * num_devices_ * device_state_dim_, 0.f);
  own_best_runtime_.assign(b, 0);
  owned_ = {own_node_state_.data(), own_action_mask_.data(), own_globals_.data(), own_reward_.data(),
            own_terminated_.data(), own_truncated_.data(), own_runtime_.data(), own_initial_runtime_.data(),
            own_speedup_.data(), own_lower_bound_.data(), own_peak_memory_.data(), own_oom_.data(),
            own_invalid_.data(), own_rejected_runtime_.data(), own_colocation_moved_.data(),
            device_state_dim_ ? own_device_state_.data() : nullptr, own_best_runtime_.data()};
  owned_ready_ = true;
  return owned_;
}

namespace {

// 2: a closing checksum (a version-1 state is read without one).
constexpr std::uint32_t kVectorStateVersion = 2;
constexpr std::uint32_t kOldestVectorStateVersion = 1;
constexpr std::uint32_t kFirstChecksummedVectorState = 2;

struct VectorState {
  std::uint32_t version = kVectorStateVersion;
  std::vector<std::string> envs;
  std::vector<std::uint8_t> autoreset;
  std::vector<std::uint64_t> seed, episode;
  std::vector<std::int32_t> episode_steps;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(version, envs, autoreset, seed, episode, episode_steps);
  }
};

}  // namespace

std::string VectorEnv::get_state() const {
  VectorState s;
  for (const auto& env : envs_) s.envs.push_back(env->get_state());
  s.autoreset = autoreset_;
  s.seed = seed_;
  s.episode = episode_;
  s.episode_steps = episode_steps_;
  std::ostringstream os;
  {
    cereal::PortableBinaryOutputArchive ar(os);
    ar(s);
  }
  return append_checksum(os.str());
}

void VectorEnv::set_state(const std::string& bytes) {
  VectorState s;
  try {  // counts checked before allocating (a corrupt state must not ask for gigabytes)
    const std::string what = "vector env: cannot decode the state";
    BoundedBinaryInput(bytes, what)(s.version);  // the version says whether a checksum closes the state
    GOENV_CHECK(s.version >= kOldestVectorStateVersion && s.version <= kVectorStateVersion, InvalidArgument,
                "vector env: state version " << s.version << ", this goenv reads versions "
                                             << kOldestVectorStateVersion << " to " << kVectorStateVersion);
    const std::string_view record =
        s.version >= kFirstChecksummedVectorState ? without_checksum(bytes, what) : std::string_view(bytes);
    BoundedBinaryInput ar(record, what);
    ar(s);
    ar.finish();
  } catch (const InvalidGraph& e) {
    throw InvalidArgument(e.what());
  }
  const auto b = static_cast<std::size_t>(num_envs());
  GOENV_CHECK(s.envs.size() == b && s.autoreset.size() == b && s.seed.size() == b && s.episode.size() == b &&
                  s.episode_steps.size() == b,
              InvalidArgument, "vector env: the state holds " << s.envs.size() << " envs, this batch has " << b);
  // All or nothing: if any env's state (or its bookkeeping) is bad, every env gets its
  // previous state back (a genuine snapshot, always accepted). The Env objects stay the
  // same, so nothing that refers to them (env(i), the bindings) is left dangling.
  std::vector<std::string> previous(b);
  for (std::size_t i = 0; i < b; ++i) previous[i] = envs_[i]->get_state();
  try {
    parallel_for_envs([&](int i) {
      Env& env = *envs_[i];
      try {
        env.set_state(s.envs[i]);
      } catch (const InvalidArgument& e) {
        GOENV_FAIL(InvalidArgument, "vector env: env " << i << ": " << e.what());
      }
      const std::int64_t steps = s.episode_steps[i];
      const bool ended = !env.needs_reset() ? max_episode_steps_ > 0 && steps >= max_episode_steps_ : env.started();
      GOENV_CHECK(env.started() ? steps == env.steps() && (max_episode_steps_ == 0 || steps <= max_episode_steps_)
                                : steps == 0,
                  InvalidArgument, "vector env: the state of env " << i << " has episode step count " << steps
                                                                   << ", its env state has " << env.steps());
      GOENV_CHECK(s.autoreset[i] == ended, InvalidArgument,
                  "vector env: the state of env " << i << " has autoreset flag " << int{s.autoreset[i]} << ", its "
                                                  << (ended ? "ended" : "running") << " episode needs " << ended);
    });
  } catch (...) {
    parallel_for_envs([&](int i) { envs_[i]->set_state(previous[i]); });
    throw;
  }
  for (std::size_t i = 0; i < b; ++i) has_reset_[i] = envs_[i]->started();
  autoreset_ = std::move(s.autoreset);
  seed_ = std::move(s.seed);
  episode_ = std::move(s.episode);
  episode_steps_ = std::move(s.episode_steps);
}

}  // namespace goenv
