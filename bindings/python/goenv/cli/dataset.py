"""`goenv dataset ...`: generate, label, zoo, export-tpugraphs, info and verify, each from the
module that owns its files."""

from __future__ import annotations

import argparse

from goenv import dataset_files
from goenv.datasets.zoo import command as zoo_command
from goenv.labels import command as labels_command


def add_dataset_commands(commands: argparse._SubParsersAction) -> None:
    dataset = commands.add_parser("dataset", help="graph datasets and labelled ones: sharded, checksummed, resumable")
    dataset_commands = dataset.add_subparsers(dest="dataset_command", required=True, metavar="COMMAND")
    generate = dataset_commands.add_parser("generate", help="write COUNT graphs of FAMILY to a dataset directory")
    dataset_files.add_generate_arguments(generate).set_defaults(run=dataset_files.run_generate)
    label = dataset_commands.add_parser("label", help="label graphs with K simulated decisions each (Parquet)")
    labels_command.add_label_arguments(label).set_defaults(run=labels_command.run_label)
    zoo_command.add_zoo_arguments(dataset_commands.add_parser(
        "zoo", help="build real architectures (transformers) into a dataset, with a coverage report"
    )).set_defaults(run=zoo_command.run_zoo)
    export = dataset_commands.add_parser("export-tpugraphs", help="a labelled dataset as TpuGraphs-layout .npz files")
    labels_command.add_export_arguments(export).set_defaults(run=labels_command.run_export)
    for name, run, what in (("info", labels_command.run_info, "what a dataset directory holds (its manifest)"),
                            ("verify", labels_command.run_verify, "check every shard's checksum (and every graph)")):
        sub = dataset_commands.add_parser(name, help=what)
        sub.add_argument("path", help="dataset directory")
        sub.set_defaults(run=run)
