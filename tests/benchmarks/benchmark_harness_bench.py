"""What the benchmark harness costs, as ratios from one run (the benchmark targets):

- evaluate() of a 16-call policy on placement-transfer-v0 (8 graphs x 5 seeds) against the bare
  loop it replaces (make each case's env, reset, 16 policy calls and steps, nothing else), 5 runs
  interleaved, medians: target <= 2x;
- validate() of that results file, in seconds per 1,000 decisions (graphs of 213 to 4,452 nodes,
  1,070 on average): target <= 1 s. A file of this benchmark holds 40 decisions on 8 graphs, so
  what validate pays once per file whatever its decisions (building the 8 graphs and envs, and
  the summary's bootstrap intervals, each timed alone, interleaved) is reported apart from the
  cost per decision.

    python tests/benchmarks/benchmark_harness_bench.py [--runs 5] [--readme docs/benchmark.md]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import goenv.benchmark
from goenv.provenance import source_commit

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments"))
from doc_sections import section_file, write_section  # noqa: E402  (the results scripts' one implementation)

BENCHMARK, BUDGET = "placement-transfer-v0", 16


def policy(obs):
    """Each node to a uniformly drawn allowed device: cheap, so the harness's own cost shows."""
    mask = np.asarray(obs["action_mask"]) > 0
    return (np.random.default_rng(0).random(mask.shape) * mask).argmax(axis=1)


def bare() -> float:
    started = time.perf_counter()
    benchmark = goenv.benchmark.get(BENCHMARK)
    for case in benchmark.cases:
        for seed in benchmark.seeds:
            env = case.make(horizon=BUDGET)
            obs, _ = env.reset(seed=seed)
            for _ in range(BUDGET):
                obs, *_ = env.step(policy(obs))
    return time.perf_counter() - started


def harness() -> tuple[float, goenv.benchmark.Results]:
    started = time.perf_counter()
    results = goenv.benchmark.evaluate(policy, BENCHMARK, budget=BUDGET)
    return time.perf_counter() - started, results


def make_cases() -> float:
    """What validate pays once per case whatever the decisions: the graph, its env, a reset."""
    started = time.perf_counter()
    for case in goenv.benchmark.get(BENCHMARK).cases:
        case.make().reset(seed=0)
    return time.perf_counter() - started


def summarize(results) -> float:
    """What validate pays once per file after re-simulating: the scores' summary (bootstrap intervals)."""
    from goenv.benchmark.results import summarize as summary_of

    started = time.perf_counter()
    summary_of(goenv.benchmark.get(BENCHMARK), results.records)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--readme", help="write the table into this page's <!-- benchmark-cost:begin/end --> markers")
    args = parser.parse_args()
    page = section_file("benchmark-cost", args.readme) if args.readme else None
    bare_times, harness_times, validate_times, case_times, summary_times = [], [], [], [], []
    for _ in range(args.runs):
        bare_times.append(bare())
        seconds, results = harness()
        harness_times.append(seconds)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "results.json"
            results.save(path)
            started = time.perf_counter()
            goenv.benchmark.validate(path)
            validate_times.append(time.perf_counter() - started)
        case_times.append(make_cases())
        summary_times.append(summarize(results))
    decisions = len(results.records)
    ratio = statistics.median(harness_times) / statistics.median(bare_times)
    per_case, per_file = statistics.median(case_times), statistics.median(summary_times)
    per_thousand = (statistics.median(validate_times) - per_case - per_file) / decisions * 1000
    commit = (source_commit().get("commit") or "unknown")[:9]
    table = (f"Measured by `python tests/benchmarks/benchmark_harness_bench.py --readme docs/benchmark.md` at "
             f"`{commit}` ({args.runs} runs interleaved, medians, 2 cores):\n\n"
             "| what | measured | target |\n|---|---|---|\n"
             f"| evaluate() of a {BUDGET}-call policy on {BENCHMARK} / the bare loop of the same steps | "
             f"{ratio:.2f}x ({statistics.median(harness_times):.2f} s / {statistics.median(bare_times):.2f} s) "
             f"| <= 2x |\n"
             f"| validate(), seconds per 1,000 decisions, beyond what a file costs once (each case's env, the summary) | {per_thousand:.2f} s "
             f"({decisions} decisions in {statistics.median(validate_times):.2f} s, of which the "
             f"{len(goenv.benchmark.get(BENCHMARK).cases)} envs {per_case:.2f} s and the summary's bootstrap "
             f"{per_file:.2f} s) | <= 1 s |")
    print(table)
    if page is not None:
        write_section(page, "benchmark-cost", table)


if __name__ == "__main__":
    main()
