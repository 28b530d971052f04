#include "agents/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>
#include <type_traits>

#include "core/error.h"
#include "core/hash.h"

namespace goenv::agents::checkpoint {

namespace {

constexpr char kFormatName[] = "goenv-agent";
constexpr char kLegacyMagic[8] = {'G', 'O', 'E', 'N', 'V', 'A', 'G', 'T'};  // formats 1 and 2
// Trained weights stay within a few units; this bound leaves room for any training yet keeps
// every forward pass finite in float32.
constexpr double kMaxWeight = 1e6;
constexpr int kMaxSpecWidth = 1 << 16;  // feature, state and global widths; choices per head

std::string teacher_name(std::uint64_t key, std::size_t head) {
  return "teacher." + std::to_string(key) + "." + std::to_string(head);
}

// Every tensor of the model, in the order written: parameters, buffers, Adam's
// state per parameter (where it has one), the generators, the teachers' decisions.
std::vector<safetensors::Named> model_tensors(const Model& m) {
  std::vector<safetensors::Named> out;
  if (!m.ready) return out;
  for (const auto& p : m.policy->named_parameters()) out.push_back({"policy." + p.key(), p.value()});
  for (const auto& b : m.policy->named_buffers()) out.push_back({"policy_buffer." + b.key(), b.value()});
  const auto& state = m.optimizer->state();
  for (const auto& p : m.policy->named_parameters()) {
    const auto it = state.find(p.value().unsafeGetTensorImpl());
    if (it == state.end()) continue;
    const auto& s = static_cast<const torch::optim::AdamParamState&>(*it->second);
    out.push_back({"adam." + p.key() + ".step", torch::tensor({s.step()}, torch::kInt64)});
    out.push_back({"adam." + p.key() + ".exp_avg", s.exp_avg()});
    out.push_back({"adam." + p.key() + ".exp_avg_sq", s.exp_avg_sq()});
  }
  out.push_back({"generator.sampling", m.sampling.get_state()});
  out.push_back({"generator.shuffling", m.shuffling.get_state()});
  for (const auto& [key, entry] : m.teachers)
    for (std::size_t h = 0; h < entry.teacher.actions.size(); ++h)
      out.push_back({teacher_name(key, h), torch::tensor(entry.teacher.actions[h], torch::kInt64)});
  return out;
}

std::string full_precision(double x) {
  std::ostringstream os;
  os.precision(17);
  os << x;
  return os.str();
}

// "method;runtime;reward;calls", numbers in full precision.
std::string teacher_line(const Teacher& t) {
  return t.method + ';' + full_precision(t.runtime) + ';' + full_precision(t.reward) + ';' +
         std::to_string(t.simulator_calls);
}

std::string head_list(const PolicySpec& spec) {
  std::ostringstream out;
  for (std::size_t i = 0; i < spec.heads.size(); ++i)
    out << (i ? "," : "") << head_name(spec.heads[i]) << ":"
        << (spec.choices[i] == kAnyDevices ? std::string("any") : std::to_string(spec.choices[i]));
  return out.str();
}

std::map<std::string, std::string> metadata_of(const Model& m, std::size_t next_slot) {
  std::map<std::string, std::string> meta;
  for (const auto& [key, value] : config_to_text(m.config)) meta["config." + key] = value;
  meta["goenv_version"] = GOENV_VERSION;  // which goenv saved it: for people, not checked when read
  meta["has_policy"] = m.ready ? "1" : "0";
  meta["steps_trained"] = std::to_string(m.steps_trained);
  meta["version"] = std::to_string(m.weights.version);
  meta["updates"] = std::to_string(m.updates);
  meta["schedule_origin"] = std::to_string(m.schedule_origin);
  meta["next_slot"] = std::to_string(next_slot);
  if (m.ready) {
    meta["spec.node_feature_dim"] = std::to_string(m.spec.node_feature_dim);
    meta["spec.node_state_dim"] = std::to_string(m.spec.node_state_dim);
    meta["spec.global_dim"] = std::to_string(m.spec.global_dim);
    meta["spec.heads"] = head_list(m.spec);
  }
  for (const auto& [key, entry] : m.teachers) meta["teacher." + std::to_string(key)] = teacher_line(entry.teacher);
  return meta;
}

std::string hex(std::uint64_t x) {
  std::ostringstream os;
  os << std::hex << x;
  return os.str();
}

// --- reading ------------------------------------------------------------------

// `text` as a whole number in [low, high] (std::stoll / std::stoull syntax, all of it used).
template <typename T>
T whole_number(const std::string& text, const std::string& what, T low, T high) {
  std::size_t used = 0;
  T value = 0;
  try {
    if constexpr (std::is_signed_v<T>) value = std::stoll(text, &used);
    else if (text.find('-') == std::string::npos) value = std::stoull(text, &used);  // stoull wraps negatives
  } catch (const std::logic_error&) {
    used = 0;
  }
  GOENV_CHECK(used == text.size() && used > 0 && value >= low && value <= high, InvalidArgument,
              "corrupt agent checkpoint: " << what << " must be an integer in [" << low << ", " << high << "], got '"
                                           << text << "'");
  return value;
}

// An integer metadata value within [low, high].
std::int64_t integer(const std::map<std::string, std::string>& meta, const std::string& key, std::int64_t low,
                     std::int64_t high) {
  const auto it = meta.find(key);
  GOENV_CHECK(it != meta.end(), InvalidArgument, "corrupt agent checkpoint: no '" << key << "' in its metadata");
  return whole_number(it->second, key, low, high);
}

double real(const std::string& text, const std::string& what) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::logic_error&) {
    used = 0;
  }
  GOENV_CHECK(used == text.size() && used > 0 && std::isfinite(value), InvalidArgument,
              "corrupt agent checkpoint: " << what << " is not a finite number: '" << text << "'");
  return value;
}

