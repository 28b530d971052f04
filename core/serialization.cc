#include "core/serialization.h"

#include <cereal/archives/json.hpp>
#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <rapidjson/error/en.h>  // after cereal: its RAPIDJSON_ASSERT (throw) applies
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <type_traits>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/json_scan.h"

namespace goenv {

namespace {

constexpr char kGraphMagic[8] = {'G', 'O', 'E', 'N', 'V', 'G', 'R', 'F'};
constexpr char kClusterMagic[8] = {'G', 'O', 'E', 'N', 'V', 'C', 'L', 'U'};

// Columnar form of a Graph: what goes on disk.
struct GraphRecord {
  std::uint32_t version = kGraphFormatVersion;
  std::string name;
  std::vector<std::string> names;
  std::vector<std::int32_t> op_type, group, colocation;
  std::vector<double> flops, cost;
  std::vector<std::int64_t> output_bytes, param_bytes, shape_offsets, shape_values;
  std::vector<std::uint8_t> allowed_kinds;
  std::vector<std::int64_t> edge_src, edge_dst, edge_bytes;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(version), CEREAL_NVP(name), CEREAL_NVP(names), CEREAL_NVP(op_type),
       CEREAL_NVP(flops), CEREAL_NVP(output_bytes), CEREAL_NVP(param_bytes),
       CEREAL_NVP(shape_offsets), CEREAL_NVP(shape_values), CEREAL_NVP(group),
       CEREAL_NVP(colocation), CEREAL_NVP(allowed_kinds), CEREAL_NVP(cost),
       CEREAL_NVP(edge_src), CEREAL_NVP(edge_dst), CEREAL_NVP(edge_bytes));
  }
};

GraphRecord to_record(const Graph& g) {
  GraphRecord r;
  r.name = g.name();
  r.names = g.names();
  r.op_type = g.op_type();
  r.flops = g.flops();
  r.output_bytes = g.output_bytes();
  r.param_bytes = g.param_bytes();
  r.group = g.group();
  r.colocation = g.colocation();
  r.allowed_kinds = g.allowed_kinds();
  r.cost = g.cost();
  r.shape_offsets.push_back(0);
  for (const auto& s : g.shapes()) {
    r.shape_values.insert(r.shape_values.end(), s.begin(), s.end());
    r.shape_offsets.push_back(static_cast<std::int64_t>(r.shape_values.size()));
  }
  r.edge_src = g.edge_src();
  r.edge_dst = g.edge_dst();
  r.edge_bytes = g.edge_bytes();
  return r;
}

GraphPtr from_record(GraphRecord& r, const std::string& what) {
  GOENV_CHECK(r.version == kGraphFormatVersion, InvalidGraph,
              what << ": graph format version " << r.version << ", this goenv reads version "
                   << kGraphFormatVersion);
  const std::size_t n = r.names.size(), m = r.edge_src.size();
  const bool consistent = r.op_type.size() == n && r.flops.size() == n && r.output_bytes.size() == n &&
                          r.param_bytes.size() == n && r.group.size() == n && r.colocation.size() == n &&
                          r.allowed_kinds.size() == n && r.cost.size() == n * kNumDeviceKinds &&
                          r.shape_offsets.size() == n + 1 && r.edge_dst.size() == m &&
                          r.edge_bytes.size() == m;
  GOENV_CHECK(consistent, InvalidGraph, what << ": node or edge columns have inconsistent lengths");
  std::vector<NodeSpec> nodes(n);
  for (std::size_t v = 0; v < n; ++v) {
    NodeSpec& s = nodes[v];
    s.name = std::move(r.names[v]);
    s.op_type = r.op_type[v];
    s.flops = r.flops[v];
    s.output_bytes = r.output_bytes[v];
    s.param_bytes = r.param_bytes[v];
    s.group = r.group[v];
    s.colocation = r.colocation[v];
    s.allowed_kinds = r.allowed_kinds[v];
    for (int k = 0; k < kNumDeviceKinds; ++k) s.cost[k] = r.cost[v * kNumDeviceKinds + k];
    const auto b = r.shape_offsets[v], e = r.shape_offsets[v + 1];
    GOENV_CHECK(0 <= b && b <= e && e <= static_cast<std::int64_t>(r.shape_values.size()), InvalidGraph,
                what << ": shape offsets of node " << v << " are corrupt");
    s.shape.assign(r.shape_values.begin() + b, r.shape_values.begin() + e);
  }
  std::vector<std::array<std::int64_t, 3>> edges(m);
  for (std::size_t i = 0; i < m; ++i) edges[i] = {r.edge_src[i], r.edge_dst[i], r.edge_bytes[i]};
  return Graph::from_specs(std::move(r.name), std::move(nodes), std::move(edges));
}

