"""Inference and update time of the GO policy on large random graphs (CPU).

    python tests/benchmarks/agents_bench.py [--sizes 1000 10000 80000] [--threads 2] [--device cuda]
                                            [--no-plain] [--json PATH]

For each size: a random layered DAG (Graph.from_arrays), a 2-device placement
env, a GO agent (segment_length 512, hidden 64). Reported, median of `--repeats`:
  act      agent.act(obs): observation -> tensors, GraphSAGE, segment attention, sampling
  update   one PPO update of train(): `envs_per_graph` env steps (simulated in C++),
           the rollout forward pass, then one minibatch gradient step
           (forward + backward + Adam) over those steps; per update and per env step
  imitate  one imitation step (agent.imitate): forward + cross-entropy toward the
           teacher + backward + Adam, per graph (the teacher is solved before timing)
  env      one env.step() (the simulator alone), for scale
  plain    the anchor (plain_policy.py): the same network at the same widths in plain PyTorch,
           its act and its update per env step; `plain / GO` is (act + update per env step) of
           the anchor over GO's (the target: at least 2x on CPU); on CPU only
  train    env steps per second of PPO training: envs_per_graph / update (the env steps,
           the rollout forward pass and one gradient step)
`--device cuda` runs GO on the GPU (tests/benchmarks/gpu_run.sh); `--json` also writes the rows
with the commit, torch, device and thread count.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import torch  # noqa: F401  (before goenv.agents: one LibTorch)
import goenv
import goenv.agents
from plain_policy import PlainAgent

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments"))
from readme_tables import results_commit  # noqa: E402  (the results scripts' one implementation)


def layered_dag(num_nodes: int, seed: int = 0, width: int = 64) -> goenv.Graph:
    """`width` nodes per layer, each fed by 1-3 nodes of the previous layer."""
    rng = np.random.default_rng(seed)
    node = np.arange(width, num_nodes)
    layer_start = (node // width - 1) * width
    sources, targets = [], []
    for _ in range(3):
        keep = rng.random(node.size) < (1.0 if not sources else 0.4)
        sources.append(layer_start[keep] + rng.integers(0, width, keep.sum()))
        targets.append(node[keep])
    edges = np.unique(np.stack([np.concatenate(sources), np.concatenate(targets)]), axis=1)
    ops = goenv.op_type_names()
    return goenv.Graph.from_arrays(
        edges, flops=10 ** rng.uniform(6, 10, num_nodes), output_bytes=(10 ** rng.uniform(3, 7, num_nodes)).astype(np.int64),
        op_type=[ops[i] for i in rng.integers(0, len(ops), num_nodes)], name=f"layered{num_nodes}")


def median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(n: int, hidden: int = 64, segment_length: int = 512, envs_per_graph: int = 4, repeats: int = 3,
            threads: int = 0, imitate: bool = True, device: str = "cpu", plain: bool = True) -> dict:
    """Seconds of GO's act, update (per update and per env step), imitation step and env step on an
    n-node layered DAG, and the plain anchor's act and update per env step; `plain_vs_go` is
    (act + update per env step) of the anchor over GO's (None without the anchor)."""
    graph = layered_dag(n)
    env = goenv.GraphEnv.from_graph("placement", graph, "2xgpu-pcie")
    obs, _ = env.reset(seed=0)
    agent = goenv.agents.GO(env=env, hidden=hidden, segment_length=segment_length, seed=0, num_threads=threads,
                            envs_per_graph=envs_per_graph, epochs=1, minibatches=1, device=device)
    agent.act(obs)  # warm-up (allocator, graph tensors)
    out = {"nodes": n, "edges": graph.num_edges, "params": agent.num_parameters,
           "act": median_seconds(lambda: agent.act(obs), repeats)}
    action = agent.act(obs)

    def env_step():
        env.reset(seed=0)
        env.step(action)

    out["env_step"] = median_seconds(env_step, repeats)
    agent.train(env, envs_per_graph, progress=False)  # warm-up
    out["update"] = statistics.median(agent.train(env, envs_per_graph, progress=False)[-1]["seconds"]
                                      for _ in range(repeats))
    if imitate:
        agent.imitate(env, steps=1, progress=False)  # solves and keeps the teacher
        history = agent.imitate(env, steps=repeats + 1, progress=False)
        out["imitate"] = statistics.median(b["seconds"] - a["seconds"] for a, b in zip(history, history[1:]))
    out["update_per_step"] = out["update"] / envs_per_graph
    out["train_steps_per_second"] = envs_per_graph / out["update"]
    out["plain_act"] = out["plain_update_per_step"] = out["plain_vs_go"] = None
    if not plain:
        return out
    torch_threads = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)  # the anchor runs on as many threads as GO
    try:
        anchor = PlainAgent(env, obs, hidden=hidden, segment_length=segment_length)
        anchor.act(obs)  # warm-up
        out["plain_act"] = median_seconds(lambda: anchor.act(obs), repeats)
        anchor.update(env, envs_per_graph)  # warm-up
        out["plain_update"] = statistics.median(anchor.update(env, envs_per_graph) for _ in range(repeats))
    finally:
        torch.set_num_threads(torch_threads)
    out["plain_update_per_step"] = out["plain_update"] / envs_per_graph
    out["plain_vs_go"] = (out["plain_act"] + out["plain_update_per_step"]) / (out["act"] + out["update_per_step"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 80000])
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--segment-length", type=int, default=512)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--envs-per-graph", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where GO runs")
    parser.add_argument("--no-plain", action="store_true", help="skip the plain-PyTorch anchor (always skipped on cuda)")
    parser.add_argument("--json", help="also write the rows here, with the commit and the machine")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    plain = args.device == "cpu" and not args.no_plain
    gpu = torch.cuda.get_device_name(0) if args.device == "cuda" else None
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {args.device}"
          f"{f' ({gpu})' if gpu else ''}; GO hidden={args.hidden}, segment_length={args.segment_length}, "
          f"envs_per_graph={args.envs_per_graph}")
    print(f"{'nodes':>7} {'edges':>7} {'params':>7} {'act s':>8} {'update s':>9} {'update s/step':>13} "
          f"{'train steps/s':>13} {'imitate s':>9} {'env step s':>10} {'plain act s':>11} {'plain upd s/step':>16} "
          f"{'plain / GO':>10}")
    rows = []
    for n in args.sizes:
        m = measure(n, args.hidden, args.segment_length, args.envs_per_graph, args.repeats, args.threads,
                    device=args.device, plain=plain)
        rows.append(m)
        anchor = (f"{m['plain_act']:>11.3f} {m['plain_update_per_step']:>16.3f} {m['plain_vs_go']:>9.2f}x" if plain
                  else f"{'-':>11} {'-':>16} {'-':>10}")
        print(f"{n:>7} {m['edges']:>7} {m['params']:>7} {m['act']:>8.3f} {m['update']:>9.3f} "
              f"{m['update_per_step']:>13.3f} {m['train_steps_per_second']:>13.1f} {m['imitate']:>9.3f} "
              f"{m['env_step']:>10.4f} {anchor}", flush=True)
    if args.json:
        summary = {**results_commit(), "torch": torch.__version__, "device": args.device, "gpu": gpu,
                   "cpu": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
                   "threads": torch.get_num_threads(), "hidden": args.hidden, "segment_length": args.segment_length,
                   "envs_per_graph": args.envs_per_graph, "repeats": args.repeats, "rows": rows}
        path = Path(args.json)
        tmp = path.with_name(path.name + f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(summary, indent=1) + "\n")
        tmp.replace(path)


if __name__ == "__main__":
    main()
