"""The `goenv` command line: list, info, baselines, render, train, bench, demo, dataset.

    goenv list
    goenv info placement-inception
    goenv render placement-inception --method heft -o out/inception.png
    goenv baselines placement-inception --methods heft metis --budget 500
    goenv train placement-inception --agent go --steps 2000 --log-dir runs/go
    goenv demo --out out
    goenv dataset generate random-layered --count 1000 --out data/layered
    goenv dataset label data/layered --out data/layered-labels -k 64

Errors from goenv (unknown ids, bad options) end the command with exit status 2
and one line on stderr, never a traceback. One module per command group: envs (list, info,
render, baselines), train, demo (and bench), dataset; common holds what they share.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Sequence

import goenv
import goenv._core as _core
from goenv.benchmark import command as benchmark_command
from goenv.cli.common import one_line
from goenv.cli.envs import add_env_commands
from goenv.cli.train import add_train_command
from goenv.cli.demo import add_bench_command, add_demo_command
from goenv.cli.dataset import add_dataset_commands


class _Parser(argparse.ArgumentParser):
    """A subcommand parser whose help may end with text made only when help is shown."""

    def __init__(self, *args, extra_help: Callable[[], str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.extra_help = extra_help

    def format_help(self) -> str:
        return super().format_help() + (self.extra_help() if self.extra_help else "")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="goenv", description="RL environments for ML-compiler graph optimization.")
    parser.add_argument("--version", action="version", version=f"goenv {goenv.__version__}")
    # Not required: `goenv` alone shows this help (main()).
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--cluster", help="cluster preset instead of the graph's default (goenv.clusters.list())")
    common.add_argument("--budget", type=int, default=1000, help="simulator calls for search baselines")
    common.add_argument("--seed", type=int, default=0, help="seed of randomized baselines")
    options = argparse.ArgumentParser(add_help=False, parents=[common])  # for commands that take an ID
    options.add_argument("--task", default=None, choices=_core.task_names(),
                         help="the task when ID is a graph file (.goenv or .json) (default: placement)")

    # In this order in `goenv --help`.
    add_env_commands(commands, options)
    add_demo_command(commands, common)
    add_bench_command(commands)
    add_train_command(commands, options)
    benchmark_command.add_arguments(commands.add_parser(
        "benchmark", help="score an algorithm on a named benchmark; validate results; the leaderboard"))
    add_dataset_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status (2 with a one-line message on errors)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:  # `goenv` alone: what it can do
        parser.print_help()
        return 0
    try:
        for name, check in (("budget", goenv.baselines.checked_budget), ("seed", goenv.baselines.checked_seed)):
            if getattr(args, name, None) is not None:  # every command's, before it does any work
                try:
                    check(getattr(args, name))
                except goenv.InvalidArgument as error:
                    raise goenv.InvalidArgument(f"--{error}") from error
        args.run(args)
    except BrokenPipeError:  # e.g. `goenv list | head`: the reader left; stay quiet
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's status for SIGINT (outputs are atomic)
        print("goenv: interrupted", file=sys.stderr)
        return 130
    except (goenv.Error, KeyError, OSError) as error:
        print(f"goenv: error: {one_line(error)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
