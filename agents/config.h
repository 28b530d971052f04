// An agent's settings (AgentConfig: every hyperparameter, settable by name
// from Python keywords, the CLI's --option and checkpoints) and what its policy
// is built for (PolicySpec). Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "envs/env.h"

namespace goenv::agents {

// Every hyperparameter, settable by name (Python keyword arguments, checkpoints).
struct AgentConfig {
  std::string algorithm = "ppo";  // "ppo" | "go"
  // Network.
  int hidden = 64;              // embedding width
  int sage_layers = 2;          // GraphSAGE depth
  int attention_layers = 2;     // go: segment-recurrent attention layers
  int attention_heads = 4;      // go: heads per attention layer (must divide hidden)
  int segment_length = 512;     // go: nodes per segment; memory = the previous segment
  // go: how the placement head names devices. "absolute": one logit per device id
  // (one policy serves one device count); "pairs": a score per (unit, device)
  // pair from node, device and pair features (one policy serves any cluster, and
  // relabelling the devices permutes its output).
  std::string device_head = "absolute";
  // PPO.
  double learning_rate = 1e-3;
  double clip = 0.2;            // surrogate clip range
  double value_coef = 0.5;
  double entropy_coef = 0.01;   // bonus on the mean per-node entropy
  double max_grad_norm = 0.5;
  double gamma = 1.0;           // discount (one-shot episodes: irrelevant)
  double gae_lambda = 0.95;
  int epochs = 4;               // passes over each rollout
  int minibatches = 2;          // per epoch
  int envs_per_graph = 16;      // env copies stepped per graph per rollout step
  int rollout_length = 0;       // steps per env copy per update; 0 = the env horizon
  int graphs_per_update = 0;    // graphs per update, taken round-robin; 0 = all
  bool normalize_advantages = true;  // per graph
  double target_kl = 0;         // stop an update's epochs early above 1.5 x this; 0 = never
  double entropy_coef_final = -1;  // entropy_coef decays linearly to this over entropy_decay_steps (-1 = no decay)
  std::int64_t entropy_decay_steps = 0;
  // Imitation and fine-tuning (see the contract above).
  std::string teacher = "best";     // a baseline name, or "best" (the best heuristic by simulated runtime)
  double imitation_flips = 4.0;     // label smoothing: sampled decisions differ from the teacher's in about this many units
  double teacher_coef = 1.0;        // weight of the cross-entropy toward the teacher in PPO, at the start
  std::int64_t teacher_decay_steps = 1024;  // env steps after imitate() over which it decays to 0 (0 = never decays)
  bool teacher_baseline = false;    // one-shot advantages against the teacher's reward (else centred per graph)
  bool teacher_update = true;       // a sampled decision better than the teacher becomes the teacher (self-imitation)
  bool canonical_teacher = false;   // a teacher's interchangeable devices renumbered by first use in topological order
  // Runtime.
  std::int64_t seed = 0;
  int num_threads = 0;          // torch intra-op threads inside train/act/evaluate (restored after); 0 = torch's
  std::string device = "auto";  // "auto" (CUDA when available) | "cpu" | "cuda"
};

// Name, type ('i' integer, 'd' real, 'b' bool, 's' string) and meaning of each field.
struct ConfigField {
  std::string name;
  char type;
  std::string help;
};
const std::vector<ConfigField>& config_fields();
// Setters by name: unknown names raise InvalidArgument listing the known ones;
// numbers must fit the field's type (integral for 'i', 0/1 for 'b').
void set_config(AgentConfig& config, const std::string& name, double value);
// An integer or bool option ('i', 'b') exactly: an int64 seed past 2**53 stays itself.
void set_config(AgentConfig& config, const std::string& name, std::int64_t value);
void set_config(AgentConfig& config, const std::string& name, const std::string& value);
// Every field as text (checkpoints), and back.
std::map<std::string, std::string> config_to_text(const AgentConfig& config);
AgentConfig config_from_text(const std::map<std::string, std::string>& text);
// Throws InvalidArgument naming the first bad value.
void validate(const AgentConfig& config);

// The observation version the reference policies read (envs/observation.h).
// Envs of a later version are copied at this one (sampler.h: copy_env), and a
// later observation's node_state is read through its version-1 prefix.
inline constexpr int kPolicyObservationVersion = 1;

// A head's choices in a spec that serves any device count (device_head "pairs").
inline constexpr int kAnyDevices = 0;

// The widths of one graph's observation arrays as a policy reads them.
struct ObservationDims {
  int node_state = 0, action_mask = 0, globals = 0;
  int num_devices = 0;       // D of the graph's cluster
  std::vector<int> choices;  // per head, on this graph
};

// What a policy's input and output layers are built for.
struct PolicySpec {
  int node_feature_dim = 0, global_dim = 0;
  // node_state columns; with any_devices() the columns after the D one-hot device ones.
  int node_state_dim = 0;
  std::vector<Head> heads;   // decision heads, in action order
  std::vector<int> choices;  // values per node of each head (placement: kAnyDevices with device_head "pairs")
  static PolicySpec of(const Env& env, const AgentConfig& config);
  bool any_devices() const;  // the placement head serves any device count
  ObservationDims dims(int num_devices) const;
  int action_mask_width() const;  // absolute specs only (any_devices(): dims(D).action_mask)
  std::string describe() const;  // "F=.. S=.. G=.. heads=placement:2"
  bool operator==(const PolicySpec& other) const;
  bool operator!=(const PolicySpec& other) const { return !(*this == other); }
};

}  // namespace goenv::agents