PolicySpec parse_spec(const std::map<std::string, std::string>& meta) {
  PolicySpec spec;
  spec.node_feature_dim = static_cast<int>(integer(meta, "spec.node_feature_dim", 1, kMaxSpecWidth));
  spec.node_state_dim = static_cast<int>(integer(meta, "spec.node_state_dim", 0, kMaxSpecWidth));
  spec.global_dim = static_cast<int>(integer(meta, "spec.global_dim", 0, kMaxSpecWidth));
  const auto it = meta.find("spec.heads");
  GOENV_CHECK(it != meta.end(), InvalidArgument, "corrupt agent checkpoint: no 'spec.heads' in its metadata");
  std::istringstream in(it->second);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto colon = item.find(':');
    GOENV_CHECK(colon != std::string::npos, InvalidArgument, "corrupt agent checkpoint: bad head '" << item << "'");
    const std::string name = item.substr(0, colon);
    Head head;
    if (name == "placement") head = Head::kPlacement;
    else if (name == "priority") head = Head::kPriority;
    else if (name == "fusion") head = Head::kFusion;
    else GOENV_FAIL(InvalidArgument, "corrupt agent checkpoint: unknown head '" << name << "'");
    GOENV_CHECK(std::find(spec.heads.begin(), spec.heads.end(), head) == spec.heads.end(), InvalidArgument,
                "corrupt agent checkpoint: head '" << name << "' twice");
    spec.heads.push_back(head);
    const std::string choices = item.substr(colon + 1);
    spec.choices.push_back(head == Head::kPlacement && choices == "any"  // device_head "pairs": any cluster
                               ? kAnyDevices
                               : static_cast<int>(whole_number<std::int64_t>(choices, "choices of head '" + name + "'",
                                                                             1, kMaxSpecWidth)));
  }
  GOENV_CHECK(!spec.heads.empty(), InvalidArgument, "corrupt agent checkpoint: the policy has no decision heads");
  return spec;
}

Checkpoint::TeacherHeader parse_teacher(const std::string& key, const std::string& text) {
  std::istringstream in(text);
  std::string method, runtime, reward, calls;
  GOENV_CHECK(std::getline(in, method, ';') && std::getline(in, runtime, ';') && std::getline(in, reward, ';') &&
                  std::getline(in, calls) && !method.empty(),
              InvalidArgument, "corrupt agent checkpoint: bad teacher line '" << text << "'");
  Checkpoint::TeacherHeader t;
  t.key = whole_number<std::uint64_t>(key, "a teacher's key", 0, std::numeric_limits<std::uint64_t>::max());
  t.teacher.method = method;
  t.teacher.runtime = real(runtime, "a teacher's runtime");
  t.teacher.reward = real(reward, "a teacher's reward");
  t.teacher.simulator_calls =
      whole_number<std::int64_t>(calls, "a teacher's simulator calls", 0, std::numeric_limits<std::int64_t>::max());
  return t;
}

std::string legacy_message(const std::string& bytes) {
  std::uint64_t format = 0;
  if (bytes.size() >= 16) std::memcpy(&format, bytes.data() + 8, 8);
  std::ostringstream os;
  os << "this agent checkpoint is in format " << format
     << " (parameters in a TorchScript archive, which can run code when loaded); goenv reads only format "
     << kFormat << " (safetensors). Convert it without running it: python -m goenv.agents.convert OLD NEW";
  return os.str();
}

}  // namespace

std::string write(const Model& m, std::size_t next_slot) {
  return write_file(metadata_of(m, next_slot), model_tensors(m));
}

