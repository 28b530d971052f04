"""Trains the placer that ships with goenv: goenv.agents.pretrained("go-placement").

    python experiments/pretrain_placer.py --overwrite --readme   # the shipped placer, replaced
    python experiments/pretrain_placer.py --scale 0.1 --imitation-steps 40 --ppo-steps 64 --workers 0 \
        --out /tmp/placer --summary /tmp/placer/summary.json --figure /tmp/placer/curves.png  # a quick look

One GO policy with device_head="pairs" (it scores (unit, device) pairs, so one set of
weights serves any device count and mixed clusters) learns from a training distribution:

1. Graphs. DISTRIBUTION lists, for every training family, how many graphs to draw and the
   ranges of its builder parameters (layers, widths, hidden sizes, sequence lengths, batch
   sizes). `goenv.datasets.generate` writes them to --data (sharded, checksummed, resumable:
   a second run reuses the files; the same as `goenv dataset generate FAMILY --count N
   --param KEY=LOW:HIGH`). The lineages of the transfer suite's validation and test graphs
   (inception, amoebanet, wavenet, transformer-xl, bert, gpt2) are excluded entirely.
2. Clusters. Graph i is placed on --clusters[i % len]: 2 to 8 devices, NVLink and PCIe,
   and a mixed CPU + GPU cluster.
3. Curriculum. Imitation of each graph's best heuristic (agent.imitate) runs in stages of
   growing graphs (--curriculum node limits, then --max-nodes); each stage keeps the
   graphs of the stages before it.
4. PPO anchored to those teachers on every graph: on --workers Ray rollout workers with
   goenv.distributed (the learner is this process; the same command on a cluster with
   --address), or in this process with --workers 0.

The checkpoint goes to bindings/python/goenv/agents/shipped/go-placement.agent, the
summary to docs/results/pretrained_placer.json and the curves to docs/pretrained_placer.png;
existing ones are replaced only with --overwrite (checked before any work).
The held-out graphs are never seen; experiments/go_results.py transfer measures them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

import goenv
import goenv.agents
from goenv.files import checked_output_path, write_atomic

sys.path.insert(0, str(Path(__file__).resolve().parent))
from doc_sections import section_file, write_section  # noqa: E402
from readme_tables import results_commit  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "bindings" / "python" / "goenv" / "agents" / "shipped"

# family: (graphs, builder parameter ranges (low, high); integers when both ends are).
DISTRIBUTION = {
    "random-layered": (48, {"num_layers": (6, 40), "width": (3, 16), "edge_probability": (0.1, 0.4)}),
    "random-series-parallel": (48, {"num_nodes": (60, 1200)}),
    "enas-cnn": (32, {"num_cells": (3, 10), "nodes_per_cell": (3, 6), "channels": (16, 64), "batch_size": (16, 128)}),
    "enas-rnn": (32, {"seq_len": (5, 30), "nodes_per_cell": (4, 10), "hidden": (256, 1500), "batch_size": (16, 128)}),
    "resnet50": (8, {"batch_size": (16, 128), "image_size": (128, 299)}),
    **{f"rnnlm-{n}": (8, {"seq_len": (4, 24), "hidden": (512, 4096), "batch_size": (16, 128)}) for n in (2, 4, 8)},
    **{f"gnmt-{n}": (8, {"seq_len": (3, 10), "hidden": (512, 2048), "batch_size": (32, 256)}) for n in (2, 4, 8)},
}
CLUSTERS = ["2xgpu-nvlink", "4xgpu-nvlink", "8xgpu-nvlink", "8xgpu-pcie", "cpu+2xgpu"]


def held_out_lineages() -> set[str]:
    transfer = goenv.datasets.suite("transfer")
    return {goenv.datasets.lineage(e.graph) for split in ("validation", "test") for e in transfer[split]}


def training_graphs(data: Path, scale: float, seed: int, progress: bool) -> list[tuple[str, goenv.Graph]]:
    """(family, graph) for every graph of the distribution, generated into `data` (reused when there)."""
    leaked = sorted({goenv.datasets.lineage(f) for f in DISTRIBUTION} & held_out_lineages())
    if leaked:
        raise ValueError(f"the training distribution holds held-out lineages: {', '.join(leaked)}")
    graphs = []
    for k, (family, (count, params)) in enumerate(DISTRIBUTION.items()):
        count = max(1, math.ceil(count * scale))
        # The folder names what it holds: a changed distribution never meets old files.
        digest = hashlib.sha256(json.dumps([count, params, seed + 1000 * k]).encode()).hexdigest()[:8]
        dataset = goenv.datasets.generate(family, count, data / f"{family}-{digest}", params=params,
                                          seed=seed + 1000 * k, workers=1, progress=progress)
        graphs += [(family, graph) for graph in dataset]
    return graphs


def training_envs(graphs, clusters: list[str], max_nodes: int, start: str | None = None) -> list:
    envs = []
    for i, (_, graph) in enumerate(graphs):
        if graph.num_nodes <= max_nodes:
            options = {"start": start} if start else {}
            envs.append(goenv.make("placement", graph=graph, cluster=clusters[i % len(clusters)], **options))
    return envs


def imitate_by_curriculum(agent, envs, args) -> tuple[list, list]:
    """Imitation in stages of growing graphs (each stage: the envs up to its node limit); returns the
    per-step metrics and each stage's (limit, graphs, steps)."""
    limits = sorted({n for n in args.curriculum if n < args.max_nodes}) + [args.max_nodes]
    # Each stage gets steps in proportion to its share of the limits' range (the last stage the most).
    weights = np.diff([0] + limits).astype(float)
    steps = np.floor(args.imitation_steps * weights / weights.sum()).astype(int)
    steps[-1] += args.imitation_steps - steps.sum()
    history, stages, done = [], [], 0
    for limit, n in zip(limits, steps):
        stage = [env for env in envs if env.unwrapped.graph.num_nodes <= limit]
        if n <= 0 or not stage:
            continue
        metrics = agent.imitate(stage, steps=int(n), teacher=args.teacher, progress=args.progress)
        history += [{**m, "step": done + m["step"]} for m in metrics]
        done += int(n)
        stages.append({"max_nodes": limit, "graphs": len(stage), "steps": int(n),
                       "accuracy": metrics[-1]["accuracy"]})
        print(f"  stage <= {limit} nodes: {len(stage)} graphs, {n} steps, accuracy {metrics[-1]['accuracy']:.3f}",
              flush=True)
    return history, stages


