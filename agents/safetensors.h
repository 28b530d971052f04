// The safetensors file layout (github.com/huggingface/safetensors): a
// little-endian u64 header size, a JSON header holding string metadata
// ("__metadata__") and each tensor's dtype, shape and byte offsets, then the
// tensors' raw bytes. Files written here are read by the `safetensors` library.
//
// The reader is bounded: the header's size is capped and checked against the
// bytes, parsed without recursion as valid UTF-8; every dtype, rank, dimension
// and offset is checked, and the tensors must tile the data section exactly.
// Nothing is allocated for a tensor until copy() is asked for it.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace goenv::agents::safetensors {

struct Named {
  std::string name;
  torch::Tensor tensor;  // F32, I64 or U8
};

struct TensorInfo {
  torch::ScalarType dtype = torch::kFloat32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  // byte offsets in the data section
};

struct File {
  std::map<std::string, std::string> metadata;
  std::map<std::string, TensorInfo> tensors;
  std::uint64_t data_start = 0, data_size = 0;  // where the data section is in the bytes
};

const char* dtype_name(torch::ScalarType type);
// The tensors' bytes, one after another: the file's data section.
std::string data_section(const std::vector<Named>& tensors);
// The file of these metadata strings and tensors, in this order, whose data section is `data`
// (data_section(tensors), made once by a caller that also needs it, e.g. for a checksum).
std::string write(const std::map<std::string, std::string>& metadata, const std::vector<Named>& tensors,
                  const std::string& data);
// The header of `bytes`; InvalidArgument naming `what` ("agent checkpoint") and the problem.
File read(const std::string& bytes, const std::string& what);
// A new CPU tensor holding tensor `name` of the file.
torch::Tensor copy(const File& file, const std::string& bytes, const std::string& name);

}  // namespace goenv::agents::safetensors
