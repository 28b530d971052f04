"""What the `goenv` commands share: env ids or graph files made into envs, tables, one-line
errors, new output files, progress bars on a terminal only."""

from __future__ import annotations

import os
import re
import sys
from typing import Sequence

import goenv
from goenv import text
from goenv.files import new_output_path
from goenv.envs import parse_gym_id

ID_HELP = "env id (e.g. placement-inception) or a graph file (.goenv/.json; see --task)"

MS = 1e3

GIB = float(2**30)

GRAPH_FILE_SUFFIXES = (".goenv", ".json")


def print_table(header: Sequence[str], rows: Sequence[Sequence[object]], align: str | None = None) -> None:
    print(text.table(header, rows, align))


def one_line(error: BaseException) -> str:
    """An error's message without the C++ source location goenv appends ("[core/x.cc:12]")."""
    message = str(error.args[0]) if error.args else type(error).__name__
    if isinstance(error, OSError) and error.strerror:
        message = f"{error.strerror}: {error.filename}" if error.filename else error.strerror
    return re.sub(r"\s*\[[^\]\s]+:\d+\]$", "", message.splitlines()[0] if message else message)


def is_graph_file(env_id: str) -> bool:
    """A graph file stands wherever an env id does: `goenv info model.goenv --task scheduling`."""
    return env_id.endswith(GRAPH_FILE_SUFFIXES) or os.sep in env_id or os.path.isfile(env_id)


def make_env(env_id: str, cluster: str | None, task: str | None = None) -> goenv.GraphEnv:
    """The env after reset, on `cluster` when one is named; `env_id` may be a graph file (its
    task: --task, default placement). An id names its own task: another --task is refused."""
    options = {"cluster": cluster} if cluster else {}
    if is_graph_file(env_id):
        env = goenv.make(task or "placement", graph=env_id, render_mode=None, **options)
    else:
        plain_id = parse_gym_id(env_id)[0]  # "goenv/placement-inception-v2" too
        own = plain_id.split("-", 1)[0]
        if task is not None and task != own:
            raise goenv.InvalidArgument(f"--task {task}: {env_id} is already a {own} env (--task is for graph "
                                        f"files); use {task}-{graph_name(plain_id)}")
        env = goenv.make(env_id, render_mode=None, **options)
    env.reset(seed=0)
    return env


def graph_name(env_id: str) -> str:
    return env_id.split("-", 1)[1]  # ids are <task>-<graph>; task names have no dash


def new_output(path: str, flag: str, overwrite: bool, folder_must_exist: bool = False) -> str:
    """A file already at `path` refused unless --overwrite: a command replaces nothing of the
    user's without the flag (checked before the work, nothing written)."""
    return new_output_path(path, flag, overwrite, flag="--overwrite", folder_must_exist=folder_must_exist)


def split_names(values: Sequence[str]) -> list[str]:
    """A list-valued flag's names, given space- or comma-separated (`--methods heft local-search`,
    `--methods heft,local-search`, or both), in order, each once."""
    names = [name.strip() for value in values for name in value.split(",")]
    return list(dict.fromkeys(name for name in names if name))


def bars() -> bool:
    """Progress bars on a terminal only: redirected to a file, their redraws are noise."""
    return sys.stderr.isatty()
