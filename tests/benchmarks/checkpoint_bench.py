"""Loading the shipped placer (the target: under 50 ms, within 3x its file
size in memory). Each file loads in a fresh process after torch and goenv are
imported and torch's CPU kernels have started (a tiny agent's load), so the
numbers are the reader's, not the imports'.

    python tests/benchmarks/checkpoint_bench.py [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, os, resource, sys, time
import torch, goenv, goenv.agents
goenv.agents.options()  # maps goenv._agents
# torch's CPU kernels and allocator start on first use: a tiny agent's load pays for that first.
env = goenv.make("placement-rnnlm-2")
goenv.agents.load_bytes(goenv.agents.GO(env=env, hidden=8)._agent.to_bytes())
path = sys.argv[1]
size = os.path.getsize(path)
data = open(path, "rb").read()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
start = time.perf_counter()
agent = goenv.agents.load_bytes(data)
seconds = time.perf_counter() - start
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
del agent
times = []
for _ in range(5):
    start = time.perf_counter(); goenv.agents.load_bytes(data); times.append(time.perf_counter() - start)
warm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"file_bytes": size, "first_load_ms": seconds * 1e3, "warm_load_ms": min(times) * 1e3,
                  "peak_rss_growth_bytes": after - before, "memory_ratio": (after - before) / size,
                  "warm_peak_rss_growth_bytes": warm - after, "warm_memory_ratio": (warm - after) / size}))
os._exit(0)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    from pathlib import Path

    import goenv.agents

    folder = Path(goenv.agents.__file__).resolve().parent / "shipped"
    results = {}
    for path in sorted(folder.glob("*.agent")):
        run = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True)
        results[path.name] = json.loads(run.stdout.strip().splitlines()[-1])
        r = results[path.name]
        print(f"{path.name}: {r['file_bytes'] / 1e6:.2f} MB, first load {r['first_load_ms']:.1f} ms "
              f"(warm {r['warm_load_ms']:.1f} ms), peak memory +{r['peak_rss_growth_bytes'] / 1e6:.2f} MB "
              f"= {r['memory_ratio']:.2f}x the file on the first load, "
              f"+{r['warm_peak_rss_growth_bytes'] / 1e6:.2f} MB = {r['warm_memory_ratio']:.2f}x on later loads")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
