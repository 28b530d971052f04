"""Throughput of goenv.make_vec (the C++/OpenMP engine) against Gymnasium's
SyncVectorEnv and AsyncVectorEnv wrapping the single env, thread scaling, the
Python overhead of one step, memory of many envs on the largest graph, and (when
built) the C++ simulator cost per node+edge on the largest graph.

    python tests/benchmarks/python_bench.py                 # ~1-2 minutes on 2 cores
    python tests/benchmarks/python_bench.py --quick         # a smoke run
    python tests/benchmarks/python_bench.py --json out.json --markdown out.md
    python tests/benchmarks/python_bench.py --simulator-floor   # simulator vs floor (simulator_floor.py)
    python tests/benchmarks/python_bench.py --ratios-only --readme docs/performance.md   # the ratios (ratio_bench.py)

Every number in one report comes from one run on one machine; ratios are what
to compare across machines. Steps are whole-graph placement decisions on random
layered DAGs (goenv.Graph.from_arrays) with a long horizon, so every step
simulates the graph (no episode ends mid-measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import textwrap
import time

import gymnasium
import numpy as np

import goenv
from goenv.vector import make_vec

CLUSTER = "4xgpu-nvlink"
HORIZON = 10**9


def layered_graph(num_nodes: int, seed: int = 0) -> goenv.Graph:
    """A random layered DAG: layers of ~2*sqrt(N) ops, each reading 1-3 ops of the
    previous layer; log-uniform FLOPs and bytes."""
    rng = np.random.default_rng(seed)
    width = max(4, int(2 * np.sqrt(num_nodes)))
    layer = np.arange(num_nodes) // width
    sources, targets = [], []
    for v in range(width, num_nodes):
        first = (layer[v] - 1) * width
        inputs = rng.choice(np.arange(first, first + width), size=rng.integers(1, 4), replace=False)
        sources += inputs.tolist()
        targets += [v] * len(inputs)
    ops = ["Conv2D", "MatMul", "Relu", "Add", "BiasAdd", "Mul", "Sum", "Reshape"]
    return goenv.Graph.from_arrays(
        np.array([sources, targets], dtype=np.int64),
        flops=10 ** rng.uniform(5, 10, num_nodes),
        output_bytes=(10 ** rng.uniform(3, 7, num_nodes)).astype(np.int64),
        param_bytes=np.where(rng.random(num_nodes) < 0.3, 10 ** rng.uniform(3, 6, num_nodes), 0).astype(np.int64),
        op_type=[ops[i] for i in rng.integers(0, len(ops), num_nodes)],
        name=f"layered-{num_nodes}",
    )


def single_env(graph: goenv.Graph) -> goenv.GraphEnv:
    return goenv.GraphEnv.from_graph("placement", graph, CLUSTER, horizon=HORIZON)


def action_pool(num_envs: int, num_nodes: int, num_devices: int, size: int = 8) -> list:
    rng = np.random.default_rng(1)
    return [rng.integers(0, num_devices, (num_envs, num_nodes)) for _ in range(size)]


def steps_per_second(venv, actions: list, seconds: float, repeats: int = 3) -> float:
    """Env steps per second (num_envs per call), best of `repeats` runs of ~`seconds`."""
    venv.reset(seed=0)
    for a in actions[:2]:
        venv.step(a)
    best = 0.0
    for _ in range(repeats):
        calls, start = 0, time.perf_counter()
        while True:
            venv.step(actions[calls % len(actions)])
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        best = max(best, calls * venv.num_envs / elapsed)
    return best


def throughput(sizes, num_envs, seconds, cores) -> dict:
    results = {}
    for n in sizes:
        graph = layered_graph(n)
        template = single_env(graph)
        actions = action_pool(num_envs, n, template.core.num_devices)
        row = {"nodes": n, "edges": graph.num_edges, "num_envs": num_envs}
        sync = gymnasium.vector.SyncVectorEnv([lambda: single_env(graph) for _ in range(num_envs)])
        row["sync"] = steps_per_second(sync, actions, seconds)
        sync.close()
        asynchronous = gymnasium.vector.AsyncVectorEnv([lambda: single_env(graph) for _ in range(num_envs)])
        row["async"] = steps_per_second(asynchronous, actions, seconds)
        asynchronous.close()
        for threads in sorted({1, cores}):
            for copy in (True, False):
                venv = make_vec(template, num_envs=num_envs, num_threads=threads, copy=copy)
                row[f"make_vec_t{threads}_{'copy' if copy else 'nocopy'}"] = steps_per_second(venv, actions, seconds)
        results[n] = row
    return results


def thread_scaling(n, num_envs, seconds, cores) -> dict:
    graph = layered_graph(n)
    template = single_env(graph)
    actions = action_pool(num_envs, n, template.core.num_devices)
    out = {}
    for threads in range(1, cores + 1):
        venv = make_vec(template, num_envs=num_envs, num_threads=threads, copy=False)
        out[threads] = steps_per_second(venv, actions, seconds)
    return out


def thread_scaling_with_policy(policy: str, n, num_envs, seconds) -> dict | None:
    """The same scaling in a fresh process with OMP_WAIT_POLICY=`policy` (libgomp reads
    it when it loads, so it cannot change inside this process)."""
    if os.environ.get("OMP_WAIT_POLICY", "").upper() == policy:
        return None
    env = dict(os.environ, OMP_WAIT_POLICY=policy)
    proc = subprocess.run([sys.executable, __file__, "--scaling-only", str(n), "--num-envs", str(num_envs),
                           "--seconds", str(seconds)], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return None
    return {int(k): v for k, v in json.loads(proc.stdout.strip().splitlines()[-1]).items()}


def python_overhead(calls: int) -> dict:
    """Microseconds per step on a 10-node graph, one env: the whole call from Python,
    the C++ part (timed inside the engine), and the difference (the Python boundary)."""
    graph = layered_graph(10)
    template = single_env(graph)
    actions = np.zeros((1, 10), np.int64)
    out = {}
    for copy in (True, False):
        venv = make_vec(template, num_envs=1, num_threads=1, copy=copy)
        venv.reset(seed=0)
        core = venv.core
        for _ in range(500):
            venv.step(actions)
        best_total, best_cpp = float("inf"), float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(calls):
                venv.step(actions)
            total = (time.perf_counter() - start) / calls
            cpp = 0.0
            for _ in range(calls // 4):
                core.step(actions)
                cpp += core.last_call_seconds
            best_total, best_cpp = min(best_total, total), min(best_cpp, cpp / (calls // 4))
        key = "copy" if copy else "nocopy"
        out[key] = {"total_us": best_total * 1e6, "cpp_us": best_cpp * 1e6,
                    "overhead_us": (best_total - best_cpp) * 1e6}
    env = single_env(graph)
    env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(calls):
        env.step(actions[0])
    out["single_env_step_us"] = (time.perf_counter() - start) / calls * 1e6
    return out


MEMORY_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import goenv
    from goenv.vector import make_vec

    def rss():
        with open("/proc/self/status") as f:
            fields = dict(line.split(":", 1) for line in f)
        return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024

    env_id, num_envs = sys.argv[1], int(sys.argv[2])
    template = goenv._core.make_env(env_id)
    base, _ = rss()
    venv = make_vec(template, num_envs=num_envs, num_threads=1, copy=False)
    obs, info = venv.reset(seed=0)
    venv.step(np.zeros((num_envs, venv.core.max_nodes), np.int64))
    after, peak = rss()
    print(json.dumps({"env_id": env_id, "num_envs": num_envs, "nodes": template.num_nodes,
                      "edges": template.num_edges, "rss_base": base, "rss_after": after, "hwm": peak,
                      "delta": after - base}))
""")


