#include "envs/registry.h"

#include <map>

#include "core/error.h"
#include "core/suggest.h"
#include "envs/start.h"

namespace goenv {

namespace {

std::map<std::string, TaskSpec>& tasks() {
  static std::map<std::string, TaskSpec> table;
  return table;
}

std::string joined_task_names() {
  std::string known;
  for (const auto& [k, _] : tasks()) known += (known.empty() ? "" : ", ") + k;
  return known;
}

}  // namespace

void register_task(TaskSpec task) {
  const std::string name = task.name;
  GOENV_CHECK(!tasks().count(name), InvalidArgument, "task '" << name << "' registered twice");
  tasks().emplace(name, std::move(task));
}

const TaskSpec& task_spec(const std::string& name) {
  auto it = tasks().find(name);
  GOENV_CHECK(it != tasks().end(), NotFound,
              "unknown task '" << name << "'; tasks: " << joined_task_names() << did_you_mean(name, task_names()));
  return it->second;
}

std::vector<std::string> task_names() {
  std::vector<std::string> names;
  for (const auto& [k, _] : tasks()) names.push_back(k);
  return names;
}

std::vector<std::string> list_env_ids() {
  std::vector<std::string> ids;
  for (const auto& task : task_names())
    for (const auto& graph : graph_family_names()) ids.push_back(task + "-" + graph);
  return ids;
}

std::unique_ptr<Env> make_env(const std::string& id, const EnvConfig& config) {
  const auto dash = id.find('-');
  // The id list is built only for the message (the closest known id) when the id is unknown.
  GOENV_CHECK(dash != std::string::npos && dash > 0 && dash + 1 < id.size() && tasks().count(id.substr(0, dash)) &&
                  graph_family_known(id.substr(dash + 1)),
              NotFound,
              "unknown env id '" << id << "': ids are '<task>-<graph>' with task one of " << joined_task_names()
                                 << " (goenv.list_envs() lists them all)" << did_you_mean(id, list_env_ids()));
  const std::string task = id.substr(0, dash), graph_name = id.substr(dash + 1);
  const TaskSpec& spec = task_spec(task);
  const GraphFamily& family = graph_family(graph_name);
  const Cluster cluster = Cluster::preset(config.cluster.empty() ? family.default_cluster : config.cluster);
  auto graph = build_graph(graph_name, config.graph_params);
  auto env = std::make_unique<Env>(id, spec, std::move(graph), cluster, config);
  apply_configured_start(*env);
  return env;
}

std::unique_ptr<Env> make_env_on_graph(const std::string& task, GraphPtr graph, const Cluster& cluster,
                                       const EnvConfig& config) {
  const TaskSpec& spec = task_spec(task);
  GOENV_CHECK(graph != nullptr, InvalidArgument, "make_env_on_graph needs a graph");
  const std::string id = task + "-" + graph->name();
  auto env = std::make_unique<Env>(id, spec, std::move(graph), cluster, config);
  apply_configured_start(*env);
  return env;
}

}  // namespace goenv
