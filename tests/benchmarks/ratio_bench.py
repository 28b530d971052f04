"""The step-cost ratios, all measured in one run (`goenv bench --ratios`, or as
part of `goenv bench`):

  * step time of fusion and joint vs placement, same graph, same decisions
    (each env is stepped with the decisions it starts from, so every task
    simulates the same placement and priorities; fusion/joint add the XLA-style
    fusion pass), on inception and gnmt-8;
  * the fused simulation vs the bare list scheduler (goenv_bench's BM_Fused and
    BM_Floor, same graph, cluster and placement);
  * the first goenv.simulate of a process vs a warm one (fresh subprocesses, a new placement
    every call);
  * make_vec with 2 threads vs 1: 16 envs, 100 steps, at 1,000 and 200 nodes;
  * GO's act + update per env step against the plain-PyTorch anchor of the same widths
    (agents_bench.py, plain_policy.py), at 1,000 and 10,000 nodes, 1 and the default torch threads.

    python tests/benchmarks/ratio_bench.py [--json FILE] [--quick] [--readme docs/performance.md]
    goenv bench --ratios --readme docs/performance.md   # the same through the CLI; plain `goenv bench` includes it

--readme FILE writes the table between FILE's <!-- ratios:begin/end --> markers; with README.md,
into whichever page of the README and docs/ holds them (docs/performance.md).

Each number is the best of a few repetitions inside this one run; compare the
ratios, not the absolute times (the machines are shared and noisy).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import goenv
from goenv.vector import make_vec

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "experiments"))  # doc_sections: the results scripts' helpers
from python_bench import layered_graph  # noqa: E402 - the same random layered DAGs as the other benchmarks

TASKS = ("placement", "scheduling", "fusion", "joint")
STEP_GRAPHS = ("inception", "gnmt-8")
HORIZON = 10**9


def same_decisions_action(env: goenv.GraphEnv):
    """The action that re-applies the decisions the env starts from (so every task simulates them)."""
    core = env.unwrapped.core
    parts = {"placement": core.placement.astype(np.int64), "priority": core.priority.astype(np.int64),
             "fusion": core.fusion.astype(np.int64)}
    heads = list(core.heads)
    return parts[heads[0]] if len(heads) == 1 else {h: parts[h] for h in heads}


def step_seconds(graph: str, repeats: int, steps: int) -> dict:
    """Seconds per step of each task on `graph` (C++ env step, observation included), best of `repeats`
    rounds; each round times every task in turn, so that load changes hit them all.
    Placement, fusion and joint start on one device (placement="single"): the same decisions for all."""
    cores, actions = {}, {}
    for task in TASKS:
        env = goenv.make(f"{task}-{graph}", render_mode=None, horizon=HORIZON, placement="single")
        env.reset(seed=0)
        actions[task] = same_decisions_action(env)
        cores[task] = env.unwrapped.core
        cores[task].step(actions[task])  # warm
    best = {task: float("inf") for task in TASKS}
    for _ in range(repeats):
        for task in TASKS:
            core, action = cores[task], actions[task]
            start = time.perf_counter()
            for _ in range(steps):
                core.step(action)
            best[task] = min(best[task], (time.perf_counter() - start) / steps)
    return best


def best_cpu_times(bench_binary: str, pattern: str, min_time: float) -> dict | None:
    """{benchmark name: best CPU time (us) of 3 repetitions} for goenv_bench's benchmarks matching `pattern`."""
    if not os.path.exists(bench_binary):
        return None
    proc = subprocess.run([bench_binary, f"--benchmark_filter={pattern}", "--benchmark_format=json",
                           f"--benchmark_min_time={min_time}", "--benchmark_repetitions=3"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    best: dict = {}
    for b in json.loads(proc.stdout)["benchmarks"]:
        if b.get("run_type") == "iteration":
            best[b["run_name"]] = min(b["cpu_time"], best.get(b["run_name"], float("inf")))
    return best


def floor_ratios(bench_binary: str, graphs: list[str], min_time: float) -> dict | None:
    """BM_Fused / BM_Floor and BM_Full / BM_Floor (CPU time, best of 3 repetitions) from goenv_bench."""
    times = best_cpu_times(bench_binary, "^BM_(Floor|Full|Fused)/(" + "|".join(graphs) + ")$", min_time)
    if times is None:
        return None
    best: dict = {}
    for name, cpu in times.items():
        kind, graph = name.split("/", 1)
        best.setdefault(graph, {})[kind[3:].lower()] = cpu
    return {g: {"floor_us": t["floor"], "full_us": t["full"], "fused_us": t["fused"],
                "full_vs_floor": t["full"] / t["floor"], "fused_vs_floor": t["fused"] / t["floor"]}
            for g, t in best.items() if {"floor", "full", "fused"} <= set(t)}


COLD_SCRIPT = """
import sys, time, json
sys.path.insert(0, sys.argv[1])
from python_bench import layered_graph
import numpy as np
import goenv
graph = layered_graph(int(sys.argv[2]))
rng = np.random.default_rng(0)
placements = [rng.integers(0, 4, graph.num_nodes).astype(np.int32) for _ in range(9)]
fresh, replayed = [], []
for placement in placements:  # a new decision every call, as agents and searches make them
    start = time.perf_counter()
    goenv.simulate(graph, "4xgpu-nvlink", placement=placement)
    fresh.append(time.perf_counter() - start)
for _ in range(5):  # the last decision again and again
    start = time.perf_counter()
    goenv.simulate(graph, "4xgpu-nvlink", placement=placements[-1])
    replayed.append(time.perf_counter() - start)
print(json.dumps({"fresh": fresh, "replayed": replayed}))
"""


def cold_start(num_nodes: int, processes: int) -> dict:
    """The first goenv.simulate of a fresh process (after import goenv and building the graph; a
    preset name and a placement array, as users call it) vs a warm call in it, medians over
    `processes` processes. Every call simulates a new random placement, the first one included:
    the warm time is the median of the later calls. Replaying one decision is faster than any
    new one (the CPU's branch predictors learn the run: 2x on 1,000 nodes), so the ratio against
    the replayed call is reported too, but it compares the first call with an artifact."""
    firsts, warms, replays = [], [], []
    for _ in range(processes):
        proc = subprocess.run([sys.executable, "-c", COLD_SCRIPT, HERE, str(num_nodes)], capture_output=True,
                              text=True, check=True)
        times = json.loads(proc.stdout.strip().splitlines()[-1])
        firsts.append(times["fresh"][0])
        warms.append(float(np.median(times["fresh"][1:])))
        replays.append(min(times["replayed"]))
    first, warm, replay = float(np.median(firsts)), float(np.median(warms)), float(np.median(replays))
    return {"nodes": num_nodes, "first_ms": first * 1e3, "warm_ms": warm * 1e3, "ratio": first / warm,
            "replayed_ms": replay * 1e3, "ratio_replayed": first / replay}


def vector_scaling(graph, label: str, num_envs: int, steps: int, repeats: int) -> dict:
    """Seconds for `steps` make_vec steps with 1 and 2 threads (copy=True, the default), best of `repeats`,
    measured alternately so that load changes hit both."""
    template = goenv.GraphEnv.from_graph("placement", graph, "4xgpu-nvlink", horizon=HORIZON) \
        if isinstance(graph, goenv.Graph) else goenv.make(graph, render_mode=None, horizon=HORIZON)
    rng = np.random.default_rng(1)
    num_devices = template.unwrapped.core.num_devices
    n = template.unwrapped.core.num_nodes
    actions = [rng.integers(0, num_devices, (num_envs, n)) for _ in range(8)]
    venvs = {t: make_vec(template, num_envs=num_envs, num_threads=t) for t in (1, 2)}
    best = {1: float("inf"), 2: float("inf")}
    for venv in venvs.values():
        venv.reset(seed=0)
        venv.step(actions[0])
    for _ in range(repeats):
        for t, venv in venvs.items():
            start = time.perf_counter()
            for k in range(steps):
                venv.step(actions[k % len(actions)])
            best[t] = min(best[t], time.perf_counter() - start)
    return {"graph": label, "nodes": n, "num_envs": num_envs, "steps": steps, "seconds_1": best[1],
            "seconds_2": best[2], "speedup": best[1] / best[2]}


def task_step_ratios(bench_binary: str, min_time: float) -> dict | None:
    """The same step ratios in C++ alone (goenv_bench's BM_TaskStep: CPU time, best of 3 repetitions)."""
    times = best_cpu_times(bench_binary, "^BM_TaskStep/", min_time)
    if times is None:
        return None
    best: dict = {}
    for name, cpu in times.items():
        _, task, graph = name.split("/")
        best.setdefault(graph, {})[task] = cpu
    return {g: {f"{t}_vs_placement": s[t] / s["placement"] for t in TASKS[1:]}
            for g, s in best.items() if set(TASKS) <= set(s)}


def policy_ratios(sizes: list[int], repeats: int) -> list[dict] | None:
    """GO's act + update per env step against the plain-PyTorch anchor of the same widths
    (agents_bench.py), on one torch thread and on torch's default; None without the agents."""
    try:
        import agents_bench
        import torch
    except ImportError:
        return None
    out = []
    for n in sizes:
        for threads in (1, 0):
            # A 1,000-node act is ~15 ms: a median of 3 moved by 50% between runs, of 9 much less.
            m = agents_bench.measure(n, repeats=3 * repeats if n <= 1000 else repeats, threads=threads, imitate=False)
            out.append({**m, "threads": threads or torch.get_num_threads()})
    return out


def run(quick: bool = False, bench_binary: str | None = None) -> dict:
    repeats = 2 if quick else 5
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    from readme_tables import results_commit  # the results scripts' one implementation

    # the code measured (taken at the start) and the run's conditions
    report: dict = {**results_commit(), "load_average": os.getloadavg(), "cores": cores}
    report["steps"] = {}
    for graph in STEP_GRAPHS:
        seconds = step_seconds(graph, repeats, 3 if graph == "gnmt-8" else 50)
        report["steps"][graph] = {"seconds": seconds,
                                  **{f"{t}_vs_placement": seconds[t] / seconds["placement"] for t in TASKS[1:]}}
    bench_binary = bench_binary or os.path.join(HERE, "..", "..", "build", "dev", "goenv_bench")
    report["cpp_steps"] = task_step_ratios(os.path.normpath(bench_binary), 0.05 if quick else 0.3)
    report["floor"] = floor_ratios(os.path.normpath(bench_binary), ["inception", "gnmt-8"], 0.05 if quick else 0.3)
    report["cold_start"] = [cold_start(n, 3 if quick else 5) for n in (1000, 80000)]
    report["vector"] = [
        vector_scaling(layered_graph(1000), "layered-1000", 16, 100, repeats),
        vector_scaling("placement-transformer-xl-2", "transformer-xl-2", 16, 100, repeats),
        vector_scaling("placement-random-layered", "random-layered", 16, 100, repeats),
    ]
    report["policy"] = policy_ratios([1000] if quick else [1000, 10000], 2 if quick else 3)
    return report


# The targets: (what, limit, "max" = at most / "min" = at least).
def rows(report: dict) -> list[list[str]]:
    out = []
    for graph, s in report["steps"].items():
        ms = {t: s["seconds"][t] * 1e3 for t in TASKS}
        out.append([f"step time `{graph}`, placement / scheduling / fusion / joint (ms)",
                    " / ".join(f"{ms[t]:.3g}" for t in TASKS), ""])
        out.append([f"fusion / joint step vs placement step, `{graph}`",
                    f"{s['fusion_vs_placement']:.2f}x / {s['joint_vs_placement']:.2f}x", "≤ 1.5x"])
    for graph, r in (report.get("cpp_steps") or {}).items():
        out.append([f"fusion / joint step vs placement step, `{graph}`, C++ alone (`goenv_bench` BM_TaskStep, CPU time)",
                    f"{r['fusion_vs_placement']:.2f}x / {r['joint_vs_placement']:.2f}x", "≤ 1.5x"])
    for graph, f in (report.get("floor") or {}).items():
        out.append([f"fused simulation vs the bare list scheduler, `{graph}` (full: {f['full_vs_floor']:.2f}x)",
                    f"{f['fused_vs_floor']:.2f}x", "≤ 3x"])
    for c in report["cold_start"]:
        out.append([f"first `goenv.simulate` of a process vs a warm one, {c['nodes']:,} nodes (new decisions "
                    f"every call; vs one decision replayed: {c['ratio_replayed']:.2f}x)",
                    f"{c['ratio']:.2f}x ({c['first_ms']:.3g} vs {c['warm_ms']:.3g} ms)",
                    "≤ 2x" if c["nodes"] == 1000 else ""])
    for v in report["vector"]:
        target = "≥ 1.8x" if v["nodes"] >= 1000 else "≥ 1.0x"
        out.append([f"`make_vec` 2 threads vs 1, {v['num_envs']} envs, {v['steps']} steps, "
                    f"`{v['graph']}` ({v['nodes']:,} nodes)", f"{v['speedup']:.2f}x", target])
    for p in report.get("policy") or []:
        out.append([f"plain-PyTorch anchor / GO, act + update per env step, {p['nodes']:,} nodes, "
                    f"{p['threads']} torch thread{'s' if p['threads'] > 1 else ''} (GO {p['act'] * 1e3:.0f} + "
                    f"{p['update_per_step'] * 1e3:.0f} ms, anchor {p['plain_act'] * 1e3:.0f} + "
                    f"{p['plain_update_per_step'] * 1e3:.0f} ms)", f"{p['plain_vs_go']:.2f}x", "≥ 2x"])
    return out


def markdown(report: dict) -> str:
    lines = ["| what | measured | target |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows(report)]
    return "\n".join(lines) + "\n"


def readme_section(report: dict) -> str:
    """The ratio table with the run's conditions: written only from a report, never by hand."""
    load = report["load_average"][0]
    made_at = (f" at commit `{report['commit'][:10]}`{' (uncommitted changes)' if report['dirty'] else ''}"
               if report.get("commit") else "")  # (reports written before the commit was recorded)
    return (f"The ratios, all from one run of `goenv bench --ratios --readme docs/performance.md`{made_at} "
            f"({report['cores']} cores, load average {load:.1f} at the start):\n\n" + markdown(report).rstrip())


def check_outputs(json_path: str | None, readme: str | None, json_flag: str = "--json") -> None:
    """Refuses (SystemExit, one line) outputs that could not be written, before anything is measured."""
    from doc_sections import section_file  # the markers' one implementation

    try:
        if json_path:
            goenv.files.checked_output_path(json_path, json_flag)
        if readme:
            section_file("ratios", readme)
    except goenv.InvalidArgument as error:
        raise SystemExit(str(error)) from None


def write_outputs(report: dict, json_path: str | None, readme: str | None) -> None:
    if json_path:
        os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
        goenv.files.write_atomic(json_path, json.dumps(report, indent=2).encode(), what="--json")
    if readme:
        from doc_sections import section_file, write_section  # the markers' one implementation
        write_section(section_file("ratios", readme), "ratios", readme_section(report))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", default="out/ratio_bench.json")
    parser.add_argument("--readme", metavar="FILE", help="write the table between FILE's <!-- ratios:begin/end --> markers; "
                        "README.md: the page of the README or docs/ that holds them (docs/performance.md)")
    args = parser.parse_args(argv)
    check_outputs(args.json, args.readme)
    report = run(args.quick)
    print(markdown(report))
    write_outputs(report, args.json, args.readme)


if __name__ == "__main__":
    main()
