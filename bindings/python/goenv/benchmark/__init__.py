"""Benchmarks anyone can score an algorithm on (docs/benchmark.md): named, versioned lists of
(task, graph, cluster) cases with budgets of simulator calls and seeds; a harness that owns the
envs and charges every call; normalized scores with bootstrap intervals; results files that
`validate` re-simulates; and a leaderboard made from committed results.

    import goenv.benchmark as bench
    results = bench.evaluate(lambda obs: obs["action_mask"].argmax(-1), "placement-quick-v0")
    print(results.summary["iqm"])
"""

from goenv.benchmark.catalog import Benchmark, Case, get, names
from goenv.benchmark.harness import evaluate
from goenv.benchmark.results import Results, load, validate
from goenv.benchmark.runners import Search

__all__ = ["Benchmark", "Case", "Results", "Search", "evaluate", "get", "load", "names", "validate"]
