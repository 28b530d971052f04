#include "agents/safetensors.h"

// cereal's JSON archive first: it defines RAPIDJSON_ASSERT (throwing) and RAPIDJSON_ASSERT_THROWS
// before rapidjson is included, as in core/serialization.cc. Every file of a module must see the
// same definitions, or rapidjson's inline functions differ between them (an ODR violation: the
// linker keeps one copy, and cereal's checks of malformed JSON could lose their throw). The
// parser below checks every value's type before reading it, so no assertion fires here.
#include <cereal/archives/json.hpp>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/json_scan.h"

namespace goenv::agents::safetensors {

namespace {

constexpr std::uint64_t kMaxHeaderBytes = 64ull << 20;  // safetensors itself caps it at 100 MB
constexpr std::uint64_t kMaxDimension = 1ull << 40;
constexpr std::size_t kMaxRank = 8;
// The format nests three deep ({name: {"shape": [...]}}); a checkpoint's header holds a few
// thousand values (one record per tensor, one string per metadata key). These bound what
// parsing a header may cost to a few times its bytes.
constexpr int kHeaderDepth = 3;
constexpr std::size_t kMaxHeaderValues = 1u << 20;

struct DType {
  const char* name;
  torch::ScalarType type;
  std::uint64_t bytes;
};
constexpr DType kDTypes[] = {{"F32", torch::kFloat32, 4}, {"I64", torch::kInt64, 8}, {"U8", torch::kUInt8, 1}};

const DType& dtype_of(torch::ScalarType type) {
  for (const DType& d : kDTypes)
    if (d.type == type) return d;
  GOENV_FAIL(Error, "checkpoints store no tensors of type " << type);
}


}  // namespace

const char* dtype_name(torch::ScalarType type) { return dtype_of(type).name; }

std::string data_section(const std::vector<Named>& tensors) {
  std::string data;
  for (const Named& t : tensors) {
    const torch::Tensor cpu = t.tensor.detach().to(torch::kCPU).contiguous();
    data.append(static_cast<const char*>(cpu.data_ptr()), cpu.numel() * dtype_of(cpu.scalar_type()).bytes);
  }
  return data;
}

std::string write(const std::map<std::string, std::string>& metadata, const std::vector<Named>& tensors,
                  const std::string& data) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> offsets;
  std::uint64_t end = 0;
  for (const Named& t : tensors) {
    const std::uint64_t begin = end;
    end += static_cast<std::uint64_t>(t.tensor.numel()) * dtype_of(t.tensor.scalar_type()).bytes;
    offsets.emplace_back(begin, end);
  }
  GOENV_CHECK(end == data.size(), Error, "safetensors: " << data.size() << " data bytes for tensors of " << end);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> json(buffer);
  json.StartObject();
  json.Key("__metadata__");
  json.StartObject();
  for (const auto& [key, value] : metadata) {
    json.Key(key.c_str(), static_cast<rapidjson::SizeType>(key.size()));
    json.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
  }
  json.EndObject();
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    json.Key(tensors[i].name.c_str(), static_cast<rapidjson::SizeType>(tensors[i].name.size()));
    json.StartObject();
    json.Key("dtype");
    json.String(dtype_name(tensors[i].tensor.scalar_type()));
    json.Key("shape");
    json.StartArray();
    for (const std::int64_t d : tensors[i].tensor.sizes()) json.Uint64(static_cast<std::uint64_t>(d));
    json.EndArray();
    json.Key("data_offsets");
    json.StartArray();
    json.Uint64(offsets[i].first);
    json.Uint64(offsets[i].second);
    json.EndArray();
    json.EndObject();
  }
  json.EndObject();
  std::string header(buffer.GetString(), buffer.GetSize());
  header.append((8 - header.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
  std::string out(8, '\0');
  const std::uint64_t size = header.size();
  std::memcpy(out.data(), &size, 8);  // little-endian, as safetensors (goenv builds on little-endian hosts)
  out += header;
  out += data;
  return out;
}

File read(const std::string& bytes, const std::string& what) {
  GOENV_CHECK(bytes.size() >= 8, InvalidArgument,
              "not a " << what << ": " << bytes.size() << " bytes, fewer than a safetensors header size");
  std::uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  GOENV_CHECK(header_size >= 2 && header_size <= kMaxHeaderBytes && header_size <= bytes.size() - 8, InvalidArgument,
              "not a " << what << ": its header size " << header_size << " does not fit "
                                                               << bytes.size() << " bytes (at most " << kMaxHeaderBytes
                                                               << ")");
  const JsonScan scan = scan_json(std::string_view(bytes.data() + 8, header_size), kHeaderDepth);
  GOENV_CHECK(!scan.too_deep && scan.values <= kMaxHeaderValues, InvalidArgument,
              "not a " << what << ": its header nests deeper than " << kHeaderDepth << " levels or holds more than "
                       << kMaxHeaderValues << " values");
  rapidjson::Document document;
  // Iterative: nesting depth costs heap, not stack; strings must be valid UTF-8 (they reach Python).
  document.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(bytes.data() + 8, header_size);
  GOENV_CHECK(!document.HasParseError() && document.IsObject(), InvalidArgument,
              "not a " << what << ": its header is not a JSON object (error at byte "
                  << document.GetErrorOffset() << ")");
  File file;
  file.data_start = 8 + header_size;
  const std::uint64_t data_size = file.data_size = bytes.size() - file.data_start;
  std::map<std::string, std::string>& meta = file.metadata;
  for (auto member = document.MemberBegin(); member != document.MemberEnd(); ++member) {
    const std::string name(member->name.GetString(), member->name.GetStringLength());
    const rapidjson::Value& value = member->value;
    if (name == "__metadata__") {
      GOENV_CHECK(value.IsObject(), InvalidArgument, "corrupt " << what << ": __metadata__ is not an object");
      for (auto m = value.MemberBegin(); m != value.MemberEnd(); ++m) {
        GOENV_CHECK(m->value.IsString(), InvalidArgument, "corrupt " << what << ": metadata values must be strings");
        meta[std::string(m->name.GetString(), m->name.GetStringLength())] =
            std::string(m->value.GetString(), m->value.GetStringLength());
      }
      continue;
    }
    GOENV_CHECK(value.IsObject() && value.HasMember("dtype") && value["dtype"].IsString() && value.HasMember("shape") &&
                    value["shape"].IsArray() && value.HasMember("data_offsets") && value["data_offsets"].IsArray() &&
                    value["data_offsets"].Size() == 2 && value["data_offsets"][0].IsUint64() &&
                    value["data_offsets"][1].IsUint64(),
                InvalidArgument, "corrupt " << what << ": tensor '" << name << "' is not {dtype, shape, data_offsets}");
    const DType* dtype = nullptr;
    for (const DType& d : kDTypes)
      if (std::strcmp(d.name, value["dtype"].GetString()) == 0) dtype = &d;
    GOENV_CHECK(dtype != nullptr, InvalidArgument,
                "corrupt " << what << ": tensor '" << name << "' has dtype " << value["dtype"].GetString()
                                                     << "; checkpoints hold F32, I64 and U8");
    const rapidjson::Value& shape = value["shape"];
    GOENV_CHECK(shape.Size() <= kMaxRank, InvalidArgument,
                "corrupt " << what << ": tensor '" << name << "' has rank " << shape.Size());
    TensorInfo t;
    t.dtype = dtype->type;
    std::uint64_t numel = 1;
    for (const auto& d : shape.GetArray()) {
      GOENV_CHECK(d.IsUint64() && d.GetUint64() <= kMaxDimension, InvalidArgument,
                  "corrupt " << what << ": tensor '" << name << "' has a bad dimension");
      numel = d.GetUint64() == 0 || numel <= kMaxDimension / d.GetUint64() ? numel * d.GetUint64() : kMaxDimension + 1;
      t.shape.push_back(static_cast<std::int64_t>(d.GetUint64()));
    }
    t.begin = value["data_offsets"][0].GetUint64();
    t.end = value["data_offsets"][1].GetUint64();
    GOENV_CHECK(numel <= kMaxDimension && t.begin <= t.end && t.end <= data_size &&
                    t.end - t.begin == numel * dtype->bytes,
                InvalidArgument,
                "corrupt " << what << ": tensor '" << name << "' has offsets [" << t.begin << ", " << t.end
                                                     << ") that do not hold its shape within " << data_size << " bytes");
    file.tensors[name] = std::move(t);
  }
  // safetensors: the tensors tile the data section exactly, without gaps or overlaps.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  for (const auto& [name, t] : file.tensors) spans.emplace_back(t.begin, t.end);
  std::sort(spans.begin(), spans.end());
  std::uint64_t covered = 0;
  for (const auto& [begin, end] : spans) {
    GOENV_CHECK(begin == covered, InvalidArgument, "corrupt " << what << ": its tensors overlap or leave gaps");
    covered = end;
  }
  GOENV_CHECK(covered == data_size, InvalidArgument,
              "corrupt " << what << ": " << data_size - covered << " bytes after the last tensor");
  return file;
}

torch::Tensor copy(const File& file, const std::string& bytes, const std::string& name) {
  const TensorInfo& t = file.tensors.at(name);
  torch::Tensor out = torch::empty(t.shape, torch::TensorOptions().dtype(t.dtype));
  std::memcpy(out.data_ptr(), bytes.data() + file.data_start + t.begin, t.end - t.begin);
  return out;
}

}  // namespace goenv::agents::safetensors
