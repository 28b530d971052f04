"""The command line of labelled datasets:

    goenv dataset label SOURCE [SOURCE ...] --out DIR [--task T] [--cluster C] [-k K] [--sampler S]
                        [--seed N] [--agent CHECKPOINT] [--workers N [--address ADDR]] [--overwrite]
    goenv dataset export-tpugraphs LABELS --out DIR
    goenv dataset info DIR / goenv dataset verify DIR     (datasets of graphs and labelled ones)
"""

from __future__ import annotations

import argparse

from goenv.arguments import as_command_line
from goenv.labels.decisions import SAMPLERS
from goenv.labels.folder import label
from goenv.labels.tpugraphs import export_tpugraphs


def add_label_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("source", nargs="+",
                        help="a dataset folder (goenv dataset generate), a suite (go-placement, transfer, "
                             "transfer:test) or graph files (.goenv, .json)")
    parser.add_argument("--out", required=True, help="labels folder (created; an interrupted run is resumed)")
    parser.add_argument("--task", default="placement", help="placement, scheduling, fusion or joint (default: "
                                                            "%(default)s)")
    parser.add_argument("--cluster", help="a cluster preset for every graph (default: each graph's own)")
    parser.add_argument("-k", "--decisions-per-graph", type=int, default=64, metavar="K",
                        help="decisions labelled per graph (default: %(default)s)")
    parser.add_argument("--sampler", default="mix", help=f"{', '.join(SAMPLERS)} (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="graph i's decisions come from (seed, i) (default: 0)")
    parser.add_argument("--max-moves", type=int, default=32, help="largest perturbation, in moves (default: 32)")
    parser.add_argument("--shard-size", type=int, default=16, help="graphs per shard (default: %(default)s)")
    parser.add_argument("--agent", metavar="CHECKPOINT", help="an agent whose samples join the mix")
    parser.add_argument("--workers", type=int, default=0,
                        help="Ray workers labelling shards at once; 0 labels in this process (default: %(default)s)")
    parser.add_argument("--address", help="join the Ray cluster at ADDR instead of starting a local Ray")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace labels made otherwise in --out (never done otherwise)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def run_label(args: argparse.Namespace) -> None:
    source = args.source[0] if len(args.source) == 1 else args.source
    with as_command_line("decisions_per_graph", "seed", "max_moves", "shard_size", "workers"):
        labels = label(source, args.out, task=args.task, cluster=args.cluster,
                       decisions_per_graph=args.decisions_per_graph, sampler=args.sampler, seed=args.seed,
                       max_moves=args.max_moves, shard_size=args.shard_size, agent=args.agent, workers=args.workers,
                       address=args.address, overwrite=args.overwrite, progress=not args.no_progress)
    print(f"{labels.num_decisions} labelled decisions of {len(labels)} graphs in {len(labels.shards)} shards at "
          f"{labels.root}")


def add_export_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("labels", help="a labels folder (goenv dataset label)")
    parser.add_argument("--out", required=True, help="folder for the .npz files")
    parser.add_argument("--keep-infeasible", action="store_true", help="also export OOM and invalid decisions")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier export in --out (its .npz files)")
    return parser


def run_export(args: argparse.Namespace) -> None:
    paths = export_tpugraphs(args.labels, args.out, keep_infeasible=args.keep_infeasible, overwrite=args.overwrite)
    print(f"{len(paths)} TpuGraphs-layout files in {args.out}")
