// Agent checkpoints, format 2: magic bytes, the format, a text header
// (config, spec, training counters, teachers' lines), and a checksummed
// payload holding the parameters, Adam's moments, both generators and the
// teachers' decisions. Format 1 (parameters only) still loads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agents/model.h"

namespace goenv::agents::checkpoint {

// A checkpoint's header, parsed and checked, with its payload still unread.
struct Checkpoint {
  std::uint64_t format = 0;
  AgentConfig config;
  PolicySpec spec;
  bool has_policy = false;
  std::int64_t steps_trained = 0;
  // Format 2: the training state.
  std::int64_t version = 0, updates = 0, schedule_origin = 0, next_slot = 0;
  struct TeacherHeader {
    std::uint64_t key = 0;
    Teacher teacher;  // without actions (those are in the payload)
  };
  std::vector<TeacherHeader> teachers;
  std::string payload;
};

// InvalidArgument naming the problem on bytes that are not a readable checkpoint.
Checkpoint parse(const std::string& bytes);
std::string write(const Model& model, std::size_t next_slot);
// The model a checkpoint holds, ready to continue exactly as the saved one would have.
Model read(const Checkpoint& checkpoint);

}  // namespace goenv::agents::checkpoint