std::string write_file(std::map<std::string, std::string> meta, const std::vector<safetensors::Named>& tensors) {
  meta["format"] = kFormatName;
  meta["format_version"] = std::to_string(kFormat);
  const std::string data = safetensors::data_section(tensors);
  meta["checksum"] = hex(hash_bytes(data.data(), data.size()));
  return safetensors::write(meta, tensors, data);
}

Checkpoint parse(const std::string& bytes) {
  GOENV_CHECK(!(bytes.size() >= 8 && std::memcmp(bytes.data(), kLegacyMagic, 8) == 0), InvalidArgument,
              legacy_message(bytes));
  Checkpoint c;
  c.file = safetensors::read(bytes, "goenv agent checkpoint");
  std::map<std::string, std::string>& meta = c.file.metadata;
  GOENV_CHECK(meta["format"] == kFormatName, InvalidArgument,
              "not a goenv agent checkpoint: a safetensors file whose metadata format is '" << meta["format"]
                                                                                            << "', not '" << kFormatName
                                                                                            << "'");
  GOENV_CHECK(meta["format_version"] == std::to_string(kFormat), InvalidArgument,
              "agent checkpoint format " << meta["format_version"] << " is not supported (this goenv reads format "
                                         << kFormat << ")");
  GOENV_CHECK(meta["checksum"] == hex(hash_bytes(bytes.data() + c.file.data_start, c.file.data_size)), InvalidArgument,
              "corrupt agent checkpoint: checksum mismatch");
  std::map<std::string, std::string> config_text;
  for (const auto& [key, value] : meta)
    if (key.rfind("config.", 0) == 0) config_text[key.substr(7)] = value;
  c.config = config_from_text(config_text);
  validate(c.config);
  const std::int64_t most = std::numeric_limits<std::int64_t>::max();
  c.has_policy = integer(meta, "has_policy", 0, 1) == 1;
  c.steps_trained = integer(meta, "steps_trained", 0, most);
  c.version = integer(meta, "version", 0, most);
  c.updates = integer(meta, "updates", 0, most);
  c.schedule_origin = integer(meta, "schedule_origin", 0, most);
  c.next_slot = integer(meta, "next_slot", 0, std::numeric_limits<std::int32_t>::max());
  if (c.has_policy) c.spec = parse_spec(meta);
  for (const auto& [key, value] : meta)
    if (key.rfind("teacher.", 0) == 0) c.teachers.push_back(parse_teacher(key.substr(8), value));
  GOENV_CHECK(c.has_policy || (c.file.tensors.empty() && c.teachers.empty()), InvalidArgument,
              "corrupt agent checkpoint: tensors or teachers without a policy");
  return c;
}

