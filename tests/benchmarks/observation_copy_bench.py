"""What Gymnasium-exact observations cost: a step of goenv.make(...) with new memory for
every array (the default) against share_static=True (the same read-only static arrays
every step), on the largest graph (gnmt-8) and Inception-v3.

    python tests/benchmarks/observation_copy_bench.py [--repeats 20] [--json out/copy_bench.json]

Each step is a whole-graph placement (the compiler default's, so the simulated work is the
same every step); the reported overhead is (default - shared) / shared, best of the repeats,
both measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import goenv

GRAPHS = ["gnmt-8", "inception"]


def seconds_per_step(env_id: str, share_static: bool, repeats: int) -> float:
    env = goenv.make(env_id, horizon=10**9, share_static=share_static)
    obs, _ = env.reset(seed=0)
    action = env.unwrapped.core.placement.astype(np.int64)
    env.step(action)  # warm up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        env.step(action)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", default="out/observation_copy_bench.json")
    args = parser.parse_args(argv)
    rows = {}
    for graph in GRAPHS:
        env_id = f"placement-{graph}"
        shared = seconds_per_step(env_id, True, args.repeats)
        copied = seconds_per_step(env_id, False, args.repeats)
        static_bytes = sum(a.nbytes for k, a in goenv.make(env_id, share_static=True).reset(seed=0)[0].items()
                           if k in ("node_features", "edge_index", "edge_features"))
        rows[graph] = {"shared_ms": shared * 1e3, "copied_ms": copied * 1e3, "overhead": copied / shared - 1,
                       "static_mib": static_bytes / 2**20}
        print(f"{graph:12s} step with shared static arrays {shared * 1e3:8.3f} ms, with copies {copied * 1e3:8.3f} ms "
              f"(+{(copied / shared - 1) * 100:.1f}%, {static_bytes / 2**20:.1f} MiB copied per step)")
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(rows, f, indent=2)
    return rows


if __name__ == "__main__":
    main()
