"""Every ```python block of README.md runs, so a snippet can no longer rot.

- Blocks are grouped by their README section (the nearest heading above them); a
  section's blocks run in order in one fresh interpreter, as a reader runs them (a
  later block may use an earlier one's names), in a temporary directory. A traceback
  names the README's own line numbers.
- Budgets are scaled down, here and only here (the README shows the real ones): the
  number given to a keyword in SCALED_KEYWORDS (`total_steps=20_000`) and the step count
  of `.train(env, 256)` become at most BUDGET.
- A block preceded by `<!-- not-tested: reason -->` is not run; the reason is shown as
  the skip reason. Keep such exceptions to what CI cannot do (a cluster address).
- A section whose code uses goenv.agents (or goenv.distributed, whose workers run the
  agents) is skipped only when the agents extension is not built (helpers.require_agents);
  one that uses Stable-Baselines3 or Ray only when that library is not installed.
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

from helpers import require_agents

README = Path(__file__).resolve().parents[2] / "README.md"
BUDGET = 32
SCALED_KEYWORDS = ("total_steps", "total_timesteps", "steps", "budget", "local_search_budget", "imitation_steps")
NOT_TESTED = re.compile(r"<!--\s*not-tested:\s*(.+?)\s*-->")
LIBRARIES = {"stable_baselines3": "stable_baselines3", "sb3_contrib": "sb3_contrib", "ray": "ray"}


@dataclasses.dataclass
class Block:
    section: str
    line: int  # README line of the block's first code line
    code: str
    not_tested: str | None  # the reason, when marked


def python_blocks(text: str) -> list[Block]:
    blocks, section, fence, previous = [], "(top)", None, ""
    for number, line in enumerate(text.splitlines(), start=1):
        if fence is not None:
            if line.strip().startswith("```"):
                blocks.append(Block(section, fence[0], "\n".join(fence[1]), fence[2]))
                fence = None
            else:
                fence[1].append(line)
            continue
        if line.startswith("```python"):
            marked = NOT_TESTED.search(previous)
            fence = (number + 1, [], marked.group(1) if marked else None)
        elif line.startswith("#"):
            section = line.lstrip("#").strip()
        if line.strip():
            previous = line
    return blocks


def scaled(code: str) -> str:
    """The same code with every training budget at most BUDGET."""
    def smaller(match: re.Match) -> str:
        value = int(match.group(2).replace("_", ""))
        return f"{match.group(1)}{min(value, BUDGET)}"

    keywords = "|".join(SCALED_KEYWORDS)
    code = re.sub(rf"(\b(?:{keywords})\s*=\s*)(\d[\d_]*)\b", smaller, code)
    return re.sub(r"(\.train\(\s*[\w\"'\[\], -]+?,\s*)(\d[\d_]*)(?=\s*[,)])", smaller, code)


def runner(blocks: list[Block]) -> str:
    """One script that runs the blocks in order in one namespace, each compiled with its
    README line numbers."""
    parts = [repr((block.line, block.code)) for block in blocks]
    return ("namespace = {'__name__': '__main__'}\n"
            f"for line, code in [{', '.join(parts)}]:\n"
            "    exec(compile('\\n' * (line - 1) + code, 'README.md', 'exec'), namespace)\n")


SECTIONS: dict[str, list[Block]] = {}
for _block in python_blocks(README.read_text()):
    SECTIONS.setdefault(_block.section, []).append(_block)


def test_readme_has_python_blocks_and_the_helpers_work():
    assert sum(len(blocks) for blocks in SECTIONS.values()) >= 6
    text = ("# A\n```python\nx = 1\n```\n## B\n<!-- not-tested: needs a cluster -->\n```python\nray.init('x')\n```\n"
            "```bash\nls\n```\n```python\nagent.train(env, 20_000); a.train([e], total_steps=512, seed=0)\n```\n")
    blocks = python_blocks(text)
    assert [(b.section, b.line, b.not_tested) for b in blocks] == [("A", 3, None), ("B", 8, "needs a cluster"),
                                                                    ("B", 14, None)]
    assert scaled(blocks[2].code) == f"agent.train(env, {BUDGET}); a.train([e], total_steps={BUDGET}, seed=0)"
    assert scaled("optimize(env, samples=16)") == "optimize(env, samples=16)"


@pytest.mark.parametrize("section", list(SECTIONS))
def test_readme_section_runs(section, tmp_path):
    blocks = [block for block in SECTIONS[section] if block.not_tested is None]
    if not blocks:
        pytest.skip("; ".join(f"README line {b.line}: {b.not_tested}" for b in SECTIONS[section]))
    code = "\n".join(block.code for block in blocks)
    if "goenv.agents" in code or "goenv.distributed" in code:
        require_agents()
    for module, library in LIBRARIES.items():
        if re.search(rf"\b(?:import|from)\s+{module}\b", code) and importlib.util.find_spec(library) is None:
            pytest.skip(f"{library} is not installed")
    script = runner([dataclasses.replace(block, code=scaled(block.code)) for block in blocks])
    env = {**os.environ, "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=900, cwd=tmp_path,
                          env=env)
    assert done.returncode == 0, f"README section {section!r}:\n{done.stderr[-4000:]}"