// Envelope: magic[8] | version u32 | payload size u64 | checksum64(payload) u64 | payload.
std::string wrap(const char (&magic)[8], const std::string& payload) {
  std::string out(magic, 8);
  auto put = [&out](auto value) { out.append(reinterpret_cast<const char*>(&value), sizeof(value)); };
  put(kGraphFormatVersion);
  put(static_cast<std::uint64_t>(payload.size()));
  put(checksum64(payload));
  return out + payload;
}

std::string_view unwrap(const char (&magic)[8], const std::string& bytes, const std::string& what) {
  const char* kind = magic[5] == 'G' ? "graph" : "cluster";
  constexpr std::size_t header = 8 + 4 + 8 + 8;
  GOENV_CHECK(bytes.size() >= header && std::memcmp(bytes.data(), magic, 8) == 0, InvalidGraph,
              what << ": not a goenv " << kind << " file (bad magic or too short)");
  std::uint32_t version;
  std::uint64_t size, checksum;
  std::memcpy(&version, bytes.data() + 8, 4);
  std::memcpy(&size, bytes.data() + 12, 8);
  std::memcpy(&checksum, bytes.data() + 20, 8);
  GOENV_CHECK(version == kGraphFormatVersion, InvalidGraph,
              what << ": format version " << version << ", this goenv reads version " << kGraphFormatVersion);
  GOENV_CHECK(bytes.size() - header == size, InvalidGraph,
              what << ": truncated or padded: header says " << size << " payload bytes, found "
                   << bytes.size() - header);
  const std::string_view payload = std::string_view(bytes).substr(header);  // no copy of a large file
  GOENV_CHECK(checksum64(payload) == checksum, InvalidGraph, what << ": checksum mismatch (file is corrupted)");
  return payload;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct ClusterRecord {
  std::uint32_t version = kGraphFormatVersion;
  std::string name;
  std::vector<std::string> device_names;
  std::vector<std::uint8_t> kinds;
  std::vector<double> peak_flops, memory_bandwidth, memory_bytes, launch_overhead, op_gap;
  std::vector<std::int32_t> link_src, link_dst, link_channel;
  std::vector<double> link_bandwidth, link_latency;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(version), CEREAL_NVP(name), CEREAL_NVP(device_names), CEREAL_NVP(kinds),
       CEREAL_NVP(peak_flops), CEREAL_NVP(memory_bandwidth), CEREAL_NVP(memory_bytes),
       CEREAL_NVP(launch_overhead), CEREAL_NVP(op_gap), CEREAL_NVP(link_src), CEREAL_NVP(link_dst),
       CEREAL_NVP(link_channel), CEREAL_NVP(link_bandwidth), CEREAL_NVP(link_latency));
  }
};

