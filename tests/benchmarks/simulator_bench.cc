// Simulator and env stepping cost vs graph size (Google Benchmark).
//
//   build/dev/goenv_bench                               # everything
//   build/dev/goenv_bench --benchmark_filter=Simulate   # the simulator only
//
// Graphs: seeded random layered DAGs (100 .. 80,000+ nodes) built with
// GraphBuilder, plus the registered families `inception` and, when registered,
// `gnmt-8` (80k+ nodes). Counter `per_element` is seconds per (node + edge)
// (printed with an SI prefix: "85n" = 85 ns); `elements` is N + E.
//
// Floor comparison: BM_Floor/<graph>, BM_Full/<graph> and
// BM_Fused/<graph> run the bare list scheduler (floor_simulator.h), goenv's
// Simulator and the fusion path (a FusedSimulator, built once like the other
// two) on the same graph, cluster and placement.
// tests/benchmarks/simulator_floor.py turns them into ratios and adds
// instruction counts from one call each under callgrind:
//   valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*measured_*' \
//       build/dev/goenv_bench --count_instructions=gnmt-8
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/fusion.h"
#include "core/graph.h"
#include "core/simulator.h"
#include "datasets/registry.h"
#include "envs/registry.h"
#include "envs/vector_env.h"
#include "tests/benchmarks/floor_simulator.h"

