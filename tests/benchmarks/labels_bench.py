"""Labelling throughput (the labelling targets), all ratios from one run:

- samples/s of goenv.datasets.label on 1,000- and 10,000-node graphs against the bare
  simulation of the same decisions (goenv's simulator called in a loop on the labelled
  decisions, nothing else), 5 runs each, interleaved: target label time <= 1.5x the bare
  simulation time (medians); 1,000-node graphs as one shard (16 graphs) and as a run of 4 shards
  (64 graphs: what is paid once per call, the manifest, the source's first read and the threads'
  start, weighs as in a long run; what is paid per shard does not shrink); and the 1,000-node
  graphs with 4x the decisions per graph (the work done once per graph, its heuristics, env and
  row, spread over more samples);
- Ray: the same labelling with 2 workers against 1, 3 run pairs (target >= 1.7x, medians), on a
  warm Ray session (one that labelled before) and as the first labelling of a fresh one; outputs
  byte-identical.

    python tests/benchmarks/labels_bench.py [--quick] [--json docs/results/labels_bench.json] [--readme docs/datasets.md]
    python tests/benchmarks/labels_bench.py --from-json docs/results/labels_bench.json --readme docs/datasets.md

With --no-ray, an existing --json file's Ray row is kept, marked with the commit it was measured at.

--readme FILE writes the table between FILE's <!-- labels-bench:begin/end --> markers; with
README.md, into whichever page of the README and docs/ holds them (docs/datasets.md).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import goenv
import goenv._core as _core
from goenv.labels.labeller import HEADS, simulate_all

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments"))
from doc_sections import section_file, write_section  # noqa: E402  (the results scripts' one implementation)
from readme_tables import results_commit  # noqa: E402

TASK, CLUSTER, K = "placement", "4xgpu-nvlink", 64
LABEL_REPEATS = 5  # label runs, each followed by the bare simulation of its decisions: medians and the ratios' range
REPEATS = 3  # Ray run pairs each way
IDLE = "writer thread waiting"  # a part of earlier runs' (the writer thread waiting): left out of the table


def files(root: str) -> dict[str, bytes]:
    return {name: Path(root, name).read_bytes() for name in sorted(os.listdir(root))}


def bare_simulation_seconds(labels) -> tuple[float, float]:
    """The simulator alone on every labelled decision, the way label() calls it (one
    simulate_all per graph: the C++ loop with nothing around it, which is faster than
    goenv.simulate per decision): (wall seconds, CPU seconds of this thread)."""
    cluster = goenv.clusters.get(labels.config["cluster"])
    total = cpu = 0.0
    for i in range(len(labels)):
        graph, decisions = labels.graph(i)["goenv_graph"], labels.decisions(i)
        stacked = {head: np.stack(decisions[head]) for head in HEADS}
        start, start_cpu = time.perf_counter(), time.thread_time()
        simulate_all(graph, cluster, stacked, labels.config["max_fusion_size"])
        total += time.perf_counter() - start
        cpu += time.thread_time() - start_cpu
    return total, cpu


@contextlib.contextmanager
def stopwatch():
    """CPU seconds spent in the labelling's parts (wrapped functions, each part's CPU time
    without the parts it calls), on whichever thread: label_shard labels and writes on two
    threads (goenv/labels/pipeline.py). CPU, not wall time: a thread preempted or waiting
    for the other is charged nothing."""
    import goenv.labels.decisions as decisions
    import goenv.labels.labeller as labeller
    import goenv.labels.shard as shard
    import goenv.labels.sources as sources
    import goenv.labels.tables as tables
    import goenv.storage as storage

    spent, lock, local = collections.Counter(), threading.Lock(), threading.local()
    parts = [(labeller, "simulate_all", "simulation"), (decisions.Decider, "heuristics", "heuristics (C++)"),
             (decisions.Decider, "random", "drawing decisions"), (decisions.Decider, "perturb", "drawing decisions"),
             (decisions.Decider, "moves", "drawing decisions"),
             (tables, "labels_table", "Arrow tables"), (tables, "graphs_table", "Arrow tables"),
             (tables.ShardWriter, "write", "Parquet encoding"), (tables.ShardWriter, "close", "Parquet encoding"),
             (shard._HashingFile, "write", "hashing and writing files"),
             (shard, "write_atomic", "hashing and writing files"),
             (storage, "write_atomic", "hashing and writing files"),  # shards sent back by Ray tasks, manifests
             (sources.Source, "graph", "reading graphs"), (shard, "prepare_graph", "envs and graph rows"),
             (shard, "draw", "drawing decisions"), (shard, "label_drawn", "joining outcomes"),
             (shard, "label_in_order", "the pipeline's threads")]
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in parts]

    def timed(function, key):
        def wrapper(*args, **kwargs):
            stack = local.__dict__.setdefault("stack", [])
            stack.append(0.0)  # the time of the wrapped parts this one calls
            start = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.thread_time() - start
                nested = stack.pop()
                if stack:
                    stack[-1] += elapsed
                with lock:
                    spent[key] += elapsed - nested
        return wrapper

    for (owner, name, key), (_, _, function) in zip(parts, originals):
        setattr(owner, name, timed(function, key))
    try:
        yield spent
    finally:
        for owner, name, function in originals:
            setattr(owner, name, function)


def throughput(folder: str, nodes: int, count: int, k: int = K) -> dict:
    source = os.path.join(folder, f"graphs-{nodes}-{count}")
    if not os.path.exists(source):
        goenv.datasets.generate("random-series-parallel", count, source, params={"num_nodes": nodes}, progress=False)
    goenv.datasets.label(source, os.path.join(folder, "warm"), task=TASK, cluster=CLUSTER, decisions_per_graph=2,
                         progress=False, overwrite=True)  # imports and first calls out of the timing
    out = os.path.join(folder, f"labels-{nodes}-{count}-{k}")
    runs = []  # (label seconds, its CPU seconds, bare seconds, their CPU seconds): LABEL_REPEATS runs, interleaved
    for repeat in range(LABEL_REPEATS):
        start, start_cpu = time.perf_counter(), time.process_time()
        labels = goenv.datasets.label(source, f"{out}-{repeat}", task=TASK, cluster=CLUSTER, decisions_per_graph=k,
                                      progress=False)
        runs.append((time.perf_counter() - start, time.process_time() - start_cpu, *bare_simulation_seconds(labels)))
    seconds, cpu_seconds, bare, bare_cpu = (float(np.median(column)) for column in zip(*runs))
    ratios = [run[0] / run[2] for run in runs]
    samples = labels.num_decisions
    with stopwatch() as spent:  # a second run, timed by part (the wrappers cost a little)
        goenv.datasets.label(source, out + "-parts", task=TASK, cluster=CLUSTER, decisions_per_graph=k,
                             progress=False)
    return {"parts_cpu_seconds": dict(spent), "nodes": nodes, "graphs": count, "decisions_per_graph": k, "samples": samples,
            "label_seconds": seconds, "bare_seconds": bare,
            "label_samples_per_s": samples / seconds, "bare_samples_per_s": samples / bare, "ratio": seconds / bare,
            "ratio_range": [min(ratios), max(ratios)], "repeats": LABEL_REPEATS,
            "label_cpu_seconds": cpu_seconds, "bare_cpu_seconds": bare_cpu, "cpu_ratio": cpu_seconds / bare_cpu,
            "mean_nodes": float(np.mean([labels.graph(i)["num_nodes"] for i in range(len(labels))]))}


def ray_scaling(folder: str, nodes: int, count: int) -> dict:
    """2 Ray workers against 1, REPEATS run pairs each way: warm (a Ray session that has labelled
    before: its worker processes have goenv imported and the source open) and cold (the first
    labelling of a fresh Ray session, whose start is not timed)."""
    import ray

    source = os.path.join(folder, f"ray-graphs-{nodes}")
    goenv.datasets.generate("random-series-parallel", count, source, params={"num_nodes": nodes}, progress=False)
    options = {"task": TASK, "cluster": CLUSTER, "decisions_per_graph": K, "shard_size": 2, "progress": False}
    init = {"num_cpus": 2, "include_dashboard": False, "log_to_driver": False, "configure_logging": False}

    def timed(out: str, workers: int) -> float:
        start = time.perf_counter()
        goenv.datasets.label(source, out, workers=workers, **options)
        return time.perf_counter() - start

    timings = {(mode, workers): [] for mode in ("warm", "cold") for workers in (1, 2)}
    ray.init(**init)
    try:
        goenv.datasets.label(source, os.path.join(folder, "ray-warm-up"), workers=2,
                             **{**options, "decisions_per_graph": 2})
        for repeat in range(REPEATS):
            for workers in (1, 2):
                timings["warm", workers].append(timed(os.path.join(folder, f"ray-{workers}-{repeat}"), workers))
    finally:
        ray.shutdown()
    for repeat in range(REPEATS):
        for workers in (1, 2):
            ray.init(**init)
            try:
                timings["cold", workers].append(timed(os.path.join(folder, f"ray-cold-{workers}-{repeat}"), workers))
            finally:
                ray.shutdown()
    local = os.path.join(folder, "ray-0")
    goenv.datasets.label(source, local, **options)
    identical = all(files(local) == files(os.path.join(folder, f"ray-{prefix}{workers}-{repeat}"))
                    for prefix in ("", "cold-") for workers in (1, 2) for repeat in range(REPEATS))
    result = {"nodes": nodes, "graphs": count, "samples": count * K, "repeats": REPEATS, "byte_identical": identical}
    for mode in ("warm", "cold"):
        one, two = timings[mode, 1], timings[mode, 2]
        ratios = [a / b for a, b in zip(one, two)]
        result[mode] = {"seconds_1": float(np.median(one)), "seconds_2": float(np.median(two)),
                        "speedup": float(np.median(one) / np.median(two)), "speedup_range": [min(ratios), max(ratios)]}
    return result


def ray_row_of(results: dict) -> dict | None:
    """The results' Ray row, if it has this script's shape (warm and cold runs): files written
    before the two modes hold one speedup, which this table no longer reports."""
    row = results.get("ray")
    return row if row and "warm" in row and "cold" in row else None


def table(results: dict) -> str:
    lines = [f"Measured by `python tests/benchmarks/labels_bench.py --readme docs/datasets.md` at commit "
             f"`{results['commit'][:10]}`{' (uncommitted changes)' if results['dirty'] else ''} (2 shared cores, "
             f"load average {results['load']:.1f} at the start); {K} decisions per graph (`mix`), `{TASK}` on "
             f"`{CLUSTER}`, random series-parallel graphs:", "",
             "| what | measured | target |", "|---|---|---|"]
    for row in results["throughput"]:
        cpu_parts = "parts_cpu_seconds" in row  # (older runs timed the parts by wall time)
        parts = row.get("parts_cpu_seconds", row.get("parts_seconds", {}))
        split = ", ".join(f"{key} {value / row['samples'] * 1e3:.2f}" for key, value in
                          sorted(parts.items(), key=lambda item: -item[1]) if key != IDLE)
        cpu = f"; CPU time {row['cpu_ratio']:.2f}x, all threads" if "cpu_ratio" in row else ""
        spread = (f" (median of {row['repeats']} runs, each {row['ratio_range'][0]:.2f}-{row['ratio_range'][1]:.2f}x)"
                  if "ratio_range" in row else "")
        k = row.get("decisions_per_graph", K)
        extra = k != K  # the same graphs with more decisions each: how the per-graph work amortizes
        lines.append(f"| labelling, {row['nodes']:,}-node graphs ({row['graphs']} graphs, {row['samples']:,} samples"
                     f"{f', {k} decisions per graph' if extra else ''}) "
                     f"| {row['label_samples_per_s']:,.0f} samples/s; bare simulation of the same decisions "
                     f"{row['bare_samples_per_s']:,.0f}/s: **{row['ratio']:.2f}x** its time{spread}{cpu} ({'CPU ' if cpu_parts else ''}ms per sample: "
                     f"{split}) | {'(more decisions per graph)' if extra else '<= 1.5x'} |")
    ray_row = ray_row_of(results)
    if ray_row:
        when = (f"; measured at `{ray_row['commit'][:10]}`, load average {ray_row['load']:.1f}"
                if "commit" in ray_row else "")
        warm, cold = ray_row["warm"], ray_row["cold"]
        lines.append(f"| Ray, 2 workers vs 1 ({ray_row['graphs']} graphs of {ray_row['nodes']:,} nodes, "
                     f"{ray_row['samples']:,} samples{when}) | **{warm['speedup']:.2f}x** on a warm Ray session "
                     f"({warm['seconds_1']:.1f} s vs {warm['seconds_2']:.1f} s, median of {ray_row['repeats']} run "
                     f"pairs, each {warm['speedup_range'][0]:.2f}-{warm['speedup_range'][1]:.2f}x); "
                     f"{cold['speedup']:.2f}x as the first labelling of a fresh session ({cold['seconds_1']:.1f} s vs "
                     f"{cold['seconds_2']:.1f} s, each {cold['speedup_range'][0]:.2f}-{cold['speedup_range'][1]:.2f}x: "
                     f"the workers start and import goenv); files byte-identical to one process: "
                     f"{'yes' if ray_row['byte_identical'] else 'NO'} | >= 1.7x |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray rows")
    parser.add_argument("--json", help="write the numbers here")
    parser.add_argument("--readme", metavar="FILE", help="write the table between FILE's <!-- labels-bench:begin/end "
                        "--> markers; README.md: the page of the README or docs/ that holds them (docs/datasets.md)")
    parser.add_argument("--from-json", metavar="FILE", help="measure nothing: the table of an earlier --json run")
    parser.add_argument("--ray-only", action="store_true",
                        help="measure only the Ray rows, into the --json file's earlier results (a busy machine "
                             "spoils the 2-vs-1 ratio: rerun it when the cores are free)")
    args = parser.parse_args(argv)
    if args.readme:
        args.readme = section_file("labels-bench", args.readme)  # before the runs, not after them
    if args.from_json:
        results = json.loads(Path(args.from_json).read_text())
        if results.get("ray") and not ray_row_of(results):
            parser.error(f"{args.from_json}: its Ray row predates the warm and cold runs; measure it again with "
                         f"--ray-only --json {args.from_json}")
        print(table(results))
        if args.readme:
            write_section(args.readme, "labels-bench", table(results))
        return
    if args.ray_only:
        results = json.loads(Path(args.json).read_text())
        with tempfile.TemporaryDirectory() as folder:
            results["ray"] = {**ray_scaling(folder, 10000, 4 if args.quick else 48), **results_commit(),
                              "load": os.getloadavg()[0]}
        print(table(results))
        goenv.files.write_atomic(args.json, (json.dumps(results, indent=1) + "\n").encode())
        return
    results = {**results_commit(), "load": os.getloadavg()[0], "throughput": []}
    # (nodes, graphs, decisions per graph): the targets' rows (1k nodes as one shard and as a longer run of
    # 4 shards, whose per-call costs - the manifest, the first read, the threads' start - weigh less), and
    # 1k nodes with 4x the decisions
    sizes = [(1000, 2, K), (10000, 1, K)] if args.quick else \
        [(1000, 16, K), (1000, 64, K), (1000, 16, 4 * K), (10000, 4, K)]
    with tempfile.TemporaryDirectory() as folder:
        for nodes, count, k in sizes:
            results["throughput"].append(throughput(folder, nodes, count, k))
            print(json.dumps(results["throughput"][-1]), flush=True)
        if not args.no_ray:
            results["ray"] = ray_scaling(folder, 10000, 4 if args.quick else 48)
            print(json.dumps(results["ray"]), flush=True)
        elif args.json and Path(args.json).exists():  # the Ray row of the earlier run, marked with its commit
            earlier = json.loads(Path(args.json).read_text())
            if ray_row_of(earlier):  # (an older shape is left out: --ray-only measures it again)
                results["ray"] = {"commit": earlier["commit"], "load": earlier["load"], **earlier["ray"]}
    print(table(results))
    if args.json:
        goenv.files.write_atomic(args.json, (json.dumps(results, indent=1) + "\n").encode())
    if args.readme:
        write_section(args.readme, "labels-bench", table(results))


if __name__ == "__main__":
    sys.exit(main())