ClusterRecord to_record(const Cluster& c) {
  ClusterRecord r;
  r.name = c.name();
  for (const Device& d : c.devices()) {
    r.device_names.push_back(d.name);
    r.kinds.push_back(static_cast<std::uint8_t>(d.kind));
    r.peak_flops.push_back(d.peak_flops);
    r.memory_bandwidth.push_back(d.memory_bandwidth);
    r.memory_bytes.push_back(d.memory_bytes);
    r.launch_overhead.push_back(d.launch_overhead);
    r.op_gap.push_back(d.op_gap);
  }
  for (const Link& l : c.links()) {
    r.link_src.push_back(l.src);
    r.link_dst.push_back(l.dst);
    r.link_channel.push_back(l.channel);
    r.link_bandwidth.push_back(l.bandwidth);
    r.link_latency.push_back(l.latency);
  }
  return r;
}

Cluster from_record(const ClusterRecord& r) {
  GOENV_CHECK(r.version == kGraphFormatVersion, InvalidArgument, "cluster format version " << r.version);
  const std::size_t n = r.device_names.size(), m = r.link_src.size();
  GOENV_CHECK(r.kinds.size() == n && r.peak_flops.size() == n && r.memory_bandwidth.size() == n &&
                  r.memory_bytes.size() == n && r.launch_overhead.size() == n && r.op_gap.size() == n &&
                  r.link_dst.size() == m && r.link_channel.size() == m && r.link_bandwidth.size() == m &&
                  r.link_latency.size() == m,
              InvalidArgument, "cluster record has inconsistent column lengths");
  std::vector<Device> devices;
  for (std::size_t i = 0; i < n; ++i) {
    GOENV_CHECK(r.kinds[i] < kNumDeviceKinds, InvalidArgument, "device kind " << int(r.kinds[i]));
    devices.push_back({r.device_names[i], static_cast<DeviceKind>(r.kinds[i]), r.peak_flops[i],
                       r.memory_bandwidth[i], r.memory_bytes[i], r.launch_overhead[i], r.op_gap[i]});
  }
  std::vector<Link> links;
  for (std::size_t i = 0; i < m; ++i)
    links.push_back({r.link_src[i], r.link_dst[i], r.link_bandwidth[i], r.link_latency[i], r.link_channel[i]});
  return Cluster(r.name, std::move(devices), std::move(links));
}

template <class Record>
std::string binary_payload(const Record& record) {
  std::ostringstream os;
  {
    cereal::PortableBinaryOutputArchive ar(os);
    ar(record);
  }
  return os.str();
}

// Not cereal's reader: it would allocate whatever a corrupt count asks for.
template <class Record>
Record parse_binary(std::string_view payload, const std::string& what) {
  Record record;
  BoundedBinaryInput ar(payload, what + ": cannot decode");
  ar(record);
  ar.finish();
  return record;
}

template <class Record>
std::string json_text(const Record& record, const char* root) {
  std::ostringstream os;
  {
    cereal::JSONOutputArchive ar(os);
    ar(cereal::make_nvp(root, record));
  }
  return os.str();
}

// What a JSON value lacks to load into T the way cereal loads it ("" when it fits).
std::string json_mismatch(const rapidjson::Value& v, const std::string&) { return v.IsString() ? "" : "a string"; }
template <class T>
std::string json_mismatch(const rapidjson::Value& v, const T&) {
  static_assert(std::is_arithmetic_v<T>);
  if constexpr (std::is_same_v<T, bool>) return v.IsBool() ? "" : "true or false";
  else if constexpr (std::is_floating_point_v<T>) return v.IsNumber() ? "" : "a number";
  else if constexpr (std::is_signed_v<T>) return (sizeof(T) <= 4 ? v.IsInt() : v.IsInt64()) ? "" : "an integer";
  else return (sizeof(T) <= 4 ? v.IsUint() : v.IsUint64()) ? "" : "a non-negative integer";
}
template <class T>
std::string json_mismatch(const rapidjson::Value& v, const std::vector<T>&) {
  if (!v.IsArray()) return "an array";
  for (rapidjson::SizeType i = 0; i < v.Size(); ++i)
    if (std::string m = json_mismatch(v[i], T{}); !m.empty()) return m + " at index " + std::to_string(i);
  return "";
}

