"""Every ```python block of README.md and the site's pages runs, so a snippet cannot rot.

One test per page (its id is the page's path): the page's blocks run in order in one fresh
interpreter, as a reader runs them, in the page's own temporary directory (markdown_blocks.
workspace), so two pages that write data/rl or go.agent never meet. Budgets are scaled down
(markdown_blocks.scaled); a failure names the page and line of the block that stopped.
A block preceded by `<!-- not-tested: reason -->` is not run; a page whose blocks are all
marked is skipped with the reasons. A page whose code uses goenv.agents (or goenv.distributed,
whose workers run the agents) is skipped only when the agents extension is not built; one that
imports Stable-Baselines3 or Ray only when that library is not installed.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import markdown_blocks
from helpers import require_agents

LIBRARIES = {"stable_baselines3": "stable_baselines3", "sb3_contrib": "sb3_contrib", "ray": "ray"}
PAGES = {page: markdown_blocks.page_blocks(page, markdown_blocks.PYTHON_LANGUAGES)
         for page in markdown_blocks.pages()}
PAGES = {page: blocks for page, blocks in PAGES.items() if blocks}


def test_the_readme_and_the_site_have_python_blocks():
    assert "README.md" in PAGES or any(page.startswith("docs/") for page in PAGES)
    assert sum(len(blocks) for blocks in PAGES.values()) >= 6


def skip_unless_libraries_for(code: str) -> None:
    if "goenv.agents" in code or "goenv.distributed" in code:
        require_agents()
    for module, library in LIBRARIES.items():
        if re.search(rf"\b(?:import|from)\s+{module}\b", code) and importlib.util.find_spec(library) is None:
            pytest.skip(f"{library} is not installed")


def run_page(blocks: list[markdown_blocks.Block], directory: Path) -> subprocess.CompletedProcess:
    script = markdown_blocks.page_script([dataclasses.replace(b, code=markdown_blocks.scaled(b.code)) for b in blocks])
    env = {**os.environ, "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=900,
                          cwd=markdown_blocks.workspace(directory), env=env)


def check_page(page: str, blocks: list[markdown_blocks.Block], directory: Path) -> None:
    """Run the page's unmarked blocks in `directory`; skip when none is left or a library is missing."""
    runnable = [block for block in blocks if block.not_tested is None]
    if not runnable:
        pytest.skip("; ".join(f"{b.where}: {b.not_tested}" for b in blocks))
    skip_unless_libraries_for("\n".join(block.code for block in runnable))
    done = run_page(runnable, directory)
    assert done.returncode == 0, (f"{markdown_blocks.failing_block(done.stderr) or page}: the python block "
                                  f"failed\n{done.stderr[-4000:]}")


@pytest.mark.parametrize("page", list(PAGES))
def test_page_python_blocks_run(page, tmp_path):
    check_page(page, PAGES[page], tmp_path)
