// VectorEnv: B environments of one task stepped together, in parallel with
// OpenMP, writing into batched buffers (EnvPool-style; docs/environments.md, docs/architecture.md).
//
// Contract:
//  * The envs may share one graph ("stacked" layout: node rows (B, N, ...)) or
//    have different graphs ("concatenated": PyG-style rows (sum N, ...), or
//    "padded": rows (B, max_nodes, ...), padding rows zero). Every env must have
//    the same task, config and device count, so S, A and G agree.
//  * reset(seeds) resets every env (or those in `mask`); step(actions) steps every
//    env. Autoreset is Gymnasium 1.x NEXT_STEP: the step after an env's terminal
//    (or truncated) step ignores its action, resets it with the next seed of its
//    own sequence, and reports the reset observation with reward 0 and
//    terminated = truncated = false.
//  * Results do not depend on num_threads: each env owns all of its state and
//    its seed sequence; no RNG or workspace is shared.
//  * Actions are checked (range) for every env before any env steps: a bad
//    action throws InvalidAction naming the env and leaves the batch unchanged.
//    Any other exception inside the parallel loop is caught per env and the
//    first (lowest env index) is rethrown on the calling thread after the loop.
//  * Not thread-safe itself: callers that share one VectorEnv between threads (the
//    Python bindings) hold guard() around every call; its envs are its own.
//  * num_threads is in [1, kMaxThreads] (envs/threads.h).
//  * Static observation parts are built once: shared with the env (stacked) or
//    concatenated / padded once at construction, never per step.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "envs/env.h"
#include "envs/threads.h"

namespace goenv {

enum class BatchLayout { kStacked = 0, kConcatenated = 1, kPadded = 2 };
const char* batch_layout_name(BatchLayout layout);

// Where one step writes. Node-level arrays have node_rows() rows; env i's rows
// start at node_offset(i). Per-env arrays have B entries (peak_memory: B x D).
// Booleans are one byte each (numpy bool_). Null pointers are skipped, except
// node_state, action_mask and globals.
struct BatchBuffers {
  float* node_state = nullptr;         // (rows, S)
  std::int8_t* action_mask = nullptr;  // (rows, A)
  float* globals = nullptr;            // (B, G)
  double* reward = nullptr;
  std::uint8_t* terminated = nullptr;
  std::uint8_t* truncated = nullptr;
  double* runtime = nullptr;
  double* initial_runtime = nullptr;
  double* speedup = nullptr;
  double* lower_bound = nullptr;
  double* peak_memory = nullptr;  // (B, D)
  std::uint8_t* oom = nullptr;
  std::uint8_t* invalid = nullptr;
  double* rejected_runtime = nullptr;      // NaN where nothing was rejected
  std::int64_t* colocation_moved = nullptr;
  float* device_state = nullptr;  // (B, D, Sd), observation version 2
  double* best_runtime = nullptr;
};

// How a batched action array is laid out: env i's values for a head start at
// base + (concatenated ? node_offset(i) in the concatenated layout : i * row_width).
// Node mode: one value per env, row_width = 1.
struct ActionLayout {
  bool concatenated = false;
  std::int64_t row_width = 0;
};

// The batched static observation. With `broadcast`, the arrays hold one env's
// block, the same for all B (Python broadcasts it without copying).
struct BatchedStatic {
  bool broadcast = false;
  std::shared_ptr<const StaticObservation> shared;  // stacked: the envs' own object
  std::vector<float> node_features;      // (rows, F)
  std::vector<std::int64_t> edge_index;  // concatenated: (2, sum E) with node offsets; padded: (B, 2, max E), -1 pads
  std::vector<float> edge_features;      // (edge rows, Fe)
  std::vector<std::int64_t> batch;       // concatenated: env of each node row
  std::vector<std::int64_t> num_nodes, num_edges;  // (B,)
  std::vector<float> device_features;    // (B, D, Fd), observation version 2 (each env its own cluster)
};

class VectorEnv {
 public:
  // Takes ownership of the envs (at least one). pad_nodes/pad_edges are used by
  // kPadded only and must cover every env's graph.
  VectorEnv(std::vector<std::unique_ptr<Env>> envs, BatchLayout layout, int num_threads = 1, int pad_nodes = 0,
            int pad_edges = 0, int max_episode_steps = 0);

  // Clones `templates[i]` (its graph, cluster and config; state is reset later)
  // for env i. Envs on the same Graph object share it and its static observation.
  static std::unique_ptr<VectorEnv> from_templates(const std::vector<const Env*>& templates, BatchLayout layout,
                                                   int num_threads = 1, int pad_nodes = 0, int pad_edges = 0,
                                                   int max_episode_steps = 0);
  // `ids[i % ids.size()]` for env i; one graph is built per distinct id.
  static std::unique_ptr<VectorEnv> make(const std::vector<std::string>& ids, int num_envs, const EnvConfig& config,
                                         int num_threads = 1, bool padded = false, int pad_nodes = 0,
                                         int pad_edges = 0, int max_episode_steps = 0);

  int num_envs() const { return static_cast<int>(envs_.size()); }
  int num_threads() const { return num_threads_; }
  void set_num_threads(int num_threads);
  BatchLayout layout() const { return layout_; }
  bool same_graph() const { return same_graph_; }
  bool node_mode() const { return envs_.front()->node_mode(); }
  int max_episode_steps() const { return max_episode_steps_; }
  Env& env(int i);
  const Env& env(int i) const;

