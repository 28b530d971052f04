#include "agents/checkpoint.h"

#include <cstring>
#include <sstream>

#include "core/error.h"
#include "core/hash.h"

namespace goenv::agents::checkpoint {

namespace {

constexpr char kMagic[8] = {'G', 'O', 'E', 'N', 'V', 'A', 'G', 'T'};
constexpr std::uint32_t kFormat = 2;  // 2: + optimizer, generators, teachers, schedules

void put_u64(std::string& out, std::uint64_t x) { out.append(reinterpret_cast<const char*>(&x), 8); }

struct Reader {
  const std::string& bytes;
  std::size_t at = 0;
  void need(std::size_t n, const char* what) const {
    GOENV_CHECK(n <= bytes.size() - at, InvalidArgument,
                "corrupt agent checkpoint: truncated " << what << " (" << bytes.size() << " bytes in all)");
  }
  std::uint64_t u64(const char* what) {
    need(8, what);
    std::uint64_t x;
    std::memcpy(&x, bytes.data() + at, 8);
    at += 8;
    return x;
  }
  std::string take(std::uint64_t n, const char* what) {
    need(n, what);
    std::string s = bytes.substr(at, n);
    at += n;
    return s;
  }
};

// "key;method;runtime;reward;calls", numbers in full precision.
std::string teacher_line(std::uint64_t key, const Teacher& t) {
  std::ostringstream os;
  os.precision(17);
  os << key << ';' << t.method << ';' << t.runtime << ';' << t.reward << ';' << t.simulator_calls;
  return os.str();
}

Checkpoint::TeacherHeader parse_teacher(const std::string& text) {
  std::istringstream in(text);
  std::string key, method, runtime, reward, calls;
  GOENV_CHECK(std::getline(in, key, ';') && std::getline(in, method, ';') && std::getline(in, runtime, ';') &&
                  std::getline(in, reward, ';') && std::getline(in, calls) && !method.empty(),
              InvalidArgument, "corrupt agent checkpoint: bad teacher line '" << text << "'");
  Checkpoint::TeacherHeader t;
  t.key = std::stoull(key);
  t.teacher.method = method;
  t.teacher.runtime = std::stod(runtime);
  t.teacher.reward = std::stod(reward);
  t.teacher.simulator_calls = std::stoll(calls);
  return t;
}

std::string head_list(const PolicySpec& spec) {
  std::ostringstream out;
  for (std::size_t i = 0; i < spec.heads.size(); ++i)
    out << (i ? "," : "") << head_name(spec.heads[i]) << ":" << spec.choices[i];
  return out.str();
}

PolicySpec parse_heads(PolicySpec spec, const std::string& text) {
  std::istringstream in(text);
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
    spec.heads.push_back(head);
    spec.choices.push_back(std::stoi(item.substr(colon + 1)));
  }
  return spec;
}

}  // namespace

Checkpoint parse(const std::string& bytes) {
  GOENV_CHECK(bytes.size() >= sizeof(kMagic) && std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) == 0, InvalidArgument,
              "not a goenv agent checkpoint (bad magic bytes; " << bytes.size() << " bytes)");
  Reader r{bytes, sizeof(kMagic)};
  const std::uint64_t version = r.u64("version");
  GOENV_CHECK(version == 1 || version == kFormat, InvalidArgument,
              "agent checkpoint format version " << version << " is not supported (this goenv reads version "
                                                 << "1 and " << kFormat << ")");
  const std::uint64_t header_size = r.u64("header size");
  const std::string header = r.take(header_size, "header");
  const std::uint64_t payload_size = r.u64("payload size");
  const std::uint64_t checksum = r.u64("checksum");
  Checkpoint c;
  c.format = version;
  c.payload = r.take(payload_size, "parameters");
  GOENV_CHECK(r.at == bytes.size(), InvalidArgument,
              "corrupt agent checkpoint: " << bytes.size() - r.at << " unexpected trailing bytes");
  GOENV_CHECK(hash_bytes(header.data(), header.size(), hash_bytes(c.payload.data(), c.payload.size())) == checksum,
              InvalidArgument, "corrupt agent checkpoint: checksum mismatch");
  std::map<std::string, std::string> config_text;
  std::istringstream in(header);
  std::string line;
  try {
    while (std::getline(in, line)) {
      const auto eq = line.find('=');
      GOENV_CHECK(eq != std::string::npos, InvalidArgument, "corrupt agent checkpoint: bad header line '" << line << "'");
      const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
      if (key.rfind("config.", 0) == 0) config_text[key.substr(7)] = value;
      else if (key == "spec.node_feature_dim") c.spec.node_feature_dim = std::stoi(value);
      else if (key == "spec.node_state_dim") c.spec.node_state_dim = std::stoi(value);
      else if (key == "spec.global_dim") c.spec.global_dim = std::stoi(value);
      else if (key == "spec.heads") c.spec = parse_heads(c.spec, value);
      else if (key == "has_policy") c.has_policy = value == "1";
      else if (key == "steps_trained") c.steps_trained = std::stoll(value);
      else if (key == "version") c.version = std::stoll(value);
      else if (key == "updates") c.updates = std::stoll(value);
      else if (key == "schedule_origin") c.schedule_origin = std::stoll(value);
      else if (key == "next_slot") c.next_slot = std::stoll(value);
      else if (key == "teacher") c.teachers.push_back(parse_teacher(value));
      else GOENV_FAIL(InvalidArgument, "corrupt agent checkpoint: unknown header key '" << key << "'");
    }
  } catch (const std::logic_error& e) {  // std::stoi
    GOENV_FAIL(InvalidArgument, "corrupt agent checkpoint: bad number in line '" << line << "'");
  }
  c.config = config_from_text(config_text);
  validate(c.config);
  return c;
}

