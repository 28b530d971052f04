// Timing claims that used to be assertions in the unit tests (they cannot hold
// under sanitizers, and a timed unit test is flaky on a loaded machine):
// building every registered graph family (claim: < 1 s each; gnmt-8, 80k+
// nodes, ~0.15 s) and HEFT / METIS placing gnmt-8 (claim: < 1 s).
//
//   build/dev/goenv_bench --benchmark_filter='BuildEveryFamily|Baseline'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "datasets/registry.h"
#include "envs/baselines/baseline.h"
#include "envs/registry.h"

namespace goenv {
namespace {

// Builds every registered family once per iteration (the registry is complete
// only once main runs, so it is read here, not at static initialization).
// Counter `slowest_s`: the slowest family's build time in the last iteration.
void BM_BuildEveryFamily(benchmark::State& state) {
  double slowest = 0;
  for (auto _ : state) {
    slowest = 0;
    for (const std::string& family : graph_family_names()) {
      const auto start = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(build_graph(family));
      slowest = std::max(slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  state.counters["slowest_s"] = slowest;
}
BENCHMARK(BM_BuildEveryFamily)->Unit(benchmark::kMillisecond);

void BM_Baseline(benchmark::State& state, const char* name) {
  auto env = make_env("placement-gnmt-8");
  for (auto _ : state) benchmark::DoNotOptimize(solve_baseline(*env, name));
}
BENCHMARK_CAPTURE(BM_Baseline, heft_gnmt8, "heft")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Baseline, metis_gnmt8, "metis")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace goenv
