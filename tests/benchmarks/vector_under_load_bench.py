"""make_vec's default thread count on a busy machine: steps per second with the default
(one OpenMP thread per core) against one thread, while other processes keep every core
busy — the case where spinning OpenMP threads used to make the default 5-30x slower.

    python tests/benchmarks/vector_under_load_bench.py [--seconds 3] [--busy 2]

goenv sets GOMP_SPINCOUNT=3000 when it is imported (unless you set it or OMP_WAIT_POLICY):
idle OpenMP threads spin briefly, then sleep. Run with OMP_WAIT_POLICY=ACTIVE (or
GOMP_SPINCOUNT=300000, libgomp's default) to see the old behaviour, PASSIVE for sleeping at once.
The load is `--busy` processes spinning for the duration of the measurement only.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_bench import layered_graph  # noqa: E402

import goenv  # noqa: E402


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1


def steps_per_second(venv, seconds: float) -> float:
    action = np.zeros((venv.num_envs, venv.core.max_nodes), dtype=np.int64)
    venv.step(action)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        venv.step(action)
        steps += venv.num_envs
    return steps / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0, help="per measurement")
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 2, help="spinning processes")
    parser.add_argument("--nodes", type=int, default=1000)
    args = parser.parse_args(argv)
    env = goenv.GraphEnv.from_graph("placement", layered_graph(args.nodes), "4xgpu-nvlink", horizon=10**9)
    default = goenv.make_vec(env, num_envs=16)
    single = goenv.make_vec(env, num_envs=16, num_threads=1)
    for venv in (default, single):
        venv.reset(seed=0)
    results = {}
    for label, load in (("idle", 0), ("busy", args.busy)):
        workers = [multiprocessing.Process(target=spin, args=(4 * args.seconds + 2,)) for _ in range(load)]
        for w in workers:
            w.start()
        try:
            results[label] = {"default": steps_per_second(default, args.seconds),
                              "one_thread": steps_per_second(single, args.seconds)}
        finally:
            for w in workers:
                w.terminate()
                w.join()
        r = results[label]
        print(f"{label:5s} machine: default ({default.num_threads} threads) {r['default']:9.0f} steps/s, "
              f"1 thread {r['one_thread']:9.0f} steps/s, ratio {r['default'] / r['one_thread']:.2f}x "
              f"(OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT')})")
    return results


if __name__ == "__main__":
    main()
