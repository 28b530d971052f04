// Tasks register themselves (one file per task: envs/placement.cc, ...); env ids
// are every registered task crossed with every registered graph family:
// "<task>-<graph>", e.g. "placement-inception", "placement-gnmt-8".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "envs/env.h"

namespace goenv {

void register_task(TaskSpec task);
const TaskSpec& task_spec(const std::string& name);
std::vector<std::string> task_names();
std::vector<std::string> list_env_ids();
// Throws NotFound for an unknown task, graph or cluster preset; InvalidArgument for bad options.
std::unique_ptr<Env> make_env(const std::string& id, const EnvConfig& config = {});
// Same, on a graph the caller already has (a loaded file, an import).
// Both resolve config.start (envs/start.h).
std::unique_ptr<Env> make_env_on_graph(const std::string& task, GraphPtr graph, const Cluster& cluster,
                                       const EnvConfig& config = {});

}  // namespace goenv

#define GOENV_REGISTER_TASK(variable, ...) \
  namespace {                              \
  const bool variable = (::goenv::register_task(__VA_ARGS__), true); \
  }
