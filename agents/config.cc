// AgentConfig fields by name, validation, and PolicySpec (torch-free).
#include <algorithm>
#include <cmath>
#include <sstream>
#include <variant>

#include "agents/config.h"
#include "core/error.h"
#include "envs/baselines/baseline.h"
#include "envs/observation.h"
#include "envs/threads.h"

namespace goenv::agents {

namespace {

using Member = std::variant<int AgentConfig::*, std::int64_t AgentConfig::*, double AgentConfig::*,
                            bool AgentConfig::*, std::string AgentConfig::*>;

struct Field {
  ConfigField description;
  Member member;
};

const std::vector<Field>& fields() {
  static const std::vector<Field> table = {
      {{"algorithm", 's', "'ppo' (GraphSAGE + per-node MLP heads) or 'go' (GraphSAGE + segment attention + FiLM)"},
       &AgentConfig::algorithm},
      {{"hidden", 'i', "embedding width"}, &AgentConfig::hidden},
      {{"sage_layers", 'i', "GraphSAGE depth"}, &AgentConfig::sage_layers},
      {{"attention_layers", 'i', "go: segment-recurrent attention layers"}, &AgentConfig::attention_layers},
      {{"attention_heads", 'i', "go: heads per attention layer (divides hidden)"}, &AgentConfig::attention_heads},
      {{"segment_length", 'i', "go: nodes per segment; memory = the previous segment"}, &AgentConfig::segment_length},
      {{"device_head", 's', "go: 'absolute' (a logit per device id: one device count) or 'pairs' (a score per "
                            "(unit, device) pair: any cluster)"},
       &AgentConfig::device_head},
      {{"learning_rate", 'd', "Adam step size"}, &AgentConfig::learning_rate},
      {{"clip", 'd', "PPO surrogate clip range"}, &AgentConfig::clip},
      {{"value_coef", 'd', "weight of the value loss"}, &AgentConfig::value_coef},
      {{"entropy_coef", 'd', "weight of the mean per-node entropy bonus"}, &AgentConfig::entropy_coef},
      {{"max_grad_norm", 'd', "gradient clipping norm (0 = none)"}, &AgentConfig::max_grad_norm},
      {{"gamma", 'd', "discount"}, &AgentConfig::gamma},
      {{"gae_lambda", 'd', "GAE lambda"}, &AgentConfig::gae_lambda},
      {{"epochs", 'i', "passes over each rollout"}, &AgentConfig::epochs},
      {{"minibatches", 'i', "minibatches per epoch"}, &AgentConfig::minibatches},
      {{"envs_per_graph", 'i', "env copies stepped per graph"}, &AgentConfig::envs_per_graph},
      {{"rollout_length", 'i', "steps per env copy per update (0 = the env horizon)"}, &AgentConfig::rollout_length},
      {{"graphs_per_update", 'i', "graphs per update, round-robin (0 = all)"}, &AgentConfig::graphs_per_update},
      {{"normalize_advantages", 'b', "normalize advantages per graph"}, &AgentConfig::normalize_advantages},
      {{"target_kl", 'd', "stop an update early above 1.5 x this KL (0 = never)"}, &AgentConfig::target_kl},
      {{"entropy_coef_final", 'd', "entropy_coef decays linearly to this over entropy_decay_steps (-1 = no decay)"},
       &AgentConfig::entropy_coef_final},
      {{"entropy_decay_steps", 'i', "env steps of the entropy decay (after imitate(), else from the start)"},
       &AgentConfig::entropy_decay_steps},
      {{"teacher", 's', "what imitate() copies: a baseline name, or 'best' (the best heuristic by simulated runtime)"},
       &AgentConfig::teacher},
      {{"imitation_flips", 'd', "label smoothing of imitation: sampled decisions differ from the teacher's in about "
                                "this many decision units (0 = plain cross-entropy)"},
       &AgentConfig::imitation_flips},
      {{"teacher_coef", 'd', "PPO: weight of the cross-entropy toward an imitated graph's teacher, at the start"},
       &AgentConfig::teacher_coef},
      {{"teacher_decay_steps", 'i', "env steps after imitate() over which teacher_coef decays to 0 (0 = never)"},
       &AgentConfig::teacher_decay_steps},
      {{"teacher_baseline", 'b', "PPO: one-shot advantages against the teacher's reward on imitated graphs"},
       &AgentConfig::teacher_baseline},
      {{"teacher_update", 'b', "PPO: a sampled decision better than the teacher becomes the teacher (self-imitation)"},
       &AgentConfig::teacher_update},
      {{"canonical_teacher", 'b', "imitation: a teacher's interchangeable devices (equal static features) are "
                                  "renumbered in order of first use along the topological order, so that its labels "
                                  "say which part of the graph stays where the default put it"},
       &AgentConfig::canonical_teacher},
      {{"seed", 'i', "seeds parameters, sampling and env resets"}, &AgentConfig::seed},
      {{"num_threads", 'i', "torch intra-op threads inside train/act/evaluate, restored after (0 = torch's setting)"}, &AgentConfig::num_threads},
      {{"device", 's', "'auto', 'cpu' or 'cuda'"}, &AgentConfig::device},
  };
  return table;
}

const Field& field(const std::string& name) {
  for (const Field& f : fields())
    if (f.description.name == name) return f;
  std::string known;
  for (const Field& f : fields()) known += (known.empty() ? "" : ", ") + f.description.name;
  GOENV_FAIL(InvalidArgument, "unknown agent option '" << name << "'; the options are " << known);
}

}  // namespace

const std::vector<ConfigField>& config_fields() {
  static const std::vector<ConfigField> list = [] {
    std::vector<ConfigField> out;
    for (const Field& f : fields()) out.push_back(f.description);
    return out;
  }();
  return list;
}

void set_config(AgentConfig& config, const std::string& name, double value) {
  const Field& f = field(name);
  GOENV_CHECK(f.description.type != 's', InvalidArgument, "agent option '" << name << "' takes a string");
  GOENV_CHECK(std::isfinite(value), InvalidArgument, "agent option '" << name << "' must be finite, got " << value);
  if (f.description.type == 'i' || f.description.type == 'b')
    GOENV_CHECK(value == std::floor(value) && std::abs(value) < 9.2e18, InvalidArgument,
                "agent option '" << name << "' must be an integer, got " << value);
  if (f.description.type == 'b')
    GOENV_CHECK(value == 0 || value == 1, InvalidArgument, "agent option '" << name << "' must be a bool, got " << value);
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(config.*member)>;
        if constexpr (std::is_same_v<T, std::string>) {
        } else if constexpr (std::is_same_v<T, int>) {
          GOENV_CHECK(std::abs(value) < 2.1e9, InvalidArgument, "agent option '" << name << "' is out of range: " << value);
          config.*member = static_cast<int>(value);
        } else if constexpr (std::is_same_v<T, bool>) {
          config.*member = value != 0;
        } else {
          config.*member = static_cast<T>(value);
        }
      },
      f.member);
}

