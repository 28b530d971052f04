"""Trains the move-gain placer that ships with goenv: goenv.agents.pretrained("go-moves").

    goenv dataset zoo --out data/zoo --sizes tiny --workers 2           # the graphs, once
    python experiments/train_move_reading.py --zoo data/zoo --overwrite  # the shipped file, replaced

A GO network (the shipped placer's architecture, freshly initialised) learns by move-gain
supervision (agent.learn_moves, docs/agents.md) on graphs of the zoo's `train` split only:
at the best heuristic's placement and perturbations of it, every single-unit move is
simulated and the policy learns, per unit, the softmax of those moves' runtime gains. That
is the reading policy-guided search follows (optimize's proposals), and its greedy decision
from the compiler default is the one-shot placement. The graphs: --graphs drawn (numpy
generator of seed 0) from the train split's graphs of at most --max-nodes ops, each on every
one of --clusters. experiments/transfer_results.py --checkpoint go-moves measures it on the
lineages it never saw.

The checkpoint goes to bindings/python/goenv/agents/shipped/go-moves.agent and the summary to
docs/results/move_reading.json; existing ones are replaced only with --overwrite (checked
before any work).
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
from pathlib import Path

import numpy as np

import goenv
import goenv.agents
from goenv.datasets.zoo.lineages import lineage, split as split_of
from goenv.files import write_atomic
from goenv.provenance import made_by

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "bindings" / "python" / "goenv" / "agents" / "shipped" / "go-moves.agent"
SUMMARY = ROOT / "docs" / "results" / "move_reading.json"
CLUSTERS = ("2xgpu-nvlink", "4xgpu-nvlink", "8xgpu-nvlink", "cpu+2xgpu")


def training_graphs(zoo: str, count: int, max_nodes: int) -> list[tuple[str, goenv.Graph]]:
    """(model type, graph) of `count` train-split graphs of at most `max_nodes` ops, drawn in a
    fixed order; a graph of another split can never be among them."""
    dataset = goenv.datasets.open(zoo)
    indices = [i for i in range(len(dataset)) if split_of(dataset.provenance(i)["model_type"]) == "train"]
    if not indices:
        raise SystemExit(f"{zoo}: no graph of the train split (build the zoo first: goenv dataset zoo --out {zoo})")
    np.random.default_rng(0).shuffle(indices)
    chosen = []
    for i in indices:
        graph = dataset[i]
        if graph.num_nodes <= max_nodes:
            chosen.append((dataset.provenance(i)["model_type"], graph))
        if len(chosen) == count:
            break
    assert all(split_of(t) == "train" for t, _ in chosen)
    return chosen


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zoo", required=True, help="a zoo folder made by `goenv dataset zoo`")
    parser.add_argument("--graphs", type=int, default=40, help="train-split graphs to learn on")
    parser.add_argument("--max-nodes", type=int, default=800)
    parser.add_argument("--clusters", default=",".join(CLUSTERS))
    parser.add_argument("--steps", type=int, default=400, help="Adam steps (config graphs_per_update envs each)")
    defaults = inspect.signature(goenv.agents.GO.learn_moves).parameters
    parser.add_argument("--states", type=int, default=defaults["states"].default, help="labelled placements per env")
    parser.add_argument("--temperature", type=float, default=defaults["temperature"].default,
                        help="softmax temperature, a share of the runtime")
    parser.add_argument("--out", default=str(SHIPPED), help="the checkpoint (default: the shipped go-moves)")
    parser.add_argument("--summary", default=str(SUMMARY))
    parser.add_argument("--overwrite", action="store_true", help="replace an existing checkpoint and summary")
    args = parser.parse_args(argv)
    if min(args.graphs, args.max_nodes, args.steps, args.states) < 1 or not args.temperature > 0:
        parser.error("--graphs, --max-nodes, --steps and --states must be >= 1, --temperature > 0")
    clusters = args.clusters.split(",")
    for name in clusters:
        goenv.clusters.get(name)  # an unknown name fails here, before any work
    out, summary_path = Path(args.out), Path(args.summary)
    existing = [str(p) for p in (out, summary_path) if p.exists()]
    if existing and not args.overwrite:
        parser.error(f"{', '.join(existing)} exist(s); --overwrite replaces them")
    made = made_by()
    graphs = training_graphs(args.zoo, args.graphs, args.max_nodes)
    envs = [goenv.make("placement", graph=g, cluster=c) for _, g in graphs for c in clusters]
    agent = goenv.agents.GO(**goenv.agents.pretrained("go-placement").config)  # its architecture, fresh weights
    began = time.perf_counter()
    history = agent.learn_moves(envs, steps=args.steps, states=args.states, temperature=args.temperature)
    seconds = time.perf_counter() - began
    agent.save(out, overwrite=True)  # checked above: an existing file is replaced only with --overwrite
    summary = {"zoo": args.zoo, "model_types": [t for t, _ in graphs],
               "lineages": sorted({lineage(t) for t, _ in graphs}), "nodes": [g.num_nodes for _, g in graphs],
               "clusters": clusters, "steps": args.steps, "states": args.states, "temperature": args.temperature,
               "simulator_calls": history[-1]["simulator_calls"], "seconds": seconds,
               "first": history[0], "last": history[-1],
               "arguments": list(argv if argv is not None else sys.argv[1:]), "made_by": made}
    summary_path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(summary_path, json.dumps(summary, indent=1).encode(), "summary")
    print(f"{len(graphs)} graphs x {len(clusters)} clusters, {summary['simulator_calls']:,} simulated moves, "
          f"{seconds / 60:.1f} min; accuracy {history[0]['accuracy']:.2f} -> {history[-1]['accuracy']:.2f}; {out}")


if __name__ == "__main__":
    main()
