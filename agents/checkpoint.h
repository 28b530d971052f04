// Agent checkpoints: data, never code (docs/architecture.md). Format 3 is the safetensors
// layout (a little-endian u64 header size, a JSON header of string metadata and
// of tensors' dtype, shape and byte offsets, then the raw bytes), readable by
// the `safetensors` library. Metadata: the format, every option, the policy
// spec, the training counters, the teachers' lines and a checksum of the bytes.
// Tensors: the policy's parameters, Adam's moments and steps, both generators'
// states and the teachers' decisions.
//
// The reader is bounded: the header's size, every shape and offset, the
// options and spec numbers are checked before the policy is built, the policy's
// size against the bytes the file holds, and every name, dtype and shape
// against the built policy before any value is copied. Values loaded are not
// trusted as results: a kept teacher is re-simulated when its graph is met
// (Model::verify_teacher). Formats 1 and 2 (a TorchScript archive, which can
// run code when loaded) are refused with how to convert them
// (python -m goenv.agents.convert, which never runs them).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "agents/model.h"
#include "agents/safetensors.h"

namespace goenv::agents::checkpoint {

inline constexpr int kFormat = 3;

// A checkpoint's header, parsed and checked; the tensors' bytes stay in the file.
struct Checkpoint {
  AgentConfig config;
  PolicySpec spec;
  bool has_policy = false;
  std::int64_t steps_trained = 0, version = 0, updates = 0, schedule_origin = 0, next_slot = 0;
  struct TeacherHeader {
    std::uint64_t key = 0;
    Teacher teacher;  // without actions (those are tensors)
  };
  std::vector<TeacherHeader> teachers;
  safetensors::File file;  // the metadata and the tensor table; the bytes stay in the file
};

// A checkpoint file of these metadata strings and tensors (F32, I64 or U8, in
// this order); the format's own metadata (format, version, checksum) is added.
std::string write_file(std::map<std::string, std::string> metadata, const std::vector<safetensors::Named>& tensors);

// InvalidArgument naming the problem on bytes that are not a readable checkpoint.
Checkpoint parse(const std::string& bytes);
std::string write(const Model& model, std::size_t next_slot);
// The model the checkpoint `bytes` (parsed into `checkpoint`) holds, ready to
// continue exactly as the saved one would have.
Model read(const Checkpoint& checkpoint, const std::string& bytes);

}  // namespace goenv::agents::checkpoint