void set_config(AgentConfig& config, const std::string& name, std::int64_t value) {
  const Field& f = field(name);
  GOENV_CHECK(f.description.type == 'i' || f.description.type == 'b', InvalidArgument,
              "agent option '" << name << "' takes " << (f.description.type == 's' ? "a string" : "a number"));
  if (f.description.type == 'b')
    GOENV_CHECK(value == 0 || value == 1, InvalidArgument, "agent option '" << name << "' must be a bool, got " << value);
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(config.*member)>;
        if constexpr (std::is_same_v<T, int>) {
          GOENV_CHECK(value >= INT32_MIN && value <= INT32_MAX, InvalidArgument,
                      "agent option '" << name << "' is out of range: " << value);
          config.*member = static_cast<int>(value);
        } else if constexpr (std::is_same_v<T, bool>) {
          config.*member = value != 0;
        } else if constexpr (std::is_integral_v<T>) {
          config.*member = static_cast<T>(value);
        }
      },
      f.member);
}

void set_config(AgentConfig& config, const std::string& name, const std::string& value) {
  const Field& f = field(name);
  if (f.description.type == 's') {
    config.*std::get<std::string AgentConfig::*>(f.member) = value;
    return;
  }
  if (f.description.type == 'i' || f.description.type == 'b') {  // exactly, when the text is a whole number
    std::size_t used = 0;
    std::int64_t whole = 0;
    try {
      whole = std::stoll(value, &used);
    } catch (const std::logic_error&) {
      used = 0;
    }
    if (used == value.size() && used > 0) {
      set_config(config, name, whole);
      return;
    }
  }
  std::istringstream in(value);
  double number = 0;
  in >> number;
  GOENV_CHECK(!in.fail() && in.eof(), InvalidArgument, "agent option '" << name << "' must be a number, got '" << value << "'");
  set_config(config, name, number);
}