// Stands in for an archive in Record::serialize: finds the first field that is missing
// or of the wrong type, which cereal's own errors (rapidjson assertion texts such as
// "IsObject()", "provided NVP (x) not found") do not say in plain words.
struct JsonFieldCheck {
  const rapidjson::Value& object;
  std::string problem;
  template <class... Fields>
  void operator()(Fields&&... fields) {
    (check(fields.name, fields.value), ...);
  }
  template <class T>
  void check(const char* name, const T& value) {
    if (!problem.empty()) return;
    const auto member = object.FindMember(name);
    if (member == object.MemberEnd()) {
      problem = std::string("missing field '") + name + "'";
    } else if (std::string m = json_mismatch(member->value, value); !m.empty()) {
      problem = std::string("field '") + name + "' has the wrong type (expected " + m + ")";
    }
  }
};

// Run only after cereal failed (a valid file is parsed once): says what is wrong.
template <class Record>
std::string json_problem(const std::string& json, const char* root, const char* cereal_error) {
  rapidjson::Document doc;  // default flags, as cereal's JSONInputArchive parses
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError())
    return "not valid JSON at offset " + std::to_string(doc.GetErrorOffset()) + ": " +
           rapidjson::GetParseError_En(doc.GetParseError());
  const std::string kind = root;
  if (!doc.IsObject() || !doc.HasMember(root))
    return "not a goenv " + kind + " JSON (expected an object with a '" + kind + "' field)";
  if (!doc[root].IsObject()) return "field '" + kind + "' has the wrong type (expected an object)";
  Record record;
  JsonFieldCheck check{doc[root], ""};
  record.serialize(check);
  return check.problem.empty() ? "malformed " + kind + " JSON (" + cereal_error + ")" : check.problem;
}

template <class Record>
Record parse_json(const std::string& json, const char* root, const std::string& what) {
  check_json_depth(json, what);
  Record record;
  try {
    std::istringstream is(json);
    cereal::JSONInputArchive ar(is);
    ar(cereal::make_nvp(root, record));
  } catch (const std::exception& e) {
    GOENV_FAIL(InvalidGraph, what << ": cannot parse JSON: " << json_problem<Record>(json, root, e.what()));
  }
  return record;
}

}  // namespace

std::uint64_t fnv1a64(const std::string& bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::uint64_t checksum64(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ull;
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    h = (h ^ word) * 1099511628211ull;
  }
  for (; i < bytes.size(); ++i) h = (h ^ static_cast<unsigned char>(bytes[i])) * 1099511628211ull;
  return h;
}

std::string append_checksum(std::string bytes) {
  const std::uint64_t sum = checksum64(bytes);
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((sum >> (8 * i)) & 0xff));
  return bytes;
}

std::string_view without_checksum(std::string_view bytes, const std::string& what) {
  GOENV_CHECK(bytes.size() >= 8, InvalidGraph, what << ": truncated (no room for its checksum)");
  const std::string_view body = bytes.substr(0, bytes.size() - 8);
  std::uint64_t stored = 0;
  for (int i = 0; i < 8; ++i) stored |= std::uint64_t{static_cast<unsigned char>(bytes[body.size() + i])} << (8 * i);
  GOENV_CHECK(checksum64(body) == stored, InvalidGraph, what << ": checksum mismatch (the snapshot is corrupted)");
  return body;
}

void check_json_depth(std::string_view json, const std::string& what) {
  const JsonScan scan = scan_json(json, kMaxJsonDepth);
  GOENV_CHECK(!scan.too_deep, InvalidGraph,
              what << ": JSON nested deeper than " << kMaxJsonDepth << " levels (at byte " << scan.at << ")");
}