def largest_graph_id() -> str:
    names = goenv.datasets.list()
    if "gnmt-8" in names:
        return "placement-gnmt-8"
    sizes = {}
    for name in names:
        try:
            sizes[name] = goenv.datasets.load(name).num_nodes
        except Exception:  # a family that cannot build with defaults is skipped
            continue
    return "placement-" + max(sizes, key=sizes.get)


def memory(num_envs: int) -> dict:
    """Resident memory added by make_vec(num_envs) on the largest graph vs one env, each
    in a fresh subprocess (C++ allocations are invisible to tracemalloc). copy=False:
    the engine's own buffers, no per-step result arrays."""
    env_id = largest_graph_id()
    out = {}
    for b in (1, num_envs):
        proc = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, env_id, str(b)], capture_output=True, text=True,
                              check=True)
        out[b] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def cpp_simulator(bench_binary: str) -> dict | None:
    """ns per (node + edge) of the C++ simulator, one core, from goenv_bench when built."""
    if not os.path.exists(bench_binary):
        return None
    proc = subprocess.run([bench_binary, "--benchmark_filter=SimulateFamily|SimulateLayered/(1000|80000)$",
                           "--benchmark_format=json", "--benchmark_min_time=0.5"], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    out = {}
    for b in json.loads(proc.stdout)["benchmarks"]:
        out[b["name"]] = {"nodes": b.get("nodes"), "elements": b.get("elements"),
                          "ns_per_element": b["per_element"] * 1e9, "cpu_ms": b["cpu_time"] / 1e3}
    return out


def _ratio_bench():
    """ratio_bench.py, beside this file (it imports layered_graph from here)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import ratio_bench as module
    return module


def markdown(report: dict) -> str:
    lines = [f"## goenv vector benchmark ({report['machine']}, {report['cores']} cores, B={report['num_envs']})", ""]
    lines += ["### Env steps per second", "",
              "| graph | SyncVectorEnv | AsyncVectorEnv | make_vec 1 thread | make_vec all cores (copy) | "
              "make_vec all cores (no copy) | make_vec / Sync | make_vec / Async |",
              "|---|---|---|---|---|---|---|---|"]
    cores = report["cores"]
    for n, row in report["throughput"].items():
        best = row[f"make_vec_t{cores}_copy"]
        lines.append(f"| {n} nodes, {row['edges']} edges | {row['sync']:.0f} | {row['async']:.0f} | "
                     f"{row['make_vec_t1_copy']:.0f} | {best:.0f} | {row[f'make_vec_t{cores}_nocopy']:.0f} | "
                     f"{best / row['sync']:.2f}x | {best / row['async']:.2f}x |")
    policy = os.environ.get("OMP_WAIT_POLICY") or "default"
    passive = report.get("scaling_passive")
    lines += ["", f"### Thread scaling ({report['scaling_nodes']} nodes, copy=False)", "",
              f"| threads | steps/s (OMP_WAIT_POLICY {policy}) | vs 1 thread |"
              + (" steps/s (PASSIVE) | vs 1 thread |" if passive else ""),
              "|---|---|---|" + ("---|---|" if passive else "")]
    one = report["scaling"][1]
    for t, v in report["scaling"].items():
        line = f"| {t} | {v:.0f} | {v / one:.2f}x |"
        if passive:
            line += f" {passive[t]:.0f} | {passive[t] / passive[1]:.2f}x |"
        lines.append(line)
    o = report["overhead"]
    lines += ["", "### One step on a 10-node graph (1 env), microseconds", "",
              "| mode | whole call | C++ engine | Python boundary |", "|---|---|---|---|"]
    for key in ("copy", "nocopy"):
        lines.append(f"| make_vec copy={key == 'copy'} | {o[key]['total_us']:.2f} | {o[key]['cpp_us']:.2f} | "
                     f"{o[key]['overhead_us']:.2f} |")
    lines.append(f"| GraphEnv.step (single env) | {o['single_env_step_us']:.2f} | | |")
    if report.get("memory"):
        m = report["memory"]
        one, many = m[1], m[max(m)]
        lines += ["", f"### Memory on {one['env_id']} ({one['nodes']} nodes, {one['edges']} edges)", "",
                  "| envs | RSS added by make_vec + reset + step | per env |", "|---|---|---|"]
        for b, row in m.items():
            lines.append(f"| {b} | {row['delta'] / 2**20:.0f} MiB | {row['delta'] / b / 2**20:.1f} MiB |")
        lines.append(f"| ratio | {many['delta'] / max(one['delta'], 1):.1f}x for {max(m)}x the envs | |")
    if report.get("ratios"):
        lines += ["", "### Ratios (ratio_bench.py)", "", _ratio_bench().markdown(report["ratios"]).rstrip()]
    if report.get("simulator"):
        lines += ["", "### C++ simulator, one core (goenv_bench)", "", "| benchmark | nodes | ns per node+edge |",
                  "|---|---|---|"]
        for name, row in report["simulator"].items():
            lines.append(f"| {name} | {row['nodes']:.0f} | {row['ns_per_element']:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    if "--simulator-floor" in sys.argv[1:]:  # goenv bench --simulator-floor [its options]: simulator_floor.py
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import simulator_floor
        sys.exit(simulator_floor.main([a for a in sys.argv[1:] if a != "--simulator-floor"]))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--simulator-floor", action="store_true",
                        help="instead: goenv's simulator vs a bare list scheduler, wall time and instruction "
                             "counts (tests/benchmarks/simulator_floor.py; the other options go to it)")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=0.6, help="per measurement (best of 3)")
    parser.add_argument("--memory-envs", type=int, default=64)
    parser.add_argument("--quick", action="store_true", help="short measurements, no memory run")
    parser.add_argument("--json", help="also write the numbers to this JSON file")
    parser.add_argument("--markdown", help="also write the tables to this Markdown file")
    parser.add_argument("--ratios-only", action="store_true",
                        help="only the ratios of ratio_bench.py (step times by task, fused vs floor, cold start, "
                             "make_vec 2 vs 1 threads, GO vs a plain-PyTorch policy)")
    parser.add_argument("--readme", metavar="FILE",
                        help="write the ratio table between FILE's <!-- ratios:begin/end --> markers; README.md: "
                             "the page of the README or docs/ that holds them (docs/performance.md)")
    parser.add_argument("--scaling-only", type=int, metavar="NODES", help=argparse.SUPPRESS)
    parser.add_argument("--bench-binary", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "dev",
                                                              "goenv_bench"))
    args = parser.parse_args()
    seconds = 0.1 if args.quick else args.seconds
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if args.scaling_only:
        print(json.dumps(thread_scaling(args.scaling_only, args.num_envs, seconds, cores)))
        return
    ratio_bench = _ratio_bench()
    ratio_bench.check_outputs(args.json, args.readme)  # before minutes of measuring
    if args.markdown:
        ratio_bench.check_outputs(args.markdown, None, "--markdown")
    if args.ratios_only:
        ratios = ratio_bench.run(args.quick, os.path.normpath(args.bench_binary))
        print(ratio_bench.markdown(ratios))
        ratio_bench.write_outputs(ratios, args.json, args.readme)
        return
    started = time.time()
    report = {"machine": platform.processor() or platform.machine(), "cores": cores, "num_envs": args.num_envs,
              "scaling_nodes": 1000, "load_average": os.getloadavg()}
    report["throughput"] = throughput((100, 1000), args.num_envs, seconds, cores)
    report["scaling"] = thread_scaling(1000, args.num_envs, seconds, cores)
    report["scaling_passive"] = thread_scaling_with_policy("PASSIVE", 1000, args.num_envs, seconds)
    report["overhead"] = python_overhead(2000 if args.quick else 20000)
    report["memory"] = None if args.quick else memory(args.memory_envs)
    report["simulator"] = None if args.quick else cpp_simulator(os.path.normpath(args.bench_binary))
    report["ratios"] = ratio_bench.run(args.quick, os.path.normpath(args.bench_binary))
    if args.readme:
        ratio_bench.write_outputs(report["ratios"], None, args.readme)
    report["seconds"] = time.time() - started
    text = markdown(report)
    print(text)
    for path, content in ((args.json, json.dumps(report, indent=2, default=str)), (args.markdown, text)):
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            goenv.files.write_atomic(path, content.encode(), what="output")
    print(f"({report['seconds']:.0f} s; load average before: {report['load_average'][0]:.1f}"
          + (f"; JSON: {args.json})" if args.json else ")"))


if __name__ == "__main__":
    main()