std::map<std::string, std::string> config_to_text(const AgentConfig& config) {
  std::map<std::string, std::string> out;
  for (const Field& f : fields()) {
    std::ostringstream os;
    os.precision(17);
    std::visit([&](auto member) { os << config.*member; }, f.member);
    out[f.description.name] = os.str();
  }
  return out;
}

AgentConfig config_from_text(const std::map<std::string, std::string>& text) {
  AgentConfig config;
  for (const auto& [name, value] : text) set_config(config, name, value);
  return config;
}

namespace {
bool in_range(double x, double low, double high) { return x >= low && x <= high; }  // false for NaN
}  // namespace

void validate(const AgentConfig& c) {
  GOENV_CHECK(c.algorithm == "ppo" || c.algorithm == "go", InvalidArgument,
              "algorithm must be 'ppo' or 'go', got '" << c.algorithm << "'");
  GOENV_CHECK(c.device_head == "absolute" || c.device_head == "pairs", InvalidArgument,
              "device_head must be 'absolute' or 'pairs', got '" << c.device_head << "'");
  GOENV_CHECK(c.device_head == "absolute" || c.algorithm == "go", InvalidArgument,
              "device_head='pairs' is a GO policy's placement head; use algorithm='go'");
  GOENV_CHECK(c.hidden >= 1 && c.hidden <= 4096, InvalidArgument, "hidden must be in [1, 4096], got " << c.hidden);
  GOENV_CHECK(c.sage_layers >= 0 && c.sage_layers <= 64, InvalidArgument, "sage_layers must be in [0, 64], got " << c.sage_layers);
  GOENV_CHECK(c.attention_layers >= 0 && c.attention_layers <= 64, InvalidArgument,
              "attention_layers must be in [0, 64], got " << c.attention_layers);
  GOENV_CHECK(c.attention_heads >= 1 && c.hidden % c.attention_heads == 0, InvalidArgument,
              "attention_heads must be >= 1 and divide hidden=" << c.hidden << ", got " << c.attention_heads);
  // Every count and coefficient has an upper bound too: a checkpoint carries them, and a file
  // must not make training loop for ever or overflow (docs/limits.md).
  GOENV_CHECK(c.segment_length >= 1 && c.segment_length <= (1 << 24), InvalidArgument,
              "segment_length must be in [1, 16777216], got " << c.segment_length);
  GOENV_CHECK(c.learning_rate > 0 && c.learning_rate <= 10, InvalidArgument,
              "learning_rate must be in (0, 10], got " << c.learning_rate);
  GOENV_CHECK(c.clip > 0 && c.clip <= 10, InvalidArgument, "clip must be in (0, 10], got " << c.clip);
  GOENV_CHECK(
      in_range(c.value_coef, 0, 1e3) && in_range(c.entropy_coef, 0, 1e3) && in_range(c.max_grad_norm, 0, 1e6),
      InvalidArgument, "value_coef and entropy_coef must be in [0, 1000], max_grad_norm in [0, 1e6]");
  GOENV_CHECK(c.gamma >= 0 && c.gamma <= 1 && c.gae_lambda >= 0 && c.gae_lambda <= 1, InvalidArgument,
              "gamma and gae_lambda must be in [0, 1], got " << c.gamma << " and " << c.gae_lambda);
  GOENV_CHECK(c.epochs >= 1 && c.epochs <= 1000 && c.minibatches >= 1 && c.minibatches <= 65536, InvalidArgument,
              "epochs must be in [1, 1000] and minibatches in [1, 65536], got " << c.epochs << " and " << c.minibatches);
  GOENV_CHECK(c.envs_per_graph >= 1 && c.envs_per_graph <= 4096, InvalidArgument,
              "envs_per_graph must be in [1, 4096], got " << c.envs_per_graph);
  GOENV_CHECK(c.rollout_length >= 0 && c.rollout_length <= (1 << 24) && c.graphs_per_update >= 0 &&
                  c.graphs_per_update <= (1 << 24),
              InvalidArgument, "rollout_length and graphs_per_update must be in [0, 16777216]");
  GOENV_CHECK(in_range(c.target_kl, 0, 1e3), InvalidArgument, "target_kl must be in [0, 1000], got " << c.target_kl);
  GOENV_CHECK(c.entropy_coef_final == -1 || in_range(c.entropy_coef_final, 0, 1e3), InvalidArgument,
              "entropy_coef_final must be in [0, 1000] or -1 (no decay), got " << c.entropy_coef_final);
  GOENV_CHECK(c.entropy_decay_steps >= 0 && c.teacher_decay_steps >= 0, InvalidArgument,
              "entropy_decay_steps and teacher_decay_steps must be >= 0");
  GOENV_CHECK(in_range(c.imitation_flips, 0, 1e6), InvalidArgument,
              "imitation_flips must be in [0, 1e6], got " << c.imitation_flips);
  GOENV_CHECK(in_range(c.teacher_coef, 0, 1e3), InvalidArgument,
              "teacher_coef must be in [0, 1000], got " << c.teacher_coef);
  const std::vector<std::string> baselines = baseline_names();  // of any task: imitate() checks the env's
  GOENV_CHECK(c.teacher == "best" || std::find(baselines.begin(), baselines.end(), c.teacher) != baselines.end(),
              InvalidArgument, "teacher must be 'best' or a baseline's name (goenv.baselines.list()), got '"
                                   << c.teacher << "'");
  GOENV_CHECK(c.seed >= 0, InvalidArgument, "seed must be >= 0, got " << c.seed);
  GOENV_CHECK(c.num_threads >= 0 && c.num_threads <= kMaxThreads, InvalidArgument,
              "num_threads must be in [0, " << kMaxThreads << "] (0 = torch's setting), got " << c.num_threads);
  GOENV_CHECK(c.device == "auto" || c.device == "cpu" || c.device == "cuda", InvalidArgument,
              "device must be 'auto', 'cpu' or 'cuda', got '" << c.device << "'");
}