namespace {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

struct FileDescriptor {
  int fd;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

// Only regular files, at most kMaxFileBytes, read in one allocation of the size
// fstat() reported (a file that grows meanwhile is refused, not followed). The
// checks are made on the open descriptor (O_NONBLOCK: a FIFO opens at once and is
// refused), so nothing swapped in after a check is read.
std::string read_file(const std::string& path) {
  const FileDescriptor file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  GOENV_CHECK(file.fd >= 0, InvalidArgument, "cannot open '" << path << "' for reading: " << std::strerror(errno));
  struct stat info {};
  GOENV_CHECK(::fstat(file.fd, &info) == 0, InvalidArgument, "cannot open '" << path << "' for reading");
  GOENV_CHECK(S_ISREG(info.st_mode), InvalidArgument,
              "'" << path << "' is not a regular file (" << file_kind(info.st_mode) << ")");
  const auto size = static_cast<std::uint64_t>(info.st_size);
  GOENV_CHECK(size <= kMaxFileBytes, InvalidArgument,
              "'" << path << "' is " << size << " bytes; goenv files are at most " << kMaxFileBytes);
  std::string contents(static_cast<std::size_t>(size), '\0');
  std::size_t done = 0;
  char extra = 0;
  while (true) {
    char* into = done < contents.size() ? contents.data() + done : &extra;
    const ssize_t n = ::read(file.fd, into, done < contents.size() ? contents.size() - done : 1);
    if (n < 0 && errno == EINTR) continue;
    GOENV_CHECK(n >= 0, InvalidArgument, "cannot read '" << path << "': " << std::strerror(errno));
    GOENV_CHECK(done < contents.size() ? n > 0 : n == 0, InvalidArgument,
                "'" << path << "' changed size while it was read");
    if (n == 0) return contents;
    done += static_cast<std::size_t>(n);
  }
}

// Only over a regular file (a link to one: its target) or a new path: a device,
// FIFO or directory there is refused, never replaced by a regular file. The
// temporary file is created with O_EXCL (never a file or link placed there),
// flushed to disk, then renamed over the target.
void write_file_atomic(const std::string& path, const std::string& contents) {
  std::string target = path;
  struct stat info {};
  const bool replaces = ::stat(path.c_str(), &info) == 0;
  const mode_t kept_mode = replaces ? (info.st_mode & 07777) : 0;
  if (replaces) {
    GOENV_CHECK(S_ISREG(info.st_mode), InvalidArgument,
                "'" << path << "' is " << file_kind(info.st_mode)
                    << ", not a regular file; goenv writes only over regular files or new paths");
    if (char* real = ::realpath(path.c_str(), nullptr)) {
      target = real;
      std::free(real);
    }
  } else {
    GOENV_CHECK(::lstat(path.c_str(), &info) != 0, InvalidArgument,
                "'" << path << "' is a dangling symbolic link; goenv writes only over regular files or new paths");
  }
  static std::atomic<unsigned> counter{0};
  std::string tmp;
  FileDescriptor file{-1};
  for (int attempt = 0; file.fd < 0 && attempt < 64; ++attempt) {
    tmp = target + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    file.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);  // the umask applies
    if (file.fd < 0 && errno != EEXIST) break;
  }
  GOENV_CHECK(file.fd >= 0, InvalidArgument, "cannot create '" << tmp << "': " << std::strerror(errno));
  const auto fail = [&](const std::string& why) {
    std::remove(tmp.c_str());
    GOENV_FAIL(Error, "failed writing '" << path << "': " << why);
  };
  for (std::size_t done = 0; done < contents.size();) {
    const ssize_t n = ::write(file.fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  // A replaced file keeps its permissions (not the umask's), as a plain overwrite would.
  if (replaces && ::fchmod(file.fd, kept_mode) != 0) fail(std::strerror(errno));
  if (::fsync(file.fd) != 0) fail(std::strerror(errno));
  if (::stat(target.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) fail("the target stopped being a regular file");
  if (std::rename(tmp.c_str(), target.c_str()) != 0) fail(std::string("cannot rename: ") + std::strerror(errno));
}

std::string graph_to_bytes(const Graph& graph) { return wrap(kGraphMagic, binary_payload(to_record(graph))); }

GraphPtr graph_from_bytes(const std::string& bytes, const std::string& what) {
  auto record = parse_binary<GraphRecord>(unwrap(kGraphMagic, bytes, what), what);
  return from_record(record, what);
}

std::string graph_to_json(const Graph& graph) { return json_text(to_record(graph), "graph"); }

namespace {

// The graph record's columns, counted on the text before it is parsed: columns whose lengths
// disagree, or more nodes or edges than a graph may have, are refused before a parse builds them
// (its values cost up to 15x their text; docs/limits.md).
void check_graph_json_columns(const std::string& json, const std::string& what) {
  const auto lengths = json_array_lengths(json, 2);
  // Only the columns the text holds as whole arrays are compared: a missing, truncated or
  // mistyped one is left to the parser, whose message names it.
  const auto length = [&](const char* column) -> std::optional<std::size_t> {
    const auto it = lengths.find(column);
    return it == lengths.end() ? std::nullopt : std::optional<std::size_t>(it->second);
  };
  std::optional<std::size_t> n, m;
  bool consistent = true;
  const auto agree = [&](std::optional<std::size_t>& count, const char* column, std::size_t per = 1,
                         std::size_t extra = 0) {
    const auto found = length(column);
    if (!found || *found < extra) return;
    const std::size_t implied = (*found - extra) / per;
    consistent = consistent && (*found - extra) % per == 0 && (!count || *count == implied);
    count = count.value_or(implied);
  };
  for (const char* column : {"names", "op_type", "flops", "output_bytes", "param_bytes", "group", "colocation",
                             "allowed_kinds"})
    agree(n, column);
  agree(n, "cost", kNumDeviceKinds);
  agree(n, "shape_offsets", 1, 1);
  for (const char* column : {"edge_src", "edge_dst", "edge_bytes"}) agree(m, column);
  GOENV_CHECK(n.value_or(0) <= static_cast<std::size_t>(kMaxNodes) && m.value_or(0) <= static_cast<std::size_t>(kMaxEdges),
              InvalidGraph, what << ": " << n.value_or(0) << " nodes and " << m.value_or(0) << " edges, at most "
                                 << kMaxNodes << " and " << kMaxEdges);
  GOENV_CHECK(consistent, InvalidGraph, what << ": node or edge columns have inconsistent lengths");
}

}  // namespace

GraphPtr graph_from_json(const std::string& json, const std::string& what) {
  check_graph_json_columns(json, what);  // parse_json checks the nesting depth
  auto record = parse_json<GraphRecord>(json, "graph", what);
  return from_record(record, what);
}

void save_graph(const Graph& graph, const std::string& path) {
  write_file_atomic(path, ends_with(path, ".json") ? graph_to_json(graph) : graph_to_bytes(graph));
}

GraphPtr load_graph(const std::string& path) {
  const std::string contents = read_file(path);
  return ends_with(path, ".json") ? graph_from_json(contents, "'" + path + "'")
                                  : graph_from_bytes(contents, "'" + path + "'");
}

std::string cluster_to_bytes(const Cluster& c) { return wrap(kClusterMagic, binary_payload(to_record(c))); }

namespace {
// A cluster is not a graph: its decoding errors are InvalidArgument, not InvalidGraph.
template <class Parse>
Cluster cluster_or_invalid_argument(Parse parse) {
  try {
    return parse();
  } catch (const InvalidGraph& e) {
    throw InvalidArgument(e.what());
  }
}
}  // namespace

Cluster cluster_from_bytes(const std::string& bytes) {
  return cluster_or_invalid_argument([&] {
    return from_record(parse_binary<ClusterRecord>(unwrap(kClusterMagic, bytes, "cluster bytes"), "cluster bytes"));
  });
}

std::string cluster_to_json(const Cluster& c) { return json_text(to_record(c), "cluster"); }

Cluster cluster_from_json(const std::string& json) {
  return cluster_or_invalid_argument(
      [&] { return from_record(parse_json<ClusterRecord>(json, "cluster", "cluster JSON")); });
}

}  // namespace goenv
