// One whole-graph env step per task on the same graph and the same decisions:
// every env starts on one device (placement="single") and is stepped with the
// decisions it starts from, so placement and scheduling simulate the graph and
// fusion and joint add the XLA-style fusion pass. Issue 22's target is a
// fusion or joint step at most 1.5x the placement step; this is its C++ side
// (tests/benchmarks/ratio_bench.py measures the same through Python).
//
//   build/dev/goenv_bench --benchmark_filter=BM_TaskStep
//   valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*measured_task_step*' \
//       build/dev/goenv_bench --benchmark_filter='BM_TaskStep/fusion/inception' --benchmark_min_time=0.01
#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "datasets/registry.h"
#include "envs/observation.h"
#include "envs/registry.h"

namespace goenv {
namespace {

struct TaskStep {
  std::unique_ptr<Env> env;
  std::vector<std::vector<std::int64_t>> action;  // per head: the decisions the env starts from
  std::vector<const std::int64_t*> heads;
  std::vector<float> node_state, globals;
  std::vector<std::int8_t> mask;
};

TaskStep make_task_step(const std::string& task, const std::string& graph) {
  static std::map<std::string, GraphPtr> cache;
  if (!cache.count(graph)) cache[graph] = build_graph(graph);
  EnvConfig config;
  config.horizon = 1 << 30;
  config.placement = "single";
  TaskStep t;
  t.env = make_env_on_graph(task, cache[graph], Cluster::preset(graph_family(graph).default_cluster), config);
  Env& env = *t.env;
  const int n = env.graph().num_nodes();
  t.node_state.resize(static_cast<std::size_t>(n) * env.node_state_dim());
  t.mask.resize(static_cast<std::size_t>(n) * env.action_mask_width());
  t.globals.resize(global_names().size());
  env.reset_into(0, t.node_state.data(), t.mask.data(), t.globals.data());
  for (Head h : env.heads()) {
    std::vector<std::int64_t> values(n);
    for (int v = 0; v < n; ++v)
      values[v] = h == Head::kPlacement  ? env.placement()[v]
                  : h == Head::kFusion   ? env.fusion()[v]
                                         : static_cast<std::int64_t>(env.priority()[v]);
    t.action.push_back(std::move(values));
  }
  for (const auto& a : t.action) t.heads.push_back(a.data());
  return t;
}

// Not inlined, so callgrind can count exactly the steps (--toggle-collect='*measured_task_step*').
__attribute__((noinline)) double measured_task_step(TaskStep& t) {
  return t.env->step_into(t.heads.data(), t.node_state.data(), t.mask.data(), t.globals.data()).reward;
}

}  // namespace

// Called from goenv_bench's main (simulator_bench.cc), once the graph registry is complete.
void register_task_step_benchmarks() {
  const auto names = graph_family_names();
  for (const std::string graph : {"inception", "gnmt-8"}) {
    if (std::find(names.begin(), names.end(), graph) == names.end()) continue;
    for (const std::string task : {"placement", "scheduling", "fusion", "joint"})
      benchmark::RegisterBenchmark(("BM_TaskStep/" + task + "/" + graph).c_str(), [task, graph](benchmark::State& state) {
        TaskStep t = make_task_step(task, graph);
        for (auto _ : state) benchmark::DoNotOptimize(measured_task_step(t));
      })->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace goenv
