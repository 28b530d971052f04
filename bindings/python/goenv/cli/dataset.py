"""`goenv dataset ...`: generate, label, zoo, export-tpugraphs, info and verify, each from the
module that owns its files."""

from __future__ import annotations

import argparse
import json
import os

from goenv import dataset_files
from goenv.datasets import open as open_dataset
from goenv.datasets.zoo import command as zoo_command
from goenv.labels import command as labels_command
from goenv.labels.folder import FORMAT as LABELS_FORMAT
from goenv.labels.folder import MANIFEST, Labels


def _is_labels(path: str) -> bool:
    try:
        with open(os.path.join(path, MANIFEST), "rb") as file:
            return json.loads(file.read(1 << 20).decode("utf-8", "replace")).get("format") == LABELS_FORMAT
    except (OSError, ValueError, AttributeError):
        return False  # the dataset reader says what is wrong


def run_info(args: argparse.Namespace) -> None:
    """`goenv dataset info DIR`: what a dataset of graphs, a zoo or a labelled dataset holds, from its
    manifest (nothing else is read)."""
    if not _is_labels(args.path):
        print(open_dataset(args.path).summary())
        return
    labels = Labels(args.path)
    config = labels.config
    cluster = config["cluster"] or "each graph's own"
    total = sum(entry["bytes"] for record in labels.shards for entry in record["files"].values())
    print(f"{labels.root}: {len(labels)} graphs x {config['decisions_per_graph']} decisions ({config['task']}, "
          f"sampler {config['sampler']}, seed {config['seed']}, cluster {cluster}), "
          f"{labels.num_decisions} labels in {len(labels.shards)} shards, {total / 2**20:.1f} MiB")


def run_verify(args: argparse.Namespace) -> None:
    """`goenv dataset verify DIR`: every shard's checksum (and every graph, for datasets of graphs)."""
    if not _is_labels(args.path):
        dataset = open_dataset(args.path)
        dataset.verify()
        print(f"{dataset.root}: {len(dataset)} graphs in {len(dataset.shards)} shards, all checksums and graphs "
              f"valid")
        return
    labels = Labels(args.path)
    labels.verify()
    print(f"{labels.root}: {labels.num_decisions} labels of {len(labels)} graphs in {len(labels.shards)} shards, "
          f"all checksums valid")


def add_dataset_commands(commands: argparse._SubParsersAction) -> None:
    dataset = commands.add_parser("dataset", help="graph datasets and labelled ones: sharded, checksummed, resumable")
    dataset_commands = dataset.add_subparsers(dest="dataset_command", required=True, metavar="COMMAND")
    generate = dataset_commands.add_parser("generate", help="write COUNT graphs of FAMILY to a dataset directory")
    dataset_files.add_generate_arguments(generate).set_defaults(run=dataset_files.run_generate)
    label = dataset_commands.add_parser("label", help="label graphs with K simulated decisions each (Parquet)")
    labels_command.add_label_arguments(label).set_defaults(run=labels_command.run_label)
    zoo_command.add_zoo_arguments(dataset_commands.add_parser(
        "zoo", help="build real architectures (transformers, diffusers) into a dataset, with a coverage report"
    )).set_defaults(run=zoo_command.run_zoo)
    export = dataset_commands.add_parser("export-tpugraphs", help="a labelled dataset as TpuGraphs-layout .npz files")
    labels_command.add_export_arguments(export).set_defaults(run=labels_command.run_export)
    for name, run, what in (("info", run_info, "what a dataset directory holds (its manifest)"),
                            ("verify", run_verify, "check every shard's checksum (and every graph)")):
        sub = dataset_commands.add_parser(name, help=what)
        sub.add_argument("path", help="dataset directory")
        sub.set_defaults(run=run)