namespace goenv {
namespace {

// A layered DAG: `num_nodes` ops in layers of ~sqrt(N)*2, each op reading 1-3
// ops of the previous two layers; TF-like op mix and log-uniform costs.
GraphPtr layered_dag(int num_nodes, std::uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int width = std::max(4, static_cast<int>(2 * std::sqrt(static_cast<double>(num_nodes))));
  const char* ops[] = {"Conv2D", "MatMul", "Relu", "Add", "BiasAdd", "Mul", "Sum", "Reshape"};
  GraphBuilder b("layered-" + std::to_string(num_nodes));
  std::vector<NodeId> previous, current, older;
  for (int v = 0; v < num_nodes; ++v) {
    NodeSpec s;
    s.name = "n" + std::to_string(v);
    s.op_type = op_type_id(ops[static_cast<int>(unit(rng) * 8)]);
    s.flops = std::pow(10.0, 5 + 5 * unit(rng));
    s.output_bytes = static_cast<std::int64_t>(std::pow(10.0, 3 + 4 * unit(rng)));
    s.param_bytes = unit(rng) < 0.3 ? static_cast<std::int64_t>(std::pow(10.0, 3 + 3 * unit(rng))) : 0;
    const NodeId id = b.add_node(std::move(s));
    if (!previous.empty()) {
      const int inputs = 1 + static_cast<int>(unit(rng) * 3);
      std::vector<NodeId> chosen;
      for (int k = 0; k < inputs; ++k) {
        const auto& pool = (!older.empty() && unit(rng) < 0.25) ? older : previous;
        chosen.push_back(pool[static_cast<std::size_t>(unit(rng) * pool.size())]);
      }
      std::sort(chosen.begin(), chosen.end());
      chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
      for (NodeId u : chosen) b.add_edge(u, id);
    }
    current.push_back(id);
    if (static_cast<int>(current.size()) == width) {
      older = std::move(previous);
      previous = std::move(current);
      current.clear();
    }
  }
  return std::move(b).build();
}

// Round-robin over blocks of the topological order: realistic model-parallel
// placement (transfers at block boundaries) rather than a random scatter.
std::vector<std::int32_t> block_placement(const Graph& g, int num_devices) {
  std::vector<std::int32_t> placement(g.num_nodes());
  const int block = std::max(1, g.num_nodes() / (num_devices * 4));
  for (int i = 0; i < g.num_nodes(); ++i) placement[g.topological_order()[i]] = (i / block) % num_devices;
  return placement;
}

void set_element_counters(benchmark::State& state, const Graph& g) {
  const double elements = g.num_nodes() + g.num_edges();
  state.counters["nodes"] = g.num_nodes();
  state.counters["elements"] = elements;
  state.counters["per_element"] =
      benchmark::Counter(elements, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void simulate_graph(benchmark::State& state, const GraphPtr& graph, const std::string& cluster_name) {
  Simulator simulator(graph, Cluster::preset(cluster_name));
  const auto placement = block_placement(*graph, simulator.cluster().num_devices());
  for (auto _ : state) {
    const SimulationResult& r = simulator.run({placement.data(), nullptr});
    benchmark::DoNotOptimize(r.runtime);
  }
  set_element_counters(state, *graph);
}

void BM_SimulateLayered(benchmark::State& state) {
  static std::map<int, GraphPtr> cache;
  const int n = static_cast<int>(state.range(0));
  if (!cache.count(n)) cache[n] = layered_dag(n);
  simulate_graph(state, cache[n], "4xgpu-nvlink");
}
BENCHMARK(BM_SimulateLayered)->Arg(100)->Arg(1000)->Arg(10000)->Arg(80000)->Unit(benchmark::kMicrosecond);

// A simulator built and run once per iteration (what the first goenv.simulate
// on a graph costs in C++), against BM_SimulateLayered's warm runs.
void BM_SimulateCold(benchmark::State& state) {
  static std::map<int, GraphPtr> cache;
  const int n = static_cast<int>(state.range(0));
  if (!cache.count(n)) cache[n] = layered_dag(n);
  const Cluster cluster = Cluster::preset("4xgpu-nvlink");
  const auto placement = block_placement(*cache[n], cluster.num_devices());
  for (auto _ : state) {
    Simulator simulator(cache[n], cluster);
    benchmark::DoNotOptimize(simulator.run({placement.data(), nullptr}).runtime);
  }
  set_element_counters(state, *cache[n]);
}
BENCHMARK(BM_SimulateCold)->Arg(1000)->Arg(80000)->Unit(benchmark::kMicrosecond);

void BM_SimulateSingleDevice(benchmark::State& state) {
  static std::map<int, GraphPtr> cache;
  const int n = static_cast<int>(state.range(0));
  if (!cache.count(n)) cache[n] = layered_dag(n);
  Simulator simulator(cache[n], Cluster::preset("4xgpu-nvlink"));
  for (auto _ : state) benchmark::DoNotOptimize(simulator.run({nullptr, nullptr}).runtime);
  set_element_counters(state, *cache[n]);
}
BENCHMARK(BM_SimulateSingleDevice)->Arg(1000)->Arg(80000)->Unit(benchmark::kMicrosecond);

// One whole-graph placement step of the env (simulation + observation), no allocation.
void BM_EnvStep(benchmark::State& state) {
  static std::map<int, GraphPtr> cache;
  const int n = static_cast<int>(state.range(0));
  if (!cache.count(n)) cache[n] = layered_dag(n);
  EnvConfig config;
  config.horizon = 1 << 30;
  auto env = make_env_on_graph("placement", cache[n], Cluster::preset("4xgpu-nvlink"), config);
  const int s = node_state_dim(env->cluster().num_devices()), a = env->action_mask_width();
  std::vector<float> node_state(static_cast<std::size_t>(n) * s), globals(global_names().size());
  std::vector<std::int8_t> mask(static_cast<std::size_t>(n) * a);
  env->reset_into(0, node_state.data(), mask.data(), globals.data());
  std::vector<std::int64_t> action(n);
  const auto placement = block_placement(env->graph(), env->cluster().num_devices());
  std::copy(placement.begin(), placement.end(), action.begin());
  const std::int64_t* heads[] = {action.data()};
  for (auto _ : state) benchmark::DoNotOptimize(env->step_into(heads, node_state.data(), mask.data(), globals.data()));
  set_element_counters(state, env->graph());
}
BENCHMARK(BM_EnvStep)->Arg(100)->Arg(1000)->Arg(80000)->Unit(benchmark::kMicrosecond);

// VectorEnv: 16 envs on one 1,000-node graph; arg = threads. items/s = env steps/s.
void BM_VectorStep(benchmark::State& state) {
  static GraphPtr graph = layered_dag(1000);
  const int threads = static_cast<int>(state.range(0)), b = 16;
  EnvConfig config;
  config.horizon = 1 << 30;
  auto env = make_env_on_graph("placement", graph, Cluster::preset("4xgpu-nvlink"), config);
  std::vector<const Env*> templates(b, env.get());
  auto venv = VectorEnv::from_templates(templates, BatchLayout::kStacked, threads);
  const BatchBuffers& out = venv->owned_buffers();
  std::vector<std::uint64_t> seeds(b, 0);
  venv->reset(seeds.data(), nullptr, out);
  const auto placement = block_placement(*graph, venv->num_devices());
  std::vector<std::int64_t> actions;
  for (int i = 0; i < b; ++i) actions.insert(actions.end(), placement.begin(), placement.end());
  const std::int64_t* heads[] = {actions.data()};
  for (auto _ : state) venv->step(heads, {false, graph->num_nodes()}, out);
  state.SetItemsProcessed(state.iterations() * b);
}
BENCHMARK(BM_VectorStep)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Registered model families (inception; gnmt-8 when someone has registered it).
void register_family_benchmarks() {
  const auto names = graph_family_names();
  for (const std::string name : {"inception", "gnmt-8"}) {
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    benchmark::RegisterBenchmark(("BM_SimulateFamily/" + name).c_str(), [name](benchmark::State& state) {
      static std::map<std::string, GraphPtr> cache;
      if (!cache.count(name)) cache[name] = build_graph(name);
      simulate_graph(state, cache[name], graph_family(name).default_cluster);
    })->Unit(benchmark::kMicrosecond);
  }
}

// The floor comparison's graphs: registered families on their default cluster,
// layered DAGs on 4xgpu-nvlink; block placement; XLA-style fusion priorities.
const std::vector<std::string> kFloorGraphs = {"inception", "transformer-xl-8", "gnmt-8", "layered-1000",
                                               "layered-80000"};

struct Workload {
  GraphPtr graph;
  Cluster cluster;
  std::vector<std::int32_t> placement, fusion;
};

const Workload& floor_workload(const std::string& name) {
  static std::map<std::string, Workload> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  Workload w;
  if (name.rfind("layered-", 0) == 0) {
    w.graph = layered_dag(std::stoi(name.substr(8)));
    w.cluster = Cluster::preset("4xgpu-nvlink");
  } else {
    w.graph = build_graph(name);
    w.cluster = Cluster::preset(graph_family(name).default_cluster);
  }
  w.placement = block_placement(*w.graph, w.cluster.num_devices());
  w.fusion = xla_fusion_priorities(*w.graph);
  return cache.emplace(name, std::move(w)).first->second;
}

constexpr int kMaxFusionSize = 16;

// One call each, not inlined, so callgrind can count exactly these (--toggle-collect='*measured_*').
__attribute__((noinline)) double measured_floor(bench::FloorSimulator& floor, const Workload& w) {
  return floor.run(w.placement.data());
}
__attribute__((noinline)) double measured_full(Simulator& simulator, const Workload& w) {
  return simulator.run({w.placement.data(), nullptr}).runtime;
}
// Fused: one FusedSimulator per (graph, cluster), reused as an env reuses it.
__attribute__((noinline)) double measured_fused(FusedSimulator& fused, const Workload& w) {
  return fused.run({w.placement.data(), nullptr}, w.fusion.data(), kMaxFusionSize).runtime;
}

void register_floor_benchmarks() {
  const auto names = graph_family_names();
  for (const std::string& name : kFloorGraphs) {
    if (name.rfind("layered-", 0) != 0 && std::find(names.begin(), names.end(), name) == names.end()) continue;
    benchmark::RegisterBenchmark(("BM_Floor/" + name).c_str(), [name](benchmark::State& state) {
      const Workload& w = floor_workload(name);
      bench::FloorSimulator floor(w.graph, w.cluster);
      Simulator simulator(w.graph, w.cluster);
      // The floor must simulate the same thing: same makespan, bit for bit.
      const double full = simulator.run({w.placement.data(), nullptr}).runtime;
      if (floor.run(w.placement.data()) != full) state.SkipWithError("floor and full makespans differ");
      for (auto _ : state) benchmark::DoNotOptimize(floor.run(w.placement.data()));
      set_element_counters(state, *w.graph);
    })->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("BM_Full/" + name).c_str(), [name](benchmark::State& state) {
      const Workload& w = floor_workload(name);
      Simulator simulator(w.graph, w.cluster);
      for (auto _ : state) benchmark::DoNotOptimize(simulator.run({w.placement.data(), nullptr}).runtime);
      set_element_counters(state, *w.graph);
    })->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("BM_Fused/" + name).c_str(), [name](benchmark::State& state) {
      const Workload& w = floor_workload(name);
      FusedSimulator fused(w.graph, w.cluster);
      for (auto _ : state) benchmark::DoNotOptimize(measured_fused(fused, w));
      set_element_counters(state, *w.graph);
    })->Unit(benchmark::kMicrosecond);
  }
}

// FNV-1a over every output of a run, bit for bit: equal digests across commits
// mean the simulator's results did not change.
std::uint64_t digest(const SimulationResult& r) {
  std::uint64_t h = 1469598103934665603ull;
  auto add = [&h](const void* data, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) h = (h ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
  };
  auto add_vector = [&add](const auto& v) { add(v.data(), v.size() * sizeof(v[0])); };
  add(&r.runtime, sizeof r.runtime);
  add(&r.bytes_moved, sizeof r.bytes_moved);
  add(&r.oom, sizeof r.oom);
  add_vector(r.device_busy);
  add_vector(r.peak_memory);
  add_vector(r.start);
  add_vector(r.finish);
  add_vector(r.device);
  add_vector(r.critical);
  for (const Transfer& t : r.transfers) {
    add(&t.node, sizeof t.node);
    add(&t.src, sizeof t.src);
    add(&t.dst, sizeof t.dst);
    add(&t.bytes, sizeof t.bytes);
    add(&t.start, sizeof t.start);
    add(&t.end, sizeof t.end);
  }
  return h;
}

// --count_instructions=<graph>: build everything, warm each simulator up with one
// call, then make one measured call each (what callgrind counts). Prints the
// makespans and digests of the full results (FIFO and with seeded random priorities).
int count_instructions(const std::string& name) {
  const Workload& w = floor_workload(name);
  bench::FloorSimulator floor(w.graph, w.cluster);
  Simulator simulator(w.graph, w.cluster);
  FusedSimulator fused(w.graph, w.cluster);
  floor.run(w.placement.data());
  simulator.run({w.placement.data(), nullptr});
  fused.run({w.placement.data(), nullptr}, w.fusion.data(), kMaxFusionSize);
  const double a = measured_floor(floor, w), b = measured_full(simulator, w), c = measured_fused(fused, w);
  const std::uint64_t fifo = digest(simulator.run({w.placement.data(), nullptr}));
  std::mt19937 rng(7);
  std::vector<double> priority(w.graph->num_nodes());
  for (double& p : priority) p = static_cast<double>(rng() % 5);  // few levels: many ties
  const std::uint64_t prioritized = digest(simulator.run({w.placement.data(), priority.data()}));
  // Placeto's K80 box: an op gap after every kernel and one outgoing bus per device (queued transfers).
  Simulator k80(w.graph, Cluster::preset("placeto-k80"));
  const auto k80_placement = block_placement(*w.graph, k80.cluster().num_devices());
  const std::uint64_t bus = digest(k80.run({k80_placement.data(), priority.data()}));
  std::printf("%s nodes=%d edges=%d floor=%.17g full=%.17g fused=%.17g digests=%016llx,%016llx,%016llx\n",
              name.c_str(), w.graph->num_nodes(), w.graph->num_edges(), a, b, c,
              static_cast<unsigned long long>(fifo), static_cast<unsigned long long>(prioritized),
              static_cast<unsigned long long>(bus));
  return a == b ? 0 : 1;
}

}  // namespace

void register_task_step_benchmarks();  // task_step_bench.cc

}  // namespace goenv

int main(int argc, char** argv) {
  const std::string count_flag = "--count_instructions=";
  if (argc == 2 && std::string(argv[1]).rfind(count_flag, 0) == 0)
    return goenv::count_instructions(std::string(argv[1]).substr(count_flag.size()));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  goenv::register_family_benchmarks();
  goenv::register_floor_benchmarks();
  goenv::register_task_step_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