namespace {

// Every tensor the file holds is one the model takes, of its shape and dtype, and every tensor
// the model needs is there: checked before any value is copied.
void check_tensors(const Checkpoint& c, const Model& fresh) {
  const auto parameters = fresh.policy->named_parameters();
  struct Slot {
    torch::Tensor like;  // shape and dtype expected
    bool optional = false;
  };
  std::map<std::string, Slot> wanted;
  for (const auto& p : parameters) {
    wanted["policy." + p.key()] = {p.value()};
    for (const char* part : {".exp_avg", ".exp_avg_sq"}) wanted["adam." + p.key() + part] = {p.value(), true};
    wanted["adam." + p.key() + ".step"] = {torch::zeros({1}, torch::kInt64), true};
  }
  for (const auto& b : fresh.policy->named_buffers()) wanted["policy_buffer." + b.key()] = {b.value()};
  // Optional: a checkpoint converted from format 1 has none; the config's seed then seeds them.
  wanted["generator.sampling"] = {fresh.sampling.get_state(), true};
  wanted["generator.shuffling"] = {fresh.shuffling.get_state(), true};
  for (const auto& t : c.teachers)
    for (std::size_t h = 0; h < c.spec.heads.size(); ++h) wanted[teacher_name(t.key, h)] = {torch::Tensor()};
  for (const auto& [name, t] : c.file.tensors) {
    const auto it = wanted.find(name);
    GOENV_CHECK(it != wanted.end(), InvalidArgument,
                "corrupt agent checkpoint: tensor '" << name << "' is not part of this " << c.config.algorithm
                                                     << " policy (" << c.spec.describe() << ")");
    const torch::Tensor& like = it->second.like;
    if (like.defined()) {
      GOENV_CHECK(t.dtype == like.scalar_type() && t.shape == like.sizes().vec(), InvalidArgument,
                  "corrupt agent checkpoint: tensor '" << name << "' is " << safetensors::dtype_name(t.dtype) << " "
                                                       << torch::IntArrayRef(t.shape) << ", the policy has "
                                                       << safetensors::dtype_name(like.scalar_type()) << " " << like.sizes());
    } else {
      GOENV_CHECK(t.dtype == torch::kInt64 && t.shape.size() == 1, InvalidArgument,
                  "corrupt agent checkpoint: teacher decisions '" << name << "' are not a 1-D I64 tensor");
    }
  }
  for (const auto& [name, slot] : wanted)
    GOENV_CHECK(slot.optional || c.file.tensors.count(name), InvalidArgument,
                "corrupt agent checkpoint: tensor '" << name << "' is missing");
  for (const auto& p : parameters) {
    const int present = static_cast<int>(c.file.tensors.count("adam." + p.key() + ".step")) +
                        static_cast<int>(c.file.tensors.count("adam." + p.key() + ".exp_avg")) +
                        static_cast<int>(c.file.tensors.count("adam." + p.key() + ".exp_avg_sq"));
    GOENV_CHECK(present == 0 || present == 3, InvalidArgument,
                "corrupt agent checkpoint: Adam's state of '" << p.key() << "' is incomplete");
  }
}

// Copies the checked tensors into `fresh`: weights, buffers, Adam's state, generators, teachers.
void copy_tensors(const Checkpoint& c, const std::string& bytes, Model& fresh) {
  const auto parameters = fresh.policy->named_parameters();
  auto load = [&](const std::string& name) { return safetensors::copy(c.file, bytes, name); };
  // Values, not only bytes: a weight or Adam moment that is not finite, or beyond kMaxWeight,
  // would overflow a forward pass (or the next update) far from the file that caused it.
  auto values = [&](const std::string& name) {
    torch::Tensor t = load(name);
    GOENV_CHECK(t.numel() == 0 || (t.isfinite().all().item<bool>() && t.abs().max().item<double>() <= kMaxWeight),
                InvalidArgument,
                "corrupt agent checkpoint: tensor '" << name << "' holds a value that is not finite or beyond "
                                                     << kMaxWeight << " in magnitude");
    return t;
  };
  {
    torch::NoGradGuard no_grad;
    for (auto& p : parameters) p.value().copy_(values("policy." + p.key()));
    for (auto& b : fresh.policy->named_buffers()) b.value().copy_(values("policy_buffer." + b.key()));
  }
  for (const auto& p : parameters) {
    if (!c.file.tensors.count("adam." + p.key() + ".step")) continue;
    auto state = std::make_unique<torch::optim::AdamParamState>();
    const std::int64_t step = load("adam." + p.key() + ".step").item<std::int64_t>();
    // Adam's bias correction divides by 1 - beta^step: a negative or overflowing count is NaN.
    GOENV_CHECK(step >= 0 && step <= (std::int64_t{1} << 53), InvalidArgument,
                "corrupt agent checkpoint: Adam's step count of '" << p.key() << "' is " << step << ", not in [0, 2^53]");
    state->step(step);
    state->exp_avg(values("adam." + p.key() + ".exp_avg").to(fresh.device));
    state->exp_avg_sq(values("adam." + p.key() + ".exp_avg_sq").to(fresh.device));
    fresh.optimizer->state()[p.value().unsafeGetTensorImpl()] = std::move(state);
  }
  if (c.file.tensors.count("generator.sampling")) fresh.sampling.set_state(load("generator.sampling"));
  if (c.file.tensors.count("generator.shuffling")) fresh.shuffling.set_state(load("generator.shuffling"));
  fresh.steps_trained = c.steps_trained;
  fresh.weights.version = c.version;
  fresh.updates = c.updates;
  fresh.schedule_origin = c.schedule_origin;
  for (const auto& header : c.teachers) {
    TeacherEntry entry{header.teacher, {}};
    entry.verified = false;  // re-simulated when its graph is met (Model::teachers' contract)
    for (std::size_t h = 0; h < c.spec.heads.size(); ++h) {
      const torch::Tensor values = load(teacher_name(header.key, h));
      entry.teacher.actions.emplace_back(values.data_ptr<std::int64_t>(), values.data_ptr<std::int64_t>() + values.numel());
    }
    fresh.teachers[header.key] = std::move(entry);
  }
}

}  // namespace

Model read(const Checkpoint& c, const std::string& bytes) {
  Model fresh(c.config);
  if (!c.has_policy) return fresh;
  // The policy the options and spec ask for is exactly the float32 tensors the file holds:
  // checked before it is built, so a small file cannot make the reader build a huge policy.
  std::uint64_t declared = 0;
  for (const auto& [name, t] : c.file.tensors)
    if (name.rfind("policy.", 0) == 0) declared += t.end - t.begin;
  const std::uint64_t needed = 4 * policy_parameters(c.config, c.spec);
  GOENV_CHECK(declared == needed, InvalidArgument,
              "corrupt agent checkpoint: its options and spec need a policy of " << needed << " bytes, the file holds "
                                                                                  << declared);
  fresh.build(c.spec);
  check_tensors(c, fresh);
  copy_tensors(c, bytes, fresh);
  return fresh;
}

}  // namespace goenv::agents::checkpoint