PolicySpec PolicySpec::of(const Env& env, const AgentConfig& config) {
  // Here, not only in training: an agent set up on a node-mode env would fail only later.
  GOENV_CHECK(!env.node_mode(), InvalidArgument,
              env.id() << ": the agents decide whole graphs; decision_mode='node' is not supported");
  const bool pairs = config.device_head == "pairs";
  PolicySpec spec;
  spec.node_feature_dim = env.static_observation().node_feature_dim;
  spec.node_state_dim = goenv::node_state_dim(pairs ? 0 : env.cluster().num_devices(), kPolicyObservationVersion);
  spec.global_dim = static_cast<int>(global_names().size());
  spec.heads = env.heads();
  for (Head h : spec.heads) spec.choices.push_back(pairs && h == Head::kPlacement ? kAnyDevices : env.choices(h));
  return spec;
}

bool PolicySpec::any_devices() const {
  return std::find(choices.begin(), choices.end(), kAnyDevices) != choices.end();
}

ObservationDims PolicySpec::dims(int num_devices) const {
  ObservationDims d;
  d.num_devices = num_devices;
  d.node_state = node_state_dim + (any_devices() ? num_devices : 0);
  d.globals = global_dim;
  for (int c : choices) {
    d.choices.push_back(c == kAnyDevices ? num_devices : c);
    d.action_mask += d.choices.back();
  }
  return d;
}

int PolicySpec::action_mask_width() const {
  int width = 0;
  for (int c : choices) width += c;
  return width;
}

std::string PolicySpec::describe() const {
  std::ostringstream os;
  os << "node_feature_dim=" << node_feature_dim << " node_state_dim=" << node_state_dim << " global_dim=" << global_dim
     << (any_devices() ? " (+ one-hot devices)" : "") << " heads=";
  for (std::size_t i = 0; i < heads.size(); ++i)
    os << (i ? "," : "") << head_name(heads[i]) << ":" << (choices[i] == kAnyDevices ? "any" : std::to_string(choices[i]));
  return os.str();
}

bool PolicySpec::operator==(const PolicySpec& o) const {
  return node_feature_dim == o.node_feature_dim && node_state_dim == o.node_state_dim && global_dim == o.global_dim &&
         heads == o.heads && choices == o.choices;
}

}  // namespace goenv::agents
