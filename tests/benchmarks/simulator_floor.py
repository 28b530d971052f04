"""goenv's simulator against the floor (a bare list scheduler, floor_simulator.h),
per graph family: wall time and instructions per node+edge.

    python tests/benchmarks/simulator_floor.py                      # ~3 minutes on 2 cores
    python tests/benchmarks/simulator_floor.py --no-callgrind       # wall time only (~1 minute)
    python tests/benchmarks/simulator_floor.py --compare out/old.json  # instruction ratios vs an earlier run
    goenv bench --simulator-floor                                   # the same, through the CLI

Wall time comes from goenv_bench (Google Benchmark; the best of a few
repetitions, all in this one run), so the full/floor ratio compares numbers
measured side by side. Wall time swings on a shared machine; instruction counts
do not: each simulator is called once under `valgrind --tool=callgrind`, after
one warm-up call, counting only the measured call (--toggle-collect), so the
counts repeat exactly and can be compared across commits (keep the JSON).

The Python boundary (--python, on by default when goenv imports): goenv.simulate
on gnmt-8 with the same placement, plus reading every result array, against the
C++ run (BM_Full) of the same run; both CPU time, best of a few.

Simulators: `floor` (bare list scheduler, makespan only), `full` (goenv's
Simulator: validation, memory, transfers, critical path, per-node timeline;
fusion off) and `fused` (goenv.simulate with the XLA-style fusion priorities:
plan, contract, simulate, map back; it allocates per call).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "experiments"))
from readme_tables import results_commit  # noqa: E402  (the results scripts' one implementation)
GRAPHS = ["inception", "transformer-xl-8", "gnmt-8", "layered-1000", "layered-80000"]
SIMULATORS = ["floor", "full", "fused"]


def find_bench_binary() -> str | None:
    """build/dev/goenv_bench, else any build/*/goenv_bench (newest first)."""
    preferred = os.path.join(ROOT, "build", "dev", "goenv_bench")
    if os.path.exists(preferred):
        return preferred
    found = sorted(glob.glob(os.path.join(ROOT, "build", "*", "goenv_bench")), key=os.path.getmtime, reverse=True)
    return found[0] if found else None


def wall_times(binary: str, graphs: list[str], min_time: float, repetitions: int) -> dict:
    """Seconds per call of each simulator on each graph: the best repetition."""
    pattern = "^BM_(Floor|Full|Fused)/(" + "|".join(graphs) + ")$"
    proc = subprocess.run([binary, f"--benchmark_filter={pattern}", "--benchmark_format=json",
                           f"--benchmark_min_time={min_time}", f"--benchmark_repetitions={repetitions}"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{binary} failed: {proc.stderr[-2000:]}")
    try:
        benchmarks = json.loads(proc.stdout)["benchmarks"]
    except json.JSONDecodeError as error:
        raise RuntimeError(f"{binary} printed no JSON: {proc.stdout[-500:]!r} {proc.stderr[-2000:]!r}") from error
    out: dict = {}
    for b in benchmarks:
        if b.get("run_type") != "iteration":
            continue
        if b.get("error_occurred"):
            raise RuntimeError(f"{b['name']}: {b.get('error_message')}")
        kind, graph = b["run_name"].split("/", 1)
        sim = kind[len("BM_"):].lower()
        entry = out.setdefault(graph, {"nodes": int(b["nodes"]), "elements": int(b["elements"]), "seconds": {}})
        seconds = b["cpu_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
        entry["seconds"][sim] = min(seconds, entry["seconds"].get(sim, float("inf")))
    return out


def instructions(binary: str, graph: str) -> dict:
    """Instructions of one call of each simulator, from callgrind (exact, repeatable)."""
    with tempfile.TemporaryDirectory() as tmp:
        out_file = os.path.join(tmp, "callgrind.out")
        proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}",
                               "--collect-atstart=no", "--toggle-collect=*measured_*",
                               binary, f"--count_instructions={graph}"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"callgrind on {graph} failed ({proc.returncode}): {proc.stderr[-2000:]}")
        annotate = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out_file],
                                  capture_output=True, text=True, check=True).stdout
    counts = {}
    for line in annotate.splitlines():
        match = re.match(r"\s*([\d,]+)\s.*measured_(floor|full|fused)\(", line)
        if match and match.group(2) not in counts:
            counts[match.group(2)] = int(match.group(1).replace(",", ""))
    missing = [s for s in SIMULATORS if s not in counts]
    if missing:
        raise RuntimeError(f"callgrind_annotate shows no count for {missing} on {graph}")
    return counts


def python_boundary(name: str, cpp_seconds: float, repeats: int) -> dict:
    """CPU seconds of goenv.simulate (+ reading its arrays) on `name` vs the C++ run."""
    import numpy as np

    import goenv

    graph = goenv.datasets.load(name)
    cluster = goenv.datasets.info(name)["default_cluster"]
    devices = goenv.clusters.get(cluster).num_devices
    # The C++ benchmark's block placement: round robin over blocks of the topological order.
    order = np.asarray(graph.topological_order)
    block = max(1, graph.num_nodes // (devices * 4))
    placement = np.empty(graph.num_nodes, dtype=np.int32)
    placement[order] = (np.arange(graph.num_nodes) // block) % devices

    def best(fn) -> float:
        fn()  # warm-up (builds and caches the simulator)
        times = []
        for _ in range(repeats):
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
        return min(times)

    result = goenv.simulate(graph, cluster, placement=placement)
    call = best(lambda: goenv.simulate(graph, cluster, placement=placement))
    arrays = best(lambda: (result.start, result.finish, result.device, result.critical, result.kernel,
                           result.device_busy, result.peak_memory, result.transfers))
    return {"graph": name, "module": goenv.__file__, "call_seconds": call, "arrays_seconds": arrays,
            "cpp_seconds": cpp_seconds, "boundary_seconds": call + arrays - cpp_seconds,
            "boundary_fraction": (call + arrays - cpp_seconds) / cpp_seconds}


def markdown(report: dict, previous: dict | None) -> str:
    lines = [f"## Simulator vs floor ({report['machine']}, commit {report['commit']})", "",
             "| graph | nodes+edges | floor ns/elem | full ns/elem | full/floor | fused ns/elem | fused/floor |"
             " floor instr/elem | full instr/elem | fused instr/elem |"
             + (" full instr vs previous |" if previous else ""),
             "|---|---|---|---|---|---|---|---|---|---|" + ("---|" if previous else "")]
    for graph, r in report["graphs"].items():
        ns = {s: r["seconds"][s] * 1e9 / r["elements"] for s in SIMULATORS}
        ins = r.get("instructions_per_element")
        cells = [graph, f"{r['elements']:,}", f"{ns['floor']:.1f}", f"{ns['full']:.1f}",
                 f"{r['seconds']['full'] / r['seconds']['floor']:.2f}x", f"{ns['fused']:.1f}",
                 f"{r['seconds']['fused'] / r['seconds']['floor']:.2f}x"]
        cells += [f"{ins[s]:.0f}" for s in SIMULATORS] if ins else ["-"] * 3
        if previous:
            old = previous.get("graphs", {}).get(graph, {}).get("instructions_per_element")
            cells.append(f"{old['full'] / ins['full']:.2f}x fewer" if old and ins else "-")
        lines.append("| " + " | ".join(cells) + " |")
    b = report.get("python")
    if b:
        lines += ["", f"Python boundary on {b['graph']} (CPU time, best of a few): goenv.simulate "
                  f"{b['call_seconds'] * 1e3:.2f} ms + reading every result array {b['arrays_seconds'] * 1e3:.2f} ms "
                  f"vs the C++ run {b['cpp_seconds'] * 1e3:.2f} ms: boundary {b['boundary_fraction'] * 100:+.1f}% "
                  f"({b['module']})"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench-binary", default=None, help="goenv_bench (default: build/dev, else build/*)")
    parser.add_argument("--graphs", nargs="+", default=GRAPHS)
    parser.add_argument("--min-time", type=float, default=0.3, help="seconds per benchmark repetition")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--no-callgrind", action="store_true", help="wall time only")
    parser.add_argument("--compare", default=None, help="an earlier JSON of this script: instruction ratios")
    parser.add_argument("--python", default="gnmt-8", help="graph for the Python boundary ('' to skip)")
    parser.add_argument("--json", default=os.path.join("out", "simulator_floor.json"))
    args = parser.parse_args(argv)

    binary = args.bench_binary or find_bench_binary()
    if not binary or not os.path.exists(binary):
        print("goenv_bench not found: build it with\n  cmake -S . -B build/dev -G Ninja -DGOENV_BUILD_TESTS=ON && "
              "ninja -C build/dev goenv_bench", file=sys.stderr)
        return 2
    graphs = wall_times(binary, args.graphs, args.min_time, args.repetitions)
    if not args.no_callgrind:
        if shutil.which("valgrind") is None:
            print("valgrind not found (apt-get install valgrind); use --no-callgrind", file=sys.stderr)
            return 2
        for name, r in graphs.items():
            r["instructions"] = instructions(binary, name)
            r["instructions_per_element"] = {s: c / r["elements"] for s, c in r["instructions"].items()}
    python = None
    if args.python and args.python in graphs:
        try:
            python = python_boundary(args.python, graphs[args.python]["seconds"]["full"], repeats=5)
        except ImportError as error:
            print(f"(no Python boundary: {error})", file=sys.stderr)
    report = {"commit": results_commit()["commit"], "machine": f"{platform.node()} {platform.processor() or platform.machine()}",
              "binary": os.path.relpath(binary, ROOT), "graphs": graphs,
              "python": python}
    previous = None
    if args.compare:
        with open(args.compare) as f:
            previous = json.load(f)
    print(markdown(report, previous))
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(report, f, indent=1)
    print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
