"""Search baselines at equal simulator budgets: median [range] over seeds of the
runtime each search reaches, against the best heuristic (one call per heuristic).

    python tests/benchmarks/search_bench.py                       # README numbers: 1,024 calls, seeds 0-2
    python tests/benchmarks/search_bench.py --budgets 128 1024 10000 --methods local-search

The README's "Baselines" paragraph is this script's output at its defaults.
"""

from __future__ import annotations

import argparse
import statistics
import time

import goenv

GRAPHS = ["placement-rnnlm-2", "placement-transformer-xl-2", "placement-inception"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", nargs="+", default=GRAPHS, help="env ids (default: %(default)s)")
    parser.add_argument("--methods", nargs="+", default=["local-search", "genetic", "random-search"])
    parser.add_argument("--budgets", nargs="+", type=int, default=[1024], help="simulator calls per run")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = parser.parse_args(argv)

    print(f"goenv {goenv.__version__}; runtime in ms, median [min-max] over seeds {args.seeds}; "
          "ratio = median / best heuristic")
    for graph in args.graphs:
        env = goenv.make(graph)
        best = goenv.baselines.solve(env, "best-heuristic")
        print(f"{graph}: best-heuristic {best['runtime'] * 1e3:.1f} ms ({best['simulator_calls']} calls)")
        for method in args.methods:
            for budget in args.budgets:
                begin = time.perf_counter()
                runs = [goenv.baselines.solve(env, method, budget=budget, seed=seed)["runtime"] * 1e3
                        for seed in args.seeds]
                seconds = (time.perf_counter() - begin) / len(runs)
                median = statistics.median(runs)
                print(f"  {method:<14} {budget:>6} calls: {median:8.1f} [{min(runs):.1f}-{max(runs):.1f}]"
                      f"  ratio {median / (best['runtime'] * 1e3):.3f}  ({seconds:.1f} s/run)")


if __name__ == "__main__":
    main()
