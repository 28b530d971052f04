"""`goenv dataset zoo`: build the zoo into a dataset folder, with its coverage report.

    goenv dataset zoo --out data/zoo --workers 2 --sizes tiny,small
    goenv dataset zoo --out data/zoo-bert --types bert,roberta --ray
    goenv dataset zoo --out data/zoo --docs docs    # also publish the report into the docs

Running the same command again after an interruption finishes the rest (goenv.datasets.zoo.dataset).
"""

from __future__ import annotations

import argparse
import time

from goenv._core import InvalidArgument
from goenv.arguments import as_command_line
from goenv.datasets.zoo.dataset import DEFAULT_MEMORY_LIMIT, DEFAULT_SHARD_SIZE, DEFAULT_TIME_LIMIT, build_dataset
from goenv.datasets.zoo.publish import publish
from goenv.datasets.zoo.report import COVERAGE_MD

__all__ = ["add_zoo_arguments", "run_zoo"]


def _names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise InvalidArgument(f"expected comma-separated names, got {text!r}")
    return names


def add_zoo_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--out", required=True, help="dataset folder (created; an interrupted run is resumed)")
    parser.add_argument("--workers", type=int, default=1,
                        help="builds at once, each in its own limited child process (default: %(default)s)")
    parser.add_argument("--sizes", help="comma-separated sizes (goenv.datasets.zoo.SIZES; default: all)")
    parser.add_argument("--types", help="comma-separated model types (goenv.datasets.zoo.model_types(); default: "
                                        "all, large for one type per lineage: goenv.datasets.zoo.planned_types)")
    parser.add_argument("--library", default="transformers", help="model library (default: %(default)s)")
    parser.add_argument("--ray", action="store_true", help="run the builds as Ray tasks (a local Ray of --workers "
                                                           "CPUs, or the cluster at --address)")
    parser.add_argument("--address", help="with --ray: join the Ray cluster at ADDR (`ray start --head` prints it)")
    parser.add_argument("--memory-limit", type=float, default=DEFAULT_MEMORY_LIMIT / 2**30, metavar="GIB",
                        help="address-space limit of each build's child process, GiB (default: %(default)g)")
    parser.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT, metavar="SECONDS",
                        help="wall-time limit of each build (default: %(default)g)")
    parser.add_argument("--shard-size", type=int, default=DEFAULT_SHARD_SIZE,
                        help="builds per shard file (default: %(default)s)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace another dataset in --out (never done otherwise)")
    parser.add_argument("--docs", metavar="FOLDER",
                        help="afterwards, publish the coverage report into the docs folder FOLDER (zoo.md's table, "
                             "zoo/coverage.md, zoo/statistics.png, results/zoo_coverage.json)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def run_zoo(args: argparse.Namespace) -> None:
    if args.memory_limit <= 0:
        raise InvalidArgument(f"--memory-limit must be a positive number of GiB, got {args.memory_limit:g}")
    started = time.perf_counter()
    with as_command_line("workers", "shard_size", "time_limit", "address"):
        dataset = build_dataset(args.out, library=args.library, model_types=_names(args.types),
                                sizes=_names(args.sizes), workers=args.workers, ray=args.ray, address=args.address,
                                memory_limit=int(args.memory_limit * 2**30), time_limit=args.time_limit,
                                shard_size=args.shard_size, overwrite=args.overwrite,
                                progress=not args.no_progress)
    records = dataset.records
    imported = {r["model_type"] for r in records if r["status"] != "failed"}
    tried = {r["model_type"] for r in records}
    print(f"{len(dataset)} graphs from {len(records)} builds ({len(imported)} of {len(tried)} model types imported, "
          f"{sum(r['status'] == 'duplicate' for r in records)} duplicates) at {dataset.root} in "
          f"{time.perf_counter() - started:.0f} s; report: {dataset.root}/{COVERAGE_MD}")
    if args.docs:
        for name, path in publish(dataset.root, args.docs).items():
            print(f"{name}: {path}")