std::string write(const Model& m, std::size_t next_slot) {
  std::string header;
  for (const auto& [key, value] : config_to_text(m.config)) header += "config." + key + "=" + value + "\n";
  header += "has_policy=" + std::string(m.ready ? "1" : "0") + "\n";
  header += "steps_trained=" + std::to_string(m.steps_trained) + "\n";
  header += "version=" + std::to_string(m.weights.version) + "\n";
  header += "updates=" + std::to_string(m.updates) + "\n";
  header += "schedule_origin=" + std::to_string(m.schedule_origin) + "\n";
  header += "next_slot=" + std::to_string(next_slot) + "\n";
  std::string payload;
  if (m.ready) {
    const PolicySpec& s = m.spec;
    header += "spec.node_feature_dim=" + std::to_string(s.node_feature_dim) + "\n";
    header += "spec.node_state_dim=" + std::to_string(s.node_state_dim) + "\n";
    header += "spec.global_dim=" + std::to_string(s.global_dim) + "\n";
    header += "spec.heads=" + head_list(s) + "\n";
    torch::serialize::OutputArchive archive, policy, optimizer;
    m.policy->save(policy);
    m.optimizer->save(optimizer);
    archive.write("policy", policy);
    archive.write("optimizer", optimizer);
    archive.write("sampler", m.sampling.get_state());
    archive.write("shuffler", m.shuffling.get_state());
    for (const auto& [key, entry] : m.teachers) {
      header += "teacher=" + teacher_line(key, entry.teacher) + "\n";
      for (std::size_t h = 0; h < entry.teacher.actions.size(); ++h)
        archive.write("teacher." + std::to_string(key) + "." + std::to_string(h),
                      torch::tensor(entry.teacher.actions[h], torch::kInt64));
    }
    std::ostringstream os;
    archive.save_to(os);
    payload = os.str();
  }
  std::string out(kMagic, sizeof(kMagic));
  put_u64(out, kFormat);
  put_u64(out, header.size());
  out += header;
  put_u64(out, payload.size());
  put_u64(out, hash_bytes(header.data(), header.size(), hash_bytes(payload.data(), payload.size())));
  out += payload;
  return out;
}

Model read(const Checkpoint& c) {
  Model fresh(c.config);
  std::vector<Checkpoint::TeacherHeader> teachers = c.teachers;
  if (c.has_policy) {
    fresh.build(c.spec);
    try {
      torch::serialize::InputArchive archive;
      archive.load_from(c.payload.data(), c.payload.size(), fresh.device);
      if (c.format == 1) {  // parameters only
        fresh.policy->load(archive);
        fresh.weights.gather(*fresh.policy, fresh.device);
      } else {
        torch::serialize::InputArchive policy, optimizer;
        archive.read("policy", policy);
        fresh.policy->load(policy);
        // Loading replaced the parameters' storage; the optimizer keeps the same tensors.
        fresh.weights.gather(*fresh.policy, fresh.device);
        archive.read("optimizer", optimizer);
        fresh.optimizer->load(optimizer);
        torch::Tensor state;
        archive.read("sampler", state);
        fresh.sampling.set_state(state.to(torch::kCPU));
        archive.read("shuffler", state);
        fresh.shuffling.set_state(state.to(torch::kCPU));
        for (auto& t : teachers) {
          for (std::size_t h = 0; h < c.spec.heads.size(); ++h) {
            torch::Tensor values;
            archive.read("teacher." + std::to_string(t.key) + "." + std::to_string(h), values);
            values = values.to(torch::kCPU).to(torch::kInt64).contiguous();
            t.teacher.actions.emplace_back(values.data_ptr<std::int64_t>(),
                                           values.data_ptr<std::int64_t>() + values.numel());
          }
        }
      }
    } catch (const c10::Error& e) {
      GOENV_FAIL(InvalidArgument, "corrupt agent checkpoint: parameters do not load: " << e.what_without_backtrace());
    }
  }
  fresh.steps_trained = c.steps_trained;
  fresh.weights.version = c.version;
  fresh.updates = c.updates;
  fresh.schedule_origin = c.schedule_origin;
  // Targets need their graph's decision units: built when set_envs or imitate meets the graph.
  for (auto& t : teachers) fresh.teachers[t.key] = TeacherEntry{std::move(t.teacher), {}};
  return fresh;
}

}  // namespace goenv::agents::checkpoint
