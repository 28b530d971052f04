"""Every command shown in a console/bash/sh block of README.md and the site's pages is checked.

One test per block (its id is PAGE:LINE). A block's commands run in order, as a reader types
them, in the block's own temporary copy of the examples, experiments, benchmark scripts and pages
(markdown_blocks.workspace), with budget flags (--steps, --budget, --total-steps ...) scaled
down (markdown_blocks.scaled_argv):
- `goenv ...` (also `.venv/bin/goenv`, `python -m goenv`) runs this interpreter's goenv;
  `python examples/...`, `python experiments/...` and `python tests/benchmarks/...` run with
  this interpreter;
- `make X` is not run: X must be a target of the Makefile;
- installs and builds (pip install, apt-get, git clone, python -m venv, python -m build,
  sourcing an activate script) are recognised and not run;
- anything else fails, naming the line: run it as one of the above or mark the block.
A block preceded by `<!-- not-tested: reason -->` is skipped with that reason; a command that
needs Ray or Stable-Baselines3 is skipped when the library is missing, one that trains an
agent when the agents extension is not built.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import markdown_blocks
from helpers import require_agents

BLOCKS = {block.where: block
          for page in markdown_blocks.pages()
          for block in markdown_blocks.page_blocks(page, markdown_blocks.SHELL_LANGUAGES)}
PROGRAMS = {"goenv": [sys.executable, "-m", "goenv"], "python": [sys.executable]}


def test_the_pages_show_commands():
    runs = 0
    for block in BLOCKS.values():
        try:
            runs += sum(step.kind == "run" for step in markdown_blocks.shell_steps(block))
        except markdown_blocks.UnknownCommand:
            pass  # that block's own test fails and says why
    assert runs >= 3


def skip_unless_libraries_for(steps: list[markdown_blocks.Step]) -> None:
    for step in steps:
        if step.kind != "run":
            continue
        library = markdown_blocks.needed_library(step.text)
        if library and importlib.util.find_spec(library) is None:
            pytest.skip(f"{step.where}: {library} is not installed")
        if step.argv[:2] == ("goenv", "train") or "--agent" in step.argv:
            require_agents()


def check_block(block: markdown_blocks.Block, directory: Path) -> None:
    """Check the block's commands in order in `directory`; skip when marked or a library is missing."""
    if block.not_tested is not None:
        pytest.skip(f"{block.where}: {block.not_tested}")
    try:
        steps = markdown_blocks.shell_steps(block)
    except markdown_blocks.UnknownCommand as error:
        pytest.fail(str(error))
    skip_unless_libraries_for(steps)
    targets = markdown_blocks.makefile_targets()
    markdown_blocks.workspace(directory)
    env = {**os.environ, "MPLBACKEND": "Agg"}
    for step in steps:
        if step.kind == "make":
            named = [word for word in step.argv[1:] if "=" not in word and not word.startswith("-")]
            unknown = [target for target in named if target not in targets]
            assert not unknown, f"{step.where}: {step.text!r}: no Makefile target {', '.join(unknown)}"
        elif step.kind == "run":
            argv = PROGRAMS[step.argv[0]] + markdown_blocks.scaled_argv(list(step.argv[1:]))
            done = subprocess.run(argv, cwd=directory, env={**env, **dict(step.env)}, capture_output=True,
                                  text=True, timeout=600)
            assert done.returncode == 0, (f"{step.where}: {step.text!r} exited with {done.returncode}\n"
                                          f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")


@pytest.mark.parametrize("where", list(BLOCKS))
def test_shell_block_commands(where, tmp_path):
    check_block(BLOCKS[where], tmp_path)
