"""Trains the placer that ships with goenv: goenv.agents.pretrained("go-placement").

    python examples/pretrain_placer.py                  # 2, 4 and 8 devices (about 40 min on 2 cores)
    python examples/pretrain_placer.py --devices 2 --imitation-steps 50 --ppo-steps 256   # a quick look
    python examples/pretrain_placer.py --any-cluster     # one "pairs" policy for every cluster

--any-cluster trains one GO policy with device_head="pairs" (it scores (unit, device)
pairs, so its weights serve any device count) on every training graph on each of
--clusters at once, and writes go-placement.agent: the checkpoint
goenv.agents.pretrained("go-placement") prefers, whatever num_devices.

For each device count, one GO policy learns on the transfer suite's training graphs
(goenv.datasets.suite("transfer")["train"], on <devices>xgpu-nvlink, graphs up to
--max-nodes nodes): first it imitates each graph's best heuristic (the best of
expert, METIS, m-ETF and HEFT by simulated runtime; agent.imitate), then PPO
fine-tunes it anchored to those teachers (agent.train). The checkpoint goes to
bindings/python/goenv/agents/pretrained/go-placement-<devices>dev.agent and the
curves to docs/pretrained_placer.png. The held-out graphs (the suite's "test"
split) are never seen; examples/go_results.py transfer measures them.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

import goenv
import goenv.agents

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "bindings" / "python" / "goenv" / "agents" / "pretrained"


def training_envs(devices: int, max_nodes: int) -> list:
    envs = []
    for entry in goenv.datasets.suite("transfer")["train"]:
        env = goenv.make(entry.env_id("placement"), cluster=f"{devices}xgpu-nvlink", **entry.params)
        if env.unwrapped.graph.num_nodes <= max_nodes:
            envs.append(env)
    return envs


def training_envs_on(clusters: list[str], max_nodes: int) -> list:
    """Every training graph on every cluster (2 to 8 devices, mixed kinds): one distribution."""
    envs = []
    for entry in goenv.datasets.suite("transfer")["train"]:
        for cluster in clusters:
            env = goenv.make(entry.env_id("placement"), cluster=cluster, **entry.params)
            if env.unwrapped.graph.num_nodes <= max_nodes:
                envs.append(env)
    return envs


def pretrain(devices: int | str, args) -> dict:
    pairs = devices == "any"
    envs = training_envs_on(args.clusters, args.max_nodes) if pairs else training_envs(devices, args.max_nodes)
    agent = goenv.agents.GO(seed=args.seed, learning_rate=args.learning_rate, envs_per_graph=args.envs_per_graph,
                            graphs_per_update=args.graphs_per_step, num_threads=args.threads,
                            device_head="pairs" if pairs else "absolute")
    start = time.perf_counter()
    imitation = agent.imitate(envs, steps=args.imitation_steps, progress=args.progress)
    imitation_seconds = time.perf_counter() - start
    ppo = agent.train(envs, args.ppo_steps, progress=args.progress)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / ("go-placement.agent" if pairs else f"go-placement-{devices}dev.agent")
    agent.save(path)
    summary = {"devices": devices, "clusters": args.clusters if pairs else [f"{devices}xgpu-nvlink"],
               "graphs": len(envs), "imitation_steps": args.imitation_steps,
               "ppo_steps": args.ppo_steps, "imitation_seconds": imitation_seconds,
               "seconds": time.perf_counter() - start, "bytes": path.stat().st_size,
               "imitation": [[m["step"], m["loss"], m["accuracy"]] for m in imitation],
               "ppo": [[m["step"], m["mean_speedup"], m["best_speedup"]] for m in ppo]}
    print(f"{devices} devices: {len(envs)} graphs, imitation accuracy {imitation[-1]['accuracy']:.3f} "
          f"({imitation_seconds:.0f} s), PPO mean speedup {ppo[-1]['mean_speedup']:.3f}, "
          f"{summary['seconds']:.0f} s in all -> {path} ({summary['bytes'] / 1e6:.1f} MB)", flush=True)
    return summary


def plot(summaries: list[dict], path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, 3.2), dpi=90)
    FigureCanvasAgg(figure)
    left, right = figure.add_subplot(1, 2, 1), figure.add_subplot(1, 2, 2)
    for s in summaries:
        steps, _, accuracy = zip(*s["imitation"])
        # Each step sees other graphs (round robin): average over one pass through all of them.
        window = max(1, min(len(accuracy), -(-s["graphs"] // 8)))
        smooth = np.convolve(accuracy, np.ones(window) / window, mode="valid")
        name = "any cluster" if s["devices"] == "any" else f"{s['devices']} devices"
        left.plot(steps[window - 1:], smooth, label=f"{name} ({s['graphs']} graphs)")
        if s["ppo"]:
            steps, mean, _ = zip(*s["ppo"])
            right.plot(steps, mean, label=name)
    left.set(title="imitation of the best heuristic", xlabel="Adam steps",
             ylabel="decisions equal to the teacher's\n(mean over one pass of the graphs)")
    right.set(title="PPO fine-tuning (sampled decisions)", xlabel="env steps",
              ylabel="mean speedup over default\n(the update's 8 graphs)")
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    figure.tight_layout()
    tmp = path.with_name(path.stem + f".tmp{os.getpid()}.png")
    figure.savefig(tmp)
    tmp.replace(path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--any-cluster", action="store_true", help="one pairs policy on --clusters (not --devices)")
    parser.add_argument("--clusters", nargs="+", default=["2xgpu-nvlink", "4xgpu-nvlink", "8xgpu-pcie", "cpu+2xgpu"])
    parser.add_argument("--max-nodes", type=int, default=2500, help="largest training graph")
    parser.add_argument("--imitation-steps", type=int, default=300)
    parser.add_argument("--ppo-steps", type=int, default=2048)
    parser.add_argument("--graphs-per-step", type=int, default=8, help="graphs per imitation step and PPO update")
    parser.add_argument("--envs-per-graph", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--out", default=str(SHIPPED), help="checkpoint folder (default: the package's, shipped)")
    parser.add_argument("--summary", default="docs/results/pretrained_placer.json")
    parser.add_argument("--figure", default="docs/pretrained_placer.png")
    parser.add_argument("--plot-only", action="store_true", help="redraw the figure from the summary")
    args = parser.parse_args(argv)
    runs = ["any"] if args.any_cluster else args.devices
    summaries = [] if args.plot_only else [pretrain(d, args) for d in runs]
    summary_path = ROOT / args.summary
    previous = json.loads(summary_path.read_text()) if summary_path.exists() else []
    merged = {str(s["devices"]): s for s in previous} | {str(s["devices"]): s for s in summaries}
    ordered = sorted(merged.values(), key=lambda s: (isinstance(s["devices"], str), str(s["devices"])))
    summary_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = summary_path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(ordered, indent=1))
    tmp.replace(summary_path)
    plot(ordered, ROOT / args.figure)


if __name__ == "__main__":
    main()