def fine_tune(agent, envs, args) -> list:
    if args.ppo_steps <= 0:
        return []
    if args.workers == 0 and args.address is None:
        return agent.train(envs, args.ppo_steps, progress=args.progress)
    import goenv.distributed

    result = goenv.distributed.train(envs, num_workers=max(1, args.workers), total_steps=args.ppo_steps,
                                     address=args.address, agent=agent, progress=args.progress)
    print(f"  PPO on {max(1, args.workers)} Ray rollout workers: {result.samples_per_second:.0f} samples/s, "
          f"{result.dropped_rollouts} stale rollouts dropped, {result.worker_restarts} worker restarts", flush=True)
    return result.history


def pretrain(args) -> dict:
    start = time.perf_counter()
    graphs = training_graphs(Path(args.data), args.scale, args.seed, args.progress)
    agent = goenv.agents.GO(seed=args.seed, learning_rate=args.learning_rate, envs_per_graph=args.envs_per_graph,
                            graphs_per_update=args.graphs_per_step, num_threads=args.threads, device_head="pairs",
                            device=args.device)
    envs = training_envs(graphs, args.clusters, args.max_nodes, args.start)
    imitation, stages = imitate_by_curriculum(agent, envs, args)
    imitation_seconds = time.perf_counter() - start
    ppo = fine_tune(agent, envs, args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "go-placement.agent"
    agent.save(path, overwrite=True)  # the placer this script makes: a rerun replaces it
    sizes = [env.unwrapped.graph.num_nodes for env in envs]
    summary = {**results_commit(), "start": args.start or "default", "teacher": args.teacher,
               "families": sorted({f for f, _ in graphs}), "clusters": args.clusters, "graphs": len(envs),
               "generated": len(graphs), "nodes": [min(sizes), int(np.median(sizes)), max(sizes)],
               "curriculum": stages, "imitation_steps": args.imitation_steps, "ppo_steps": args.ppo_steps,
               "workers": args.workers, "graphs_per_step": args.graphs_per_step, "device": args.device,
               "imitation_seconds": imitation_seconds, "seconds": time.perf_counter() - start,
               "bytes": path.stat().st_size,
               "imitation": [[m["step"], m["loss"], m["accuracy"]] for m in imitation],
               "ppo": [[m["step"], m["mean_speedup"], m["best_speedup"]] for m in ppo]}
    print(f"{len(envs)} graphs ({summary['nodes'][0]}-{summary['nodes'][2]} nodes) on {len(args.clusters)} clusters: "
          f"imitation accuracy {stages[-1]['accuracy']:.3f} ({imitation_seconds:.0f} s), "
          f"{summary['seconds']:.0f} s in all -> {path} ({summary['bytes'] / 1e6:.1f} MB)", flush=True)
    return summary


def plot(summary: dict, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, 3.2), dpi=90)
    FigureCanvasAgg(figure)
    left, right = figure.add_subplot(1, 2, 1), figure.add_subplot(1, 2, 2)
    steps, _, accuracy = zip(*summary["imitation"])
    # Each step sees other graphs (round robin): average over one pass through all of them.
    window = max(1, min(len(accuracy), -(-summary["graphs"] // summary.get("graphs_per_step", 8))))
    smooth = np.convolve(accuracy, np.ones(window) / window, mode="valid")
    left.plot(steps[window - 1:], smooth, color="C0")
    first = 0
    for stage in summary["curriculum"]:
        left.axvline(first, color="0.8", lw=0.8)
        label = f" ≤{stage['max_nodes']} nodes\n {stage['graphs']} graphs"
        left.text(first, 0.02 + 0.12 * (len(left.texts) % 2), label, fontsize=7, transform=left.get_xaxis_transform())
        first += stage["steps"]
    if summary["ppo"]:
        steps, mean, _ = zip(*summary["ppo"])
        right.plot(steps, mean, color="C1")
    teacher = {"best": "the best heuristic"}.get(summary.get("teacher", "best"), summary.get("teacher"))
    start = summary.get("start", "default")
    left.set(title=f"imitation of {teacher}" + ("" if start == "default" else f" (from {start})"),
             xlabel="Adam steps", ylabel=f"decisions equal to the teacher's\n(mean over {window} steps: all graphs)")
    right.set(title=f"PPO fine-tuning ({summary['workers']} Ray workers)" if summary["workers"]
              else "PPO fine-tuning", xlabel="env steps", ylabel="mean speedup over default\n(one update's graphs)")
    figure.tight_layout()
    tmp = path.with_name(path.stem + f".tmp{os.getpid()}.png")
    figure.savefig(tmp)
    tmp.replace(path)


def readme_paragraph(summary: dict) -> str:
    """The docs' description of the shipped placer, from its training summary."""
    teacher = ("imitated the best heuristic" if summary.get("teacher", "best") == "best" else
               f"imitated {summary['teacher']} (1,000 calls from the best heuristic)")
    start = summary.get("start", "default")
    seen = ("seeing the compiler default's schedule" if start == "default" else
            f"seeing the schedule of the {start} decisions it starts from, as `optimize` does")
    stages = ", ".join(f"≤{s['max_nodes']:,} nodes ({s['graphs']} graphs, {s['steps']:,} steps)"
                       for s in summary["curriculum"])
    ppo = f"then PPO fine-tuned it for {summary['ppo_steps']:,} env steps" + (
        f" on {summary['workers']} Ray rollout workers (`goenv.distributed`)" if summary["workers"] else "")
    flags = "".join(f" --{k} {summary[k]}" for k in ("start", "teacher")
                    if summary.get(k) not in (None, "default", "best"))
    return (f"**The shipped placer**: `goenv.agents.pretrained(\"go-placement\")` "
            f"({summary['bytes'] / 1e6:.1f} MB, inside the package) is **one GO policy for any cluster** "
            f"(`device_head=\"pairs\"`; `num_devices=` is still accepted). Its training distribution is "
            f"{summary['generated']} graphs drawn from the parameter ranges of {len(summary['families'])} training "
            f"families ({', '.join(summary['families'])}) with `goenv.datasets.generate`; the lineages of the "
            f"held-out graphs are excluded. The {summary['graphs']} graphs of up to {summary['nodes'][2]:,} nodes "
            f"(median {summary['nodes'][1]:,}) are spread over {', '.join(f'`{c}`' for c in summary['clusters'])}. "
            f"It {teacher}, {seen}, by a curriculum of growing graphs ({stages}; final agreement with the teacher "
            f"{summary['curriculum'][-1]['accuracy']:.2f}), {ppo}: `python experiments/pretrain_placer.py --overwrite{flags}`, "
            f"{summary['seconds'] / 60:.0f} minutes on this 2-core machine (commit {summary['commit'][:7]}; curves "
            f"below).")


def write_readme(summary: dict, page: Path) -> None:
    write_section(page, "pretrained-placer", readme_paragraph(summary))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT / "data" / "placer"), help="where the training graphs are generated")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every family's graph count")
    parser.add_argument("--clusters", nargs="+", default=CLUSTERS)
    parser.add_argument("--max-nodes", type=int, default=2500, help="largest training graph")
    parser.add_argument("--curriculum", type=int, nargs="*", default=[400, 1200],
                        help="node limits of the imitation stages before --max-nodes")
    parser.add_argument("--start", help="episodes start from these decisions (a baseline name, e.g. "
                        "best-heuristic: the policy sees their schedule; default: the compiler default)")
    parser.add_argument("--teacher", default="best", help="what imitation copies: 'best' (the best heuristic) "
                        "or a baseline name (local-search: 1,000 calls from the episode's start)")
    parser.add_argument("--imitation-steps", type=int, default=2400)
    parser.add_argument("--ppo-steps", type=int, default=4096)
    parser.add_argument("--workers", type=int, default=2, help="Ray rollout workers for PPO (0: this process)")
    parser.add_argument("--address", help="the Ray cluster to join (default: a local Ray)")
    parser.add_argument("--graphs-per-step", type=int, default=8, help="graphs per imitation step and PPO update")
    parser.add_argument("--envs-per-graph", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="where the learner trains (Ray rollout workers act on CPU)")
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--out", default=str(SHIPPED), help="checkpoint folder (default: the package's, shipped)")
    parser.add_argument("--summary", default=str(ROOT / "docs" / "results" / "pretrained_placer.json"))
    parser.add_argument("--figure", default=str(ROOT / "docs" / "pretrained_placer.png"))
    parser.add_argument("--plot-only", action="store_true", help="redraw the figure from the summary")
    parser.add_argument("--readme", action="store_true", help="also write the paragraph on the placer between "
                        "<!-- pretrained-placer:begin/end --> in the page of the README or docs/ that holds them "
                        "(docs/agents.md)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace existing outputs (the defaults are the shipped placer and its results)")
    args = parser.parse_args(argv)
    if args.workers < 0 or not args.scale > 0 or args.imitation_steps < 1:
        parser.error("--workers must be >= 0, --scale > 0 and --imitation-steps >= 1")
    outputs = [args.figure] if args.plot_only else [Path(args.out) / "go-placement.agent", args.summary, args.figure]
    try:  # before any work: a finished run must not fail on its outputs
        for path in outputs:
            checked_output_path(path, "output")
    except goenv.InvalidArgument as error:
        parser.error(str(error))
    page = section_file("pretrained-placer") if args.readme else None  # before the work, not after it
    existing = [str(path) for path in outputs[:-1] if os.path.exists(path)] if not args.plot_only else []
    if existing and not args.overwrite:
        parser.error(f"{', '.join(existing)} exist(s); --overwrite replaces them (the defaults are the shipped "
                     f"placer and its results), or give --out/--summary/--figure elsewhere")
    summary_path = Path(args.summary)
    if args.plot_only:
        summary = json.loads(summary_path.read_text())
    else:
        summary = pretrain(args)
        summary_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(summary_path, json.dumps(summary, indent=1).encode())
    plot(summary, Path(args.figure))
    if args.readme:
        write_readme(summary, page)


if __name__ == "__main__":
    main()