  int node_state_dim() const { return node_state_dim_; }
  int observation_version() const { return envs_.front()->observation_version(); }
  int device_state_dim() const { return device_state_dim_; }
  int device_feature_dim() const { return device_feature_dim_; }
  int action_mask_width() const { return action_mask_width_; }
  int global_dim() const { return global_dim_; }
  int num_devices() const { return num_devices_; }
  int max_nodes() const { return max_nodes_; }  // largest graph (padded: pad_nodes)
  int max_edges() const { return max_edges_; }
  std::int64_t node_rows() const { return node_rows_; }
  std::int64_t node_offset(int i) const { return node_offset_[i]; }
  std::int64_t total_nodes() const { return total_nodes_; }  // sum of the graphs' nodes
  std::int64_t total_edges() const { return total_edges_; }
  // First node of env i in the concatenated order (sum of earlier envs' nodes).
  std::int64_t concat_offset(int i) const { return concat_offset_[i]; }
  const BatchedStatic& static_observation() const { return static_; }

  // Seeds: B values (env i's episode seeds are derived from seeds[i] alone).
  // mask: null = every env; else B bytes, nonzero = reset that env; the others
  // are observed as they are (they must have been reset before).
  // starts: null, or one per env (an empty Solution: that env's own start), for this reset only
  // (later autoresets begin from each env's own start); all checked before any env changes.
  void reset(const std::uint64_t* seeds, const std::uint8_t* mask, const BatchBuffers& out,
             const std::vector<Solution>* starts = nullptr);
  // actions: one pointer per head (heads() order), laid out as `layout` says.
  void step(const std::int64_t* const* actions, const ActionLayout& layout, const BatchBuffers& out);
  // Same-step autoreset on demand (Gymnasium's SAME_STEP mode): resets now every
  // env whose last step ended its episode, with the next seed of its own
  // sequence, exactly as the next step() would, and writes those envs'
  // observations into `out` (only node_state, action_mask and globals are
  // written; the last step's rewards and info stay as they are). Returns how many.
  int reset_finished(const BatchBuffers& out);

  // Buffers owned by the VectorEnv, allocated on first use and reused by every
  // step that is handed them (callers that want fresh arrays pass their own).
  const BatchBuffers& owned_buffers();

  // Snapshot of every env plus the autoreset flags and seed sequences (cereal
  // bytes); set_state() on a VectorEnv of the same envs reproduces the future.
  // set_state() checks every env's state and the flags against it; a bad one (any
  // env) changes nothing: the envs restored before it get their previous state back.
  std::string get_state() const;
  void set_state(const std::string& state);

  // Wall time of the last step()/reset() call (C++ side only), for overhead measurements.
  double last_call_seconds() const { return last_call_seconds_; }

  std::mutex& guard() const { return guard_.mutex(); }

 private:
  void build_static();
  void write_info(int i, const BatchBuffers& out, double reward, bool terminated, bool truncated);
  void zero_padding(int i, const BatchBuffers& out);
  float* device_state_of(int i, const BatchBuffers& out) const;  // env i's rows, or null
  template <typename F>
  void parallel_for_envs(F&& body, bool timed = false);
  bool choose_threads();  // for the step about to run (see ThreadChoice in vector_env.cc)

  std::vector<std::unique_ptr<Env>> envs_;
  BatchLayout layout_;
  int num_threads_ = 1;
  bool same_graph_ = true;
  int node_state_dim_ = 0, action_mask_width_ = 0, global_dim_ = 0, num_devices_ = 0;
  int device_state_dim_ = 0, device_feature_dim_ = 0;
  int max_nodes_ = 0, max_edges_ = 0, max_episode_steps_ = 0;
  std::int64_t node_rows_ = 0, total_nodes_ = 0, total_edges_ = 0;
  std::vector<std::int64_t> node_offset_, concat_offset_;
  BatchedStatic static_;
  // Per-env episode bookkeeping.
  std::vector<std::uint8_t> autoreset_, has_reset_;  // has_reset: reset by this VectorEnv (or restored)
  std::vector<std::uint64_t> seed_, episode_;
  std::vector<std::int32_t> episode_steps_;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::vector<const std::int64_t*>> env_actions_;  // per env: one pointer per head
  // Owned buffers.
  bool owned_ready_ = false;
  BatchBuffers owned_;
  std::vector<float> own_node_state_, own_globals_, own_device_state_;
  std::vector<std::int8_t> own_action_mask_;
  std::vector<double> own_reward_, own_runtime_, own_initial_runtime_, own_speedup_, own_lower_bound_,
      own_peak_memory_;
  std::vector<std::uint8_t> own_terminated_, own_truncated_, own_oom_, own_invalid_;
  std::vector<double> own_rejected_runtime_, own_best_runtime_;
  std::vector<std::int64_t> own_colocation_moved_;
  double last_call_seconds_ = 0;
  // Threads or not for step(), chosen from measured blocks of steps (vector_env.cc).
  struct ThreadChoice {
    bool threads = false;            // the mode in use outside probes
    bool probing = true;             // running a block of `mode` to measure it
    bool mode = false;               // the mode of the current block
    int block_calls = 0;             // calls made in the current block
    double block_best = 0;           // shortest measured cycle of the current block
    double best[2] = {-1, -1};       // last block's shortest cycle per mode (-1: never measured)
    std::int64_t calls_since_probe = 0, probe_interval = 0;
    bool has_last = false;
    std::chrono::steady_clock::time_point last_start;
  } choice_;
  Guard guard_;
};

// The seed of env episode `episode` given the env's reset seed (splitmix64 mix).
std::uint64_t episode_seed(std::uint64_t seed, std::uint64_t episode);
// OpenMP's thread count for a parallel region here (OMP_NUM_THREADS, else the cores).
int default_num_threads();

}  // namespace goenv
